"""Every keyword of xarray's zarr engine is accepted by ``engine="zarrdask"`` and the
writer, with the same meaning. The signatures are compared with xarray's, so a keyword a
new xarray adds fails here until zarrdask supports it."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import xarray as xr
from xarray.backends.zarr import ZarrBackendEntrypoint

import zarrdask
from zarrdask.errors import InvalidStoreError, ReadOnlyError
from zarrdask.xarray_backend.backend import ZarrdaskBackendEntrypoint
from zarrdask.xarray_backend.store import ZarrdaskDataStore
from zarrdask.xarray_backend.writer import datatree_to_zarr, to_zarr

pytest.importorskip("zarr")


def _params(fn, drop=("self",)):
    return {k: p for k, p in inspect.signature(fn).parameters.items() if k not in drop}


def _same_params(ours, theirs, what):
    def positional(params):
        return [k for k, p in params.items() if p.kind is not p.KEYWORD_ONLY]
    assert positional(ours) == positional(theirs), f"{what}: {list(ours)} != xarray's {list(theirs)}"
    # every keyword of xarray's own engine, and only zarrdask's cache switch beyond them
    assert set(theirs) <= set(ours) and set(ours) - set(theirs) <= {"cache_bytes"}, (
        f"{what}: {sorted(set(ours) ^ set(theirs))} differ from xarray's")
    for name, p in theirs.items():
        assert (ours[name].default, ours[name].kind) == (p.default, p.kind), f"{what}({name}=...) differs from xarray's"


@pytest.mark.parametrize("method", ["open_dataset", "open_datatree", "open_groups_as_dict"])
def test_open_signatures_match_the_zarr_engine(method):
    _same_params(_params(getattr(ZarrdaskBackendEntrypoint, method)),
                 _params(getattr(ZarrBackendEntrypoint, method)), method)


def test_open_dataset_parameters_list_the_signature():
    assert ZarrdaskBackendEntrypoint.open_dataset_parameters == tuple(_params(ZarrdaskBackendEntrypoint.open_dataset))


def test_writer_signatures_match_xarray():
    ours = _params(to_zarr, drop=("ds",))
    _same_params(ours, _params(xr.Dataset.to_zarr), "Dataset.to_zarr")
    tree = _params(datatree_to_zarr, drop=("dt",))
    theirs = _params(xr.DataTree.to_zarr, drop=("self", "kwargs"))
    _same_params({k: tree[k] for k in theirs}, theirs, "DataTree.to_zarr")
    # the rest are Dataset.to_zarr's keywords, which DataTree.to_zarr passes on (**kwargs)
    for name in set(tree) - set(theirs):
        assert name in ours and tree[name].default == ours[name].default, name


def _dataset():
    data = np.arange(12, dtype="float32").reshape(3, 4)
    data[1, 2] = -1.0
    return xr.Dataset({"v": (("y", "x"), data)}, coords={"x": np.arange(4)})


def _write_with_fill(path, zarr_format):
    """v: the Zarr fill_value -1.0 (and one element equal to it); no _FillValue attribute."""
    ds = _dataset()
    key = "_FillValue" if zarr_format == 2 else "fill_value"  # how xarray sets the Zarr fill_value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", zarr_format=zarr_format, consolidated=False, encoding={"v": {key: -1.0}})


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_use_zarr_fill_value_as_mask_default_matches_engine_zarr(tmp_path, zarr_format):
    """None: the Zarr fill_value masks data for v2 only, as with ``engine="zarr"``."""
    path = str(tmp_path / "m.zarr")
    _write_with_fill(path, zarr_format)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = xr.open_zarr(path, consolidated=False, chunks=None).load()
    got = xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint, use_zarr_fill_value_as_mask=None).load()
    xr.testing.assert_identical(got, expected)
    assert bool(np.isnan(got["v"].values[1, 2])) == (zarr_format == 2)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_use_zarr_fill_value_as_mask_false_leaves_data_unmasked(tmp_path, zarr_format):
    """False: no masking by the fill_value (documented; xarray's engine ignores False for v2,
    xarray#10269, so v3 is compared with it and v2 with the stored values)."""
    path = str(tmp_path / "m.zarr")
    _write_with_fill(path, zarr_format)
    got = xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint, use_zarr_fill_value_as_mask=False).load()
    assert got["v"].values[1, 2] == -1.0 and not np.isnan(got["v"].values).any()
    if zarr_format == 3:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            xr.testing.assert_identical(got, xr.open_zarr(path, consolidated=False, chunks=None).load())
    else:
        np.testing.assert_array_equal(got["v"].values, zarrdask.open_array(path, path="v")[...])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_use_zarr_fill_value_as_mask_true_masks_as_documented(tmp_path, zarr_format):
    """True: the Zarr fill_value masks data as a CF ``_FillValue`` would (xarray's documented
    meaning; its own engine ignores True, xarray#10269)."""
    path = str(tmp_path / "m.zarr")
    _write_with_fill(path, zarr_format)
    got = xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint, use_zarr_fill_value_as_mask=True).load()
    raw = xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint, use_zarr_fill_value_as_mask=False,
                          mask_and_scale=False).load()
    group = zarrdask.open_group(path)
    for name, var in raw.variables.items():
        fill = group[name].fill_value
        if fill is not None:
            var.attrs["_FillValue"] = fill
        var.encoding.pop("fill_value", None)
    expected = xr.decode_cf(raw)
    xr.testing.assert_identical(got, expected)
    assert np.isnan(got["v"].values[1, 2])


