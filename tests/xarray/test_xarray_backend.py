"""engine="zarrdask" and the Dataset writer, against xarray's own zarr engine.

Round trips in both directions (xarray writes / zarrdask reads, zarrdask writes /
xarray reads) on a climate-style dataset, the xarray conformance cases, shard-shaped
dask chunks on read, and misaligned dask writes (append, region) on a distributed
cluster with worker processes.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from xarray.testing import assert_identical

import zarrdask
from zarrdask.errors import ContainsNodeError
from zarrdask.xarray_backend import ZarrdaskBackendEntrypoint, to_zarr
from zarrdask.xarray_backend.store import ZarrdaskBackendArray, is_small

from _util import corpus_dir

ENGINE = ZarrdaskBackendEntrypoint


def climate_dataset(ntime: int = 10, nlat: int = 6, nlon: int = 8) -> xr.Dataset:
    """time/lat/lon float32 temperature packed to int16, NaN gaps, a string coordinate."""
    rng = np.random.default_rng(42)
    temperature = rng.normal(280.0, 8.0, (ntime, nlat, nlon)).astype("float32")
    temperature[0, 0, :3] = np.nan
    ds = xr.Dataset(
        {
            "temperature": (
                ("time", "lat", "lon"),
                temperature,
                {"units": "K", "standard_name": "air_temperature", "long_name": "Air temperature"},
            ),
            "precip": (("time", "lat", "lon"), rng.gamma(1.0, 2.0, (ntime, nlat, nlon))),
        },
        coords={
            "time": pd.date_range("2000-01-01", periods=ntime, freq="D"),
            "lat": ("lat", np.linspace(-75.0, 75.0, nlat), {"units": "degrees_north"}),
            "lon": ("lon", np.linspace(0.0, 315.0, nlon), {"units": "degrees_east"}),
            "station": ("lon", [f"st-{i}" for i in range(nlon)]),
        },
        attrs={"title": "synthetic climate test data", "Conventions": "CF-1.8"},
    )
    ds["precip"].values[1, 2, 3] = np.nan
    ds["temperature"].encoding = {
        "dtype": "int16",
        "scale_factor": 0.01,
        "add_offset": 273.15,
        "_FillValue": -32768,
    }
    return ds


def open_zarrdask(path: Path | str, **kwargs: object) -> xr.Dataset:
    return xr.open_dataset(path, engine=ENGINE, **kwargs)


def open_xarray(path: Path | str, **kwargs: object) -> xr.Dataset:
    return xr.open_dataset(path, engine="zarr", **kwargs)


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def zarr_format(request: pytest.FixtureRequest) -> int:
    return request.param


# -- round trips against xarray's zarr engine ---------------------------------------------


def test_xarray_writes_zarrdask_reads(tmp_path: Path, zarr_format: int) -> None:
    ds = climate_dataset()
    ds.to_zarr(tmp_path / "x.zarr", zarr_format=zarr_format)
    with open_xarray(tmp_path / "x.zarr") as expected, open_zarrdask(tmp_path / "x.zarr") as actual:
        assert_identical(expected, actual)
        enc = actual["temperature"].encoding
        assert enc["dtype"] == np.dtype("int16")
        assert (enc["scale_factor"], enc["add_offset"], enc["_FillValue"]) == (0.01, 273.15, -32768)
        assert np.isnan(actual["temperature"][0, 0, 0])
        assert actual["time"].dtype.kind == "M"


@pytest.mark.parametrize("chunked", [False, True], ids=["numpy", "dask"])
def test_zarrdask_writes_xarray_reads(tmp_path: Path, zarr_format: int, chunked: bool) -> None:
    ds = climate_dataset()
    if chunked:
        ds = ds.chunk({"time": 3, "lat": 4})
    to_zarr(ds, tmp_path / "z.zarr", zarr_format=zarr_format)
    ds.to_zarr(tmp_path / "x.zarr", zarr_format=zarr_format)
    with (
        open_xarray(tmp_path / "x.zarr") as reference,
        open_xarray(tmp_path / "z.zarr") as by_xarray,
        open_zarrdask(tmp_path / "z.zarr") as by_zarrdask,
    ):
        assert_identical(reference, by_xarray)
        assert_identical(reference, by_zarrdask)
        assert by_xarray["temperature"].encoding["dtype"] == np.dtype("int16")


def test_on_disk_layout_matches_xarray_conventions(tmp_path: Path, zarr_format: int) -> None:
    to_zarr(climate_dataset(), tmp_path / "z.zarr", zarr_format=zarr_format)
    group = zarrdask.open_group(tmp_path / "z.zarr")
    temperature = group["temperature"]
    if zarr_format == 3:
        assert temperature.dimension_names == ("time", "lat", "lon")
        assert "_ARRAY_DIMENSIONS" not in temperature.attrs
        assert "consolidated_metadata" in json.loads((tmp_path / "z.zarr" / "zarr.json").read_text())
    else:
        assert temperature.attrs["_ARRAY_DIMENSIONS"] == ["time", "lat", "lon"]
        assert (tmp_path / "z.zarr" / ".zmetadata").exists()
    assert temperature.dtype == np.dtype("int16")
    assert temperature.attrs["scale_factor"] == 0.01


def test_accessor_and_roundtrip_of_own_output(tmp_path: Path) -> None:
    ds = climate_dataset()
    ds.zarrdask.to_zarr(tmp_path / "a.zarr")
    with open_zarrdask(tmp_path / "a.zarr") as first:
        first.zarrdask.to_zarr(tmp_path / "b.zarr")
        with open_zarrdask(tmp_path / "b.zarr") as second:
            assert_identical(first, second)
            assert second["temperature"].encoding["chunks"] == first["temperature"].encoding["chunks"]


# -- the conformance corpus -------------------------------------------------------------------


@pytest.mark.parametrize("case_id", ["xarray-climate-v2", "xarray-climate-v3"])
def test_conformance_decoded(case_id: str) -> None:
    root = corpus_dir()
    case = next(c for c in json.loads((root / "manifest.json").read_text())["cases"] if c["id"] == case_id)
    path = root / case["path"]
    with open_zarrdask(path) as ds, open_xarray(path) as reference:
        assert_identical(reference, ds)
        assert ds.attrs == case["expect"]["groups"][""]["attributes"]
        for name, expected in case["expect"]["decoded"].items():
            want = np.load(root / expected["npy"], allow_pickle=False)
            got = ds[name].values
            if name == "time":
                np.testing.assert_array_equal(got.astype("datetime64[ns]"), want)
            else:
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.nanmax(np.abs(want)))
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


# -- dimensions ---------------------------------------------------------------------------------


def test_unnamed_v3_dimensions_open_with_a_warning(tmp_path: Path) -> None:
    group = zarrdask.create_group(tmp_path / "u.zarr")
    group.create_array("a", shape=(3, 4), dtype="int32", chunks=(3, 4))[...] = np.arange(12).reshape(3, 4)
    with pytest.warns(UserWarning, match="no dimension names"):
        ds = open_zarrdask(tmp_path / "u.zarr")
    assert ds["a"].dims == ("dim_0", "dim_1")
    np.testing.assert_array_equal(ds["a"].values, np.arange(12).reshape(3, 4))


def test_v2_dimension_attribute_is_hidden_and_nczarr_dims_read(tmp_path: Path) -> None:
    group = zarrdask.create_group(tmp_path / "n.zarr", zarr_format=2)
    a = group.create_array("a", shape=(2, 3), dtype="float64", chunks=(2, 3), zarr_format=2)
    a[...] = np.ones((2, 3))
    a.attrs.put({"_nczarr_array": {"dimrefs": ["/y", "/x"]}, "units": "m"})
    with open_zarrdask(tmp_path / "n.zarr") as ds:
        assert ds["a"].dims == ("y", "x")
        assert ds["a"].attrs == {"units": "m"}


# -- laziness and shard-shaped dask chunks --------------------------------------------------------


def test_chunks_empty_gives_one_task_per_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = climate_dataset(ntime=20, nlat=12, nlon=16)
    encoding = {"precip": {"chunks": (2, 3, 4), "shards": (8, 12, 16)}}
    to_zarr(ds, tmp_path / "s.zarr", encoding=encoding)
    calls: list[object] = []
    original = ZarrdaskBackendArray._getitem
    monkeypatch.setattr(
        ZarrdaskBackendArray, "_getitem", lambda self, key: calls.append(self.get_array().path) or original(self, key)
    )
    with open_zarrdask(tmp_path / "s.zarr", chunks={}) as opened:
        precip = opened["precip"]
        assert precip.encoding["preferred_chunks"] == {"time": 8, "lat": 12, "lon": 16}
        assert precip.encoding["chunks"] == (2, 3, 4)
        assert precip.encoding["shards"] == (8, 12, 16)
        assert precip.chunks == ((8, 8, 4), (12,), (16,))
        calls.clear()
        precip.mean("time").compute(scheduler="sync")
    assert calls.count("precip") == 3  # one read per shard, not one per inner chunk
    with open_xarray(tmp_path / "s.zarr") as reference, open_zarrdask(tmp_path / "s.zarr", chunks={}) as opened:
        assert_identical(reference, opened.load())


def test_lazy_outer_and_vectorized_indexing(tmp_path: Path) -> None:
    ds = climate_dataset()
    to_zarr(ds, tmp_path / "i.zarr")
    with open_zarrdask(tmp_path / "i.zarr") as lazy, open_xarray(tmp_path / "i.zarr") as ref:
        outer = {"time": [0, 3, 7], "lon": [1, 5]}
        assert_identical(lazy.isel(outer), ref.isel(outer))
        pts = {"lat": xr.DataArray([0, 2, 5], dims="p"), "lon": xr.DataArray([1, 1, 7], dims="p")}
        assert_identical(lazy.isel(pts), ref.isel(pts))


# -- modes, groups, DataTree --------------------------------------------------------------------


def test_modes(tmp_path: Path) -> None:
    ds = climate_dataset()
    target = tmp_path / "m.zarr"
    to_zarr(ds, target)
    with pytest.raises(ContainsNodeError):
        to_zarr(ds, target)  # default mode "w-"
    to_zarr(ds.isel(time=slice(0, 4)), target, mode="w")
    with pytest.raises(ValueError, match="non-pre-existing variables"):
        to_zarr(ds[["temperature"]].rename(temperature="t2"), target, mode="r+")
    to_zarr(ds[["precip"]].rename(precip="p2").isel(time=slice(0, 4)), target, mode="a")
    with open_zarrdask(target) as back:
        assert set(back.data_vars) == {"temperature", "precip", "p2"}
        assert back.sizes["time"] == 4


def test_append_and_region_auto_in_memory(tmp_path: Path) -> None:
    ds = climate_dataset(ntime=12)
    target = tmp_path / "ar.zarr"
    to_zarr(ds.isel(time=slice(0, 7)), target)
    to_zarr(ds.isel(time=slice(7, None)), target, append_dim="time")
    patch = ds.isel(time=slice(3, 9)).copy(deep=True)
    patch["precip"][:] = -1.0
    to_zarr(patch[["precip"]], target, region="auto", mode="r+")
    expected = ds.copy(deep=True)
    expected["precip"][3:9] = -1.0
    with open_xarray(target) as by_xarray, open_zarrdask(target) as by_zarrdask:
        assert_identical(by_xarray, by_zarrdask)
        xr.testing.assert_allclose(by_zarrdask.load(), expected, rtol=0, atol=0.006)


def test_compute_false_returns_delayed(tmp_path: Path) -> None:
    ds = climate_dataset().chunk({"time": 4})
    delayed = to_zarr(ds, tmp_path / "d.zarr", compute=False)
    with open_zarrdask(tmp_path / "d.zarr") as before:
        assert before["precip"].isnull().all()
    delayed.compute()
    with open_zarrdask(tmp_path / "d.zarr") as after, open_xarray(tmp_path / "d.zarr") as ref:
        assert_identical(ref, after)
        assert not after["precip"].isnull().all()


def test_group_and_datatree_roundtrip(tmp_path: Path) -> None:
    ds = climate_dataset()
    tree = xr.DataTree.from_dict({"/": ds[["precip"]], "/child": ds[["temperature"]], "/child/leaf": ds.isel(lat=0)})
    tree.zarrdask.to_zarr(tmp_path / "t.zarr")
    with xr.open_datatree(tmp_path / "t.zarr", engine=ENGINE) as back, xr.open_datatree(tmp_path / "t.zarr", engine="zarr") as ref:
        xr.testing.assert_identical(back, ref)
    with open_zarrdask(tmp_path / "t.zarr", group="child") as child, open_xarray(tmp_path / "t.zarr", group="child") as ref_child:
        assert_identical(child, ref_child)


def test_guess_can_open(tmp_path: Path) -> None:
    to_zarr(climate_dataset(), tmp_path / "g.zarr")
    entry = ZarrdaskBackendEntrypoint()
    assert entry.guess_can_open(tmp_path / "g.zarr")
    assert not entry.guess_can_open(tmp_path)
    assert not entry.guess_can_open("s3://bucket/g.zarr")
    assert "zarrdask" in xr.backends.list_engines()


def test_engine_class_takes_decode_cf(tmp_path: Path) -> None:
    """``engine=<the class>`` needs ``open_dataset_parameters`` (xarray only detects them
    for engines loaded by name); they must match ``open_dataset``'s signature."""
    from xarray.backends.plugins import detect_parameters

    assert ZarrdaskBackendEntrypoint.open_dataset_parameters == detect_parameters(
        ZarrdaskBackendEntrypoint.open_dataset)
    to_zarr(climate_dataset(), tmp_path / "c.zarr")
    raw = open_zarrdask(tmp_path / "c.zarr", decode_cf=False)
    assert raw["temperature"].dtype == np.int16
    assert_identical(raw, xr.open_dataset(tmp_path / "c.zarr", engine="zarrdask", decode_cf=False))


