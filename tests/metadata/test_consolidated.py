"""Writers keep consolidated metadata true: resize, append, attribute changes, node
creation and deletion in a consolidated group update the consolidated copy in the same
call, for v2 and v3, as zarrdask, zarr-python and xarray's zarr engine read it, also when
several processes change one group at once."""

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


# -- deletions, and writers in other processes --------------------------------------------
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_node_deleted_through_a_group_opened_before_consolidation_leaves_it(tmp_path, zarr_format):
    """The stored consolidated metadata is updated whatever the deleting open held; a nested
    member deleted through its parent leaves the root's too."""
    path = str(tmp_path / "g.zarr")
    before = zarrdask.open_group(path, mode="w", zarr_format=zarr_format)
    before.create_group("x").create_group("y")
    zarrdask.consolidate_metadata(path)
    del before["x/y"]
    after = zarrdask.open_group(path, mode="r+")
    assert after.consolidated and [p for p, _ in after.members(max_depth=None)] == ["x"]
    del after["x"]
    for group in (after, zarrdask.open_group(path)):
        assert group.members(max_depth=None) == ()
    assert zarrdask.verify(path).findings == []
    assert not (tmp_path / "g.zarr" / "x").exists()  # (updating the copies leaves nothing of it behind)


def test_root_attributes_of_a_v2_group_are_its_consolidated_copy(tmp_path):
    """A v2 ``.zmetadata`` lists the group's own ``.zattrs`` (as zarr-python reads it back)."""
    path = str(tmp_path / "g.zarr")
    zarrdask.open_group(path, mode="w", zarr_format=2)
    zarrdask.consolidate_metadata(path)
    zarrdask.open_group(path, mode="r+").attrs["title"] = "t"
    assert json.loads((tmp_path / "g.zarr" / ".zmetadata").read_text())["metadata"][".zattrs"] == {"title": "t"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert dict(zarr.open_group(path, mode="r", use_consolidated=True).attrs) == {"title": "t"}
    assert zarrdask.verify(path).findings == []


def test_a_member_made_through_a_child_shows_in_the_consolidated_open_it_came_from(tmp_path):
    path = str(tmp_path / "g.zarr")
    zarrdask.open_group(path, mode="w").create_group("a")
    zarrdask.consolidate_metadata(path)
    root = zarrdask.open_group(path, mode="r+")
    root["a"].create_array("v", shape=(2,), dtype="i1")
    assert [p for p, _ in root.members(max_depth=None)] == ["a", "a/v"]


def _change_group(path: str, k: int, barrier) -> None:
    group = zarrdask.open_group(path, mode="r+")
    barrier.wait()
    for i in range(4):
        group.create_array(f"w{k}_{i}", shape=(4,), dtype="i2", chunks=(2,))
        group.attrs[f"w{k}_{i}"] = i
        if k == 0:
            zarrdask.consolidate_metadata(path)  # (consolidating again, while the others write)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_processes_changing_one_consolidated_group_keep_every_change(tmp_path, zarr_format):
    """Four processes make arrays and set attributes in one consolidated group at once, one
    consolidating it again after each change: the consolidated metadata lists every array
    and the root keeps every attribute (each writer's read-modify-write of the group's
    documents is guarded)."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    for rep in range(3):
        path = str(tmp_path / f"g{rep}.zarr")
        zarrdask.open_group(path, mode="w", zarr_format=zarr_format)
        zarrdask.consolidate_metadata(path)
        barrier = context.Barrier(4)
        writers = [context.Process(target=_change_group, args=(path, k, barrier)) for k in range(4)]
        for w in writers:
            w.start()
        for w in writers:
            w.join(120)
            assert w.exitcode == 0
        group = zarrdask.open_group(path)
        assert group.consolidated and len(group.keys()) == 16 and len(group.attrs) == 16
        assert zarrdask.verify(path).findings == []


def test_zarr_python_lists_a_v2_group_whose_consolidated_copy_grew_member_by_member(tmp_path):
    """zarr-python 3 fails to list a v2 group whose ``.zmetadata`` keys are out of order
    ("'b/a' not found in consolidated metadata"): the copy is kept sorted as members are added."""
    path = str(tmp_path / "g.zarr")
    root = zarrdask.open_group(path, mode="w", zarr_format=2)
    zarrdask.consolidate_metadata(path)
    root.create_group("b").create_array("a", shape=(0,), dtype="int16", chunks=(2,))
    root.create_group("a").create_group("a")
    root["b"].create_group("b")
    keys = list(json.loads((tmp_path / "g.zarr" / ".zmetadata").read_text())["metadata"])
    assert keys == sorted(keys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        listed = zarr.open_group(path, mode="r").members(max_depth=None)
    assert sorted(k for k, _ in listed) == ["a", "a/a", "b", "b/a", "b/b"]