def test_mode_store_engine_and_cache_members(tmp_path):
    path = str(tmp_path / "k.zarr")
    _dataset().zarrdask.to_zarr(path, mode="w")
    ro = xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint)
    rw = xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint, mode="r+")
    xr.testing.assert_identical(ro, rw)
    entry = ZarrdaskBackendEntrypoint()
    group = zarrdask.open_group(path, mode="r")
    with pytest.raises(ReadOnlyError):
        group["v"][0, 0] = 5
    # store=: an opened group or data store is read instead of the path
    direct = entry.open_dataset(path)
    xr.testing.assert_identical(entry.open_dataset(None, store=group), direct)
    xr.testing.assert_identical(entry.open_dataset(None, store=ZarrdaskDataStore(group)), direct)
    with pytest.raises(InvalidStoreError, match="store= must be"):
        entry.open_dataset(path, store={"not": "a store"})
    # engine= is accepted and unused, as by xarray's engine
    xr.testing.assert_identical(entry.open_dataset(path, engine="zarrdask"), direct)
    # cache_members=False: members are listed when used, so later additions show
    writable = zarrdask.open_group(path, mode="r+")
    cached = ZarrdaskDataStore(writable)
    live = ZarrdaskDataStore(writable, cache_members=False)
    writable.create_array("late", shape=(4,), dtype="i2", chunks=(4,), dimension_names=["x"])
    assert "late" not in cached.get_variables() and "late" in live.get_variables()
    assert "late" in entry.open_dataset(path, cache_members=False)


def test_open_datatree_takes_the_decoding_keywords(tmp_path):
    path = str(tmp_path / "t.zarr")
    tree = xr.DataTree.from_dict({"/": _dataset(), "/child": _dataset().rename(v="w")})
    tree.zarrdask.to_zarr(path, mode="w")
    got = xr.open_datatree(path, engine=ZarrdaskBackendEntrypoint, mask_and_scale=False, mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = xr.open_datatree(path, engine="zarr", mask_and_scale=False)
    xr.testing.assert_identical(got.load(), expected.load())
    groups = ZarrdaskBackendEntrypoint().open_groups_as_dict(path, drop_variables=["x"], group="child")
    assert list(groups) == ["/"] and "x" not in groups["/"].variables


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_append_dim_with_compute_false_round_trips_as_engine_zarr(tmp_path, zarr_format):
    first = xr.Dataset({"t": (("time", "x"), np.arange(8.0).reshape(2, 4))},
                       coords={"time": [0, 1], "x": np.arange(4)}).chunk({"time": 1, "x": 3})
    second = xr.Dataset({"t": (("time", "x"), np.arange(8.0, 20.0).reshape(3, 4))},
                        coords={"time": [2, 3, 4], "x": np.arange(4)}).chunk({"time": 2, "x": 3})
    ours, theirs = str(tmp_path / "ours.zarr"), str(tmp_path / "theirs.zarr")
    first.zarrdask.to_zarr(ours, mode="w", zarr_format=zarr_format, encoding={"t": {"chunks": (2, 2)}})
    delayed = second.zarrdask.to_zarr(ours, append_dim="time", compute=False)
    delayed.compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (xarray's writer refuses dask chunks that cut its chunks: it gets the data in memory)
        first.load().to_zarr(theirs, mode="w", zarr_format=zarr_format, encoding={"t": {"chunks": (2, 2)}})
        second.load().to_zarr(theirs, append_dim="time", compute=False).compute()
        expected = xr.open_zarr(theirs).load()
        from_ours = xr.open_zarr(ours).load()
    got = xr.open_dataset(ours, engine=ZarrdaskBackendEntrypoint).load()
    xr.testing.assert_identical(got, expected)
    xr.testing.assert_identical(from_ours, expected)
    xr.testing.assert_identical(got, xr.concat([first, second], dim="time").load())


def test_store_none_writes_to_memory():
    group = _dataset().zarrdask.to_zarr()
    xr.testing.assert_identical(xr.open_dataset(group, engine=ZarrdaskBackendEntrypoint).load(), _dataset())