# -- misaligned dask chunks on a distributed cluster -------------------------------------------


@pytest.fixture(scope="module")
def process_client():
    import distributed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=2, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        yield client


@pytest.mark.distributed
def test_misaligned_dask_writes_on_processes(tmp_path: Path, process_client: object, zarr_format: int) -> None:
    ds = climate_dataset(ntime=33, nlat=12, nlon=16)[["precip"]]
    encoding = {"precip": {"chunks": (4, 4, 4)}}
    if zarr_format == 3:
        encoding["precip"]["shards"] = (8, 12, 16)
    target = tmp_path / "dist.zarr"
    first, second = ds.isel(time=slice(0, 20)), ds.isel(time=slice(20, None))
    misaligned = {"time": 7, "lat": 5, "lon": 9}
    with pytest.raises(ValueError, match="overlap multiple Dask chunks|would overlap"):
        first.chunk(misaligned).to_zarr(tmp_path / "xarray.zarr", encoding=encoding, zarr_format=zarr_format)
    to_zarr(first.chunk(misaligned), target, encoding=encoding, zarr_format=zarr_format)
    to_zarr(second.chunk({"time": 5, "lat": 7, "lon": 3}), target, append_dim="time")
    patch = xr.full_like(ds.isel(time=slice(5, 17)), -1.0).drop_vars(["time", "lat", "lon", "station"])
    to_zarr(patch.chunk({"time": 3, "lat": 7, "lon": 5}), target, region={"time": slice(5, 17)})
    expected = ds.copy(deep=True).load()
    expected["precip"][5:17] = -1.0
    with open_zarrdask(target) as by_zarrdask, open_xarray(target) as by_xarray:
        assert_identical(expected, by_zarrdask.load())
        assert_identical(expected, by_xarray.load())


