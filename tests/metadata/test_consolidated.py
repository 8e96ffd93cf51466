"""Writers keep consolidated metadata true: resize, append, attribute changes and node
creation in a consolidated group update the consolidated copy in the same call, for v2
and v3, as zarrdask, zarr-python and xarray's zarr engine read it."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import StaleConsolidatedMetadataWarning

zarr = pytest.importorskip("zarr")


def _consolidated_group(path, zarr_format):
    root = zarrdask.create_group(path, zarr_format=zarr_format, overwrite=True)
    sub = root.create_group("sub")
    a = sub.create_array("a", shape=(4, 6), dtype="int32", chunks=(2, 3), fill_value=0,
                         dimension_names=["y", "x"])
    a[...] = np.arange(24).reshape(4, 6)
    root.create_array("b", shape=(5,), dtype="float32", chunks=(5,), dimension_names=["x"])
    zarrdask.consolidate_metadata(path)
    return path


def _peer_shape(path, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_group(path, mode="r", use_consolidated=True)[name].shape


def _peer_attrs(path, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict(zarr.open_group(path, mode="r", use_consolidated=True)[name].attrs)


@pytest.fixture(params=[2, 3])
def store_path(request, tmp_path):
    return _consolidated_group(str(tmp_path / "c.zarr"), request.param)


def test_resize_updates_the_consolidated_copy(store_path):
    a = zarrdask.open_group(store_path, mode="r+")["sub/a"]
    a.resize(6, 9)
    assert zarrdask.open_group(store_path)["sub/a"].shape == (6, 9)
    assert zarrdask.open_group(store_path)["sub"]["a"].shape == (6, 9)
    assert _peer_shape(store_path, "sub/a") == (6, 9)


def test_append_updates_the_consolidated_copy(store_path):
    a = zarrdask.open_array(store_path, path="sub/a", mode="r+")
    a.append(np.ones((2, 6), dtype="int32"))
    assert zarrdask.open_group(store_path)["sub/a"].shape == (6, 6)
    assert _peer_shape(store_path, "sub/a") == (6, 6)
    assert np.array_equal(zarrdask.open_group(store_path)["sub/a"][4:], np.ones((2, 6)))


def test_attribute_changes_update_the_consolidated_copy(store_path):
    group = zarrdask.open_group(store_path, mode="r+")
    group["b"].attrs["units"] = "K"
    group["sub"].attrs.update({"title": "t"})
    assert dict(zarrdask.open_group(store_path)["b"].attrs) == {"units": "K", **({"_ARRAY_DIMENSIONS": ["x"]} if group.zarr_format == 2 else {})}
    assert zarrdask.open_group(store_path)["sub"].attrs["title"] == "t"
    assert _peer_attrs(store_path, "b")["units"] == "K"
    del group["b"].attrs["units"]
    assert "units" not in zarrdask.open_group(store_path)["b"].attrs
    assert "units" not in _peer_attrs(store_path, "b")


def test_node_creation_updates_the_consolidated_copy(store_path):
    group = zarrdask.open_group(store_path, mode="r+")
    group.create_array("new", shape=(3,), dtype="u1", chunks=(3,))
    group["sub"].create_group("deeper")
    fresh = zarrdask.open_group(store_path)
    assert fresh.consolidated
    assert {"new", "sub", "b"} <= set(fresh.keys())
    assert "deeper" in fresh["sub"].keys()
    assert _peer_shape(store_path, "new") == (3,)


def test_overwriting_a_group_drops_entries_below_it(store_path):
    group = zarrdask.open_group(store_path, mode="r+")
    group.create_group("sub", overwrite=True)
    fresh = zarrdask.open_group(store_path)
    assert list(fresh["sub"].keys()) == []


def test_xarray_sees_a_resize_through_consolidated_metadata(tmp_path):
    path = str(tmp_path / "x.zarr")
    ds = xr.Dataset({"t": (("time",), np.arange(4.0))})
    ds.zarrdask.to_zarr(path, mode="w", consolidated=True)
    zarrdask.open_array(path, path="t", mode="r+").resize(6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert xr.open_zarr(path, consolidated=True).sizes["time"] == 6
    assert xr.open_dataset(path, engine="zarrdask").sizes["time"] == 6


def test_a_member_missing_from_the_copy_is_reported(tmp_path):
    path = str(tmp_path / "s.zarr")
    _consolidated_group(path, 3)
    doc = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())
    del doc["consolidated_metadata"]["metadata"]["b"]
    (tmp_path / "s.zarr" / "zarr.json").write_text(json.dumps(doc))
    with pytest.warns(StaleConsolidatedMetadataWarning, match="zarr.json: the consolidated metadata lacks member 'b'"):
        assert zarrdask.open_group(path)["b"].shape == (5,)
