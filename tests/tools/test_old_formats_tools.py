"""The old formats above the core: ``copy`` of a v3.0 draft store is migrate's copy (the
draft keeps chunks apart from its documents); the xarray engine opens a Zarr v1 array (v1
has no groups) as a dataset of one variable."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import InvalidModeError

DATA = Path(__file__).parents[1] / "data" / "old_formats"
DRAFT = json.loads((DATA / "v3draft" / "expected" / "manifest.json").read_text())
DRAFT_STORE = DATA / "v3draft" / DRAFT["store"]
V1 = json.loads((DATA / "v1" / "expected" / "manifest.json").read_text())
NUMERIC_V1 = [e for e in V1["arrays"] if e["path"].startswith(("dtype_", "compression_", "order_"))]


def test_copy_takes_a_draft_store_as_migrate_does(tmp_path):
    """copy of a draft store is migrate's copy (chunks byte for byte as Zarr v3.1); with a
    layout change asked, it refuses before writing and says how."""
    with pytest.raises(InvalidModeError, match=r"v3\.0 draft.*copy it first"):
        zarrdask.copy(DRAFT_STORE, tmp_path / "no.zarr", chunks=2)
    assert not any((tmp_path / "no.zarr").rglob("*.json"))
    copied = zarrdask.copy(DRAFT_STORE, tmp_path / "out.zarr")
    assert copied.zarr_format == 3
    for entry in DRAFT["arrays"]:
        want = np.load(DATA / "v3draft" / "expected" / entry["expected"], allow_pickle=True)
        got = zarrdask.open_array(tmp_path / "out.zarr", path=entry["path"])[...]
        if want.dtype.kind == "O":
            assert got.tolist() == want.tolist()
        else:  # bit for bit (NaN payloads too), in native byte order
            native = want.dtype.newbyteorder("=") if want.dtype.fields is None else want.dtype
            assert got.tobytes() == want.astype(native).tobytes()


@pytest.mark.parametrize("entry", NUMERIC_V1[:8], ids=lambda e: e["path"])
def test_xarray_engine_opens_a_v1_array_as_a_dataset_of_one_variable(entry):
    """v1 has no groups: the array opens alone, named by its directory, its dimensions
    dim_0... (v1 names none) with the warning unnamed v3 arrays give."""
    xr = pytest.importorskip("xarray")
    want = np.load(DATA / "v1" / "expected" / entry["expected"], allow_pickle=True)
    with pytest.warns(UserWarning, match="no dimension names"):
        ds = xr.open_dataset(DATA / "v1" / entry["path"], engine="zarrdask", chunks={}, mask_and_scale=False)
    var = ds[entry["path"]]
    assert var.dims == tuple(f"dim_{i}" for i in range(want.ndim))
    got = var.values
    if want.dtype.kind in "biufc":
        assert got.tobytes() == want.astype(want.dtype.newbyteorder("=")).tobytes()
    else:
        assert got.tolist() == want.tolist()


def test_xarray_engine_still_refuses_a_lone_v2_array(tmp_path):
    """Only v1, which has no groups, opens as a lone array; a v2 or v3 array where a group
    is expected stays an error, as with xarray's own engine."""
    xr = pytest.importorskip("xarray")
    from zarrdask.errors import GroupNotFoundError

    zarrdask.create_array(tmp_path / "a.zarr", shape=(2,), dtype="i1", zarr_format=2)
    with pytest.raises(GroupNotFoundError):
        xr.open_dataset(tmp_path / "a.zarr", engine="zarrdask")


def test_copy_takes_one_bare_size_for_every_dimension(tmp_path):
    """``chunks=2`` (as zarr-python's ``chunks``) means 2 along every dimension."""
    zarrdask.create_array(tmp_path / "a.zarr", shape=(4, 6), chunks=(4, 6), dtype="i2")[...] = 1
    assert zarrdask.copy(tmp_path / "a.zarr", tmp_path / "b.zarr", chunks=2).chunks == (2, 2)


@pytest.mark.parametrize("zarr_format", [None, 2, 3])
def test_copy_of_every_v1_array_reads_exact(tmp_path, zarr_format):
    """A v1 array copied with its format kept (or as v2) is a plain v2 array: its chunks as
    they were under a .zarray written anew (it copied v1's missing .zarray, leaving chunks
    and no metadata); as v3, re-encoded. (Snappy blosc has no v3 form zarrdask writes.)"""
    for entry in V1["arrays"]:
        if zarr_format == 3 and "snappy" in entry["path"]:
            continue
        source = DATA / "v1" / entry["path"]
        target = tmp_path / entry["path"]
        zarrdask.copy(source, target, **({} if zarr_format is None else {"zarr_format": zarr_format}))
        copied = zarrdask.open_array(target)
        assert copied.metadata.zarr_format == (zarr_format or 2) and copied.metadata.source_format is None
        want = np.load(DATA / "v1" / "expected" / entry["expected"], allow_pickle=True)
        got = copied[...]
        assert got.shape == want.shape and (got.tolist() == want.tolist() if want.dtype == object
                                            else got.tobytes() == want.astype(got.dtype).tobytes()), entry["path"]
        assert zarrdask.verify(target).ok, entry["path"]


@pytest.mark.parametrize("order", "CF")
def test_a_v1_array_of_zstd_07_chunks_is_not_migrated(tmp_path, order):
    """migrate keeps the chunks, and zarr 1.1.0's zstd 0.7 frames read only in zarrdask with
    its legacy extra: refused by name before anything is written, with the copy that works."""
    import shutil

    from zarrdask.errors import MetadataError

    shutil.copytree(DATA / "v1" / f"layout_blosc_zstd_{order}_3d", tmp_path / "a")
    before = sorted(p.name for p in (tmp_path / "a").iterdir())
    with pytest.raises(MetadataError, match=r"zstd 0\.7 frames.*zarrdask\.copy\(source, new_store, "
                                            r"compressors='zstd', zarr_format=3\)"):
        zarrdask.migrate(tmp_path / "a")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == before
    zarrdask.copy(tmp_path / "a", tmp_path / "b", compressors="zstd", zarr_format=3)
    import zarr

    np.testing.assert_array_equal(zarr.open_array(tmp_path / "b", mode="r")[...], zarrdask.open_array(tmp_path / "a")[...])
    zarrdask.migrate(DATA / "v1" / "layout_blosc_lz4_C_3d", dry_run=True)  # (other blosc arrays migrate)