def test_store_load_maps_xarrays_none_name_back(tmp_path):
    """An array named ``__values__`` (xarray's name for a None-named variable) loads as
    None, as through ``AbstractDataStore.load``; other names load as they are."""
    from zarrdask.xarray_backend.store import ZarrdaskDataStore

    g = zarrdask.open_group(tmp_path / "g.zarr", mode="w")
    for name in ("__values__", "t"):  # (v3 reserves "__" names: created as xarray's writer does)
        g.create_array(name, shape=(3,), chunks=(3,), dtype="f4", dimension_names=["x"],
                       allow_reserved_names=True)[...] = 1.0
    variables, attrs = ZarrdaskDataStore(zarrdask.open_group(tmp_path / "g.zarr")).load()
    assert sorted(variables, key=str) == [None, "t"] and dict(attrs) == {}
    g2 = zarrdask.open_group(tmp_path / "h.zarr", mode="w")
    g2.create_array("t", shape=(3,), chunks=(3,), dtype="f4", dimension_names=["x"])[...] = 2.0
    variables, _ = ZarrdaskDataStore(zarrdask.open_group(tmp_path / "h.zarr")).load()
    assert list(variables) == ["t"] and variables["t"].values.tolist() == [2.0] * 3


def test_small_one_chunk_arrays_are_read_once_per_open(tmp_path, monkeypatch):
    """Opening reads a time coordinate's first, last and all values; its chunk is
    fetched once. Reads give independent copies; big or multi-chunk arrays are not kept."""
    times = pd.date_range("2000-01-01", periods=24, freq="D")
    ds = xr.Dataset(
        {"v": (("time", "x"), np.arange(24 * 3, dtype="f4").reshape(24, 3))},
        coords={"time": times, "x": [10.0, 20.0, 30.0]},
    )
    to_zarr(ds, tmp_path / "d.zarr", encoding={"v": {"chunks": (6, 3)}})
    from zarrdask.storage.local import LocalStore

    fetched: list[str] = []
    get, get_ranges = LocalStore._get, LocalStore._get_ranges
    monkeypatch.setattr(LocalStore, "_get", lambda self, key: fetched.append(key) or get(self, key))
    monkeypatch.setattr(LocalStore, "_get_ranges",
                        lambda self, reqs: fetched.extend(k for k, _ in reqs) or get_ranges(self, reqs))
    opened = xr.open_dataset(tmp_path / "d.zarr", engine="zarrdask")
    assert_identical(opened.load(), xr.open_dataset(tmp_path / "d.zarr", engine="zarr").load())
    assert fetched.count("time/c/0") == 1 and fetched.count("x/c/0") == 1
    assert sum(k.startswith("v/") for k in fetched) == 4  # v: 4 chunks, each read once

    backend = ZarrdaskBackendArray(zarrdask.open_array(tmp_path / "d.zarr", path="x"))
    key = xr.core.indexing.BasicIndexer((slice(None),))
    first = backend[key]
    first[:] = -1  # a caller writing to its result changes nothing for the next read
    assert backend[key].tolist() == [10.0, 20.0, 30.0]
    assert is_small(zarrdask.open_array(tmp_path / "d.zarr", path="v")) is False
