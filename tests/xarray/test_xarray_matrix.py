"""A differential matrix against ``engine="zarr"``, both directions, by generated datasets.

Realistic datasets are drawn (hypothesis) from the features climate data has: standard
and cftime calendars (noleap, 360_day, julian), NaT, string and bytes coordinates, bounds
variables, packed integers with ``_FillValue``/``scale_factor``/``add_offset``,
``_Unsigned``, booleans, timedeltas, scalar and non-dimension coordinates, zero-length
dimensions; as Datasets and as DataTrees of groups; Zarr v2 and v3.

* xarray writes (``to_zarr``), and ``engine="zarrdask"`` reads identically to
  ``engine="zarr"``;
* zarrdask writes from dask chunks that cut its chunks and shards, and ``engine="zarr"``
  reads it identically to the copy xarray wrote.

And real model output shipped in a PyPI package: the example files of ``eofs`` (NCEP
geopotential height, HadISST anomalies), converted with xarray, in both directions.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrdask.xarray_backend.backend import ZarrdaskBackendEntrypoint

pytest.importorskip("zarr")
cftime = pytest.importorskip("cftime")

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@st.composite
def datasets(draw) -> xr.Dataset:
    n_time = draw(st.sampled_from([0, 1, 5, 12]))
    calendar = draw(st.sampled_from(["standard", "noleap", "360_day", "julian"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    if calendar == "standard":
        time = pd.date_range("2000-01-01", periods=n_time, freq="D").values
        if n_time > 2 and draw(st.booleans()):
            time = time.copy()
            time[1] = np.datetime64("NaT")
    else:
        time = xr.date_range("2000-01-01", periods=n_time, freq="D", calendar=calendar, use_cftime=True).values
    lat = np.linspace(-60.0, 60.0, 4)
    stations = np.array(["alpha", "beta", "gamma"], dtype=object)
    data_vars: dict = {
        "t2m": (("time", "lat"), rng.normal(280.0, 5.0, (n_time, 4)).astype("float32"),
                {"units": "K", "long_name": "2 m temperature"}),
    }
    coords: dict = {"time": ("time", time), "lat": ("lat", lat, {"units": "degrees_north"})}
    encoding: dict = {}
    if draw(st.booleans()):
        coords["station"] = ("station", stations if draw(st.booleans()) else stations.astype("S5"))
        data_vars["count"] = (("station",), np.array([3, 0, 7], dtype="int32"))
    if draw(st.booleans()):
        data_vars["time_bnds"] = (("time", "bnds"), np.stack([time, time], axis=1) if n_time else
                                  np.empty((0, 2), dtype=time.dtype))
        coords["time"] = ("time", time, {"bounds": "time_bnds"})
    if draw(st.booleans()):  # packed integers
        precip = rng.gamma(2.0, 2.0, (n_time, 4))
        if precip.size:
            precip[0, 0] = np.nan
        data_vars["precip"] = (("time", "lat"), precip)
        encoding["precip"] = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 10.0, "_FillValue": -32767}
    if draw(st.booleans()):  # _Unsigned: uint8 stored as int8
        data_vars["flags"] = (("lat",), np.array([0, 127, 128, 255], dtype="uint8"))
        encoding["flags"] = {"dtype": "int8", "_Unsigned": "true", "_FillValue": np.int8(-1)}
    if draw(st.booleans()):
        data_vars["mask"] = (("lat",), np.array([True, False, True, True]))
    if draw(st.booleans()):
        data_vars["lag"] = (("lat",), np.array([0, 1, 2, 3], dtype="timedelta64[h]").astype("timedelta64[ns]"))
    if draw(st.booleans()):  # scalar and non-dimension coordinates
        coords["height"] = ((), 2.0, {"units": "m"})
        coords["lat_label"] = ("lat", np.array(["S", "s", "n", "N"], dtype=object))
    ds = xr.Dataset(data_vars, coords=coords, attrs={"title": "generated", "history": "made by a test"})
    for name, enc in encoding.items():
        ds[name].encoding.update(enc)
    return ds


def _dask_chunks(draw, ds: xr.Dataset) -> dict:
    """Dask chunks that cut the chunks zarrdask will write."""
    return {dim: draw(st.integers(1, max(1, size))) for dim, size in ds.sizes.items()}


def _open(path: str, engine: str, **kwargs) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if engine == "zarr":
            return xr.open_dataset(path, engine="zarr", consolidated=None, **kwargs).load()
        return xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint, **kwargs).load()


def _xarray_writes(ds: xr.Dataset, path: str, zarr_format: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", zarr_format=zarr_format)


@SETTINGS
@given(ds=datasets(), zarr_format=st.sampled_from([2, 3]), data=st.data())
def test_xarray_writes_and_zarrdask_reads_as_engine_zarr(tmp_path_factory, ds, zarr_format, data):
    path = str(tmp_path_factory.mktemp("x") / "ds.zarr")
    _xarray_writes(ds, path, zarr_format)
    xr.testing.assert_identical(_open(path, "zarrdask"), _open(path, "zarr"))
    xr.testing.assert_identical(_open(path, "zarrdask", decode_times=False), _open(path, "zarr", decode_times=False))
    lazy = xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint, chunks={})
    xr.testing.assert_identical(lazy.load(), _open(path, "zarr"))


@SETTINGS
@given(ds=datasets(), zarr_format=st.sampled_from([2, 3]), data=st.data())
def test_zarrdask_writes_misaligned_and_engine_zarr_reads(tmp_path_factory, ds, zarr_format, data):
    root = tmp_path_factory.mktemp("z")
    ours, theirs = str(root / "ours.zarr"), str(root / "theirs.zarr")
    _xarray_writes(ds, theirs, zarr_format)
    chunked = ds.chunk(_dask_chunks(data.draw, ds))
    encoding = {}
    for name, var in ds.data_vars.items():
        if var.ndim and zarr_format == 3 and var.dtype.kind in "fiu":
            chunks = tuple(max(1, min(2, n)) for n in var.shape)
            # (an encoding= entry replaces the variable's encoding, as in xarray: keep it)
            encoding[name] = {**var.encoding, "chunks": chunks, "shards": tuple(2 * c for c in chunks)}
    chunked.zarrdask.to_zarr(ours, mode="w", zarr_format=zarr_format, encoding=encoding)
    xr.testing.assert_identical(_open(ours, "zarr"), _open(theirs, "zarr"))
    xr.testing.assert_identical(_open(ours, "zarrdask"), _open(theirs, "zarr"))


@SETTINGS
@given(ds=datasets(), zarr_format=st.sampled_from([2, 3]))
def test_datatrees_both_directions(tmp_path_factory, ds, zarr_format):
    tree = xr.DataTree.from_dict({"/": xr.Dataset(attrs={"title": "tree"}), "/surface": ds,
                                  "/surface/sites": xr.Dataset({"u": (("site",), np.arange(3.0))},
                                                               coords={"site": ["a", "b", "c"]})})
    root = tmp_path_factory.mktemp("t")
    ours, theirs = str(root / "ours.zarr"), str(root / "theirs.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(theirs, mode="w", zarr_format=zarr_format)
        reference = xr.open_datatree(theirs, engine="zarr").load()
    tree.chunk({"time": 2}).zarrdask.to_zarr(ours, mode="w", zarr_format=zarr_format)
    xr.testing.assert_identical(xr.open_datatree(theirs, engine=ZarrdaskBackendEntrypoint).load(), reference)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.testing.assert_identical(xr.open_datatree(ours, engine="zarr").load(), reference)


# -- real model output -------------------------------------------------------------------
eofs_examples = pytest.importorskip("eofs.examples")


@pytest.mark.parametrize("name", ["hgt_djf.nc", "sst_ndjfm_anom.nc"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_real_model_output_both_directions(tmp_path, name, zarr_format):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        original = xr.open_dataset(eofs_examples.example_data_path(name), engine="scipy").load()
    theirs, ours = str(tmp_path / "theirs.zarr"), str(tmp_path / "ours.zarr")
    _xarray_writes(original, theirs, zarr_format)
    reference = _open(theirs, "zarr")
    xr.testing.assert_identical(_open(theirs, "zarrdask"), reference)
    encoding = {}
    if zarr_format == 3:
        var = next(v for v in original.data_vars if original[v].ndim >= 3)
        chunks = tuple(min(8, n) for n in original[var].shape)
        encoding[var] = {**original[var].encoding, "chunks": chunks, "shards": tuple(min(2 * c, n) if n > c else c
                                                           for c, n in zip(chunks, original[var].shape))}
    original.chunk({"time": 7, "latitude": 5}).zarrdask.to_zarr(ours, mode="w", zarr_format=zarr_format,
                                                                encoding=encoding)
    xr.testing.assert_identical(_open(ours, "zarr"), reference)
    xr.testing.assert_identical(_open(ours, "zarrdask"), reference)
    xr.testing.assert_identical(reference, original)
