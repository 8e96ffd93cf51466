"""What users hand in as a store: an fsspec mapper (local and S3), a dict, a ``dbm``
database. Every entry point takes each, with the same values and stored bytes as a path."""

from __future__ import annotations

import dbm
import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import dask.array as da
import fsspec
import numpy as np
import pytest
import xarray as xr
from _s3 import s3_storage_options

import zarrdask
from zarrdask.errors import StoreError
from zarrdask.storage import LocalStore, open_store

VALUES = np.arange(600, dtype="i4").reshape(20, 30)
LAYOUT = dict(chunks=(5, 10), shards=(10, 30))


def _stored(store: Any) -> dict[str, bytes]:
    s = open_store(store)
    return {k: s.get(k) for k in sorted(s.list_prefix("")) if not k.endswith("zarr.json")}  # type: ignore[misc]


@pytest.fixture(params=["fsmap", "dict", "dbm"])
def store_like(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "fsmap":
        return fsspec.get_mapper(str(tmp_path / "m.zarr"))
    if request.param == "dict":
        return {}
    db = dbm.open(str(tmp_path / "db"), "c")
    request.addfinalizer(db.close)
    return db


def _reference(tmp_path: Path) -> dict[str, bytes]:
    path = str(tmp_path / "ref.zarr")
    zarrdask.create_array(path, data=VALUES, **LAYOUT)
    return _stored(path)


def test_create_open_and_array_entry_points(store_like: Any, tmp_path: Path) -> None:
    zarrdask.create_array(store_like, data=VALUES, **LAYOUT)
    assert _stored(store_like) == _reference(tmp_path)
    assert np.array_equal(zarrdask.open_array(store_like)[...], VALUES)
    assert np.array_equal(zarrdask.open(store_like)[...], VALUES)
    a = zarrdask.open_array(store_like, mode="r+")
    a[3:7, 1:4] = -1  # a partial-shard write: guarded by the mapping's store
    assert int((zarrdask.open_array(store_like)[...] == -1).sum()) == 12


def test_groups(store_like: Any) -> None:
    root = zarrdask.open_group(store_like, mode="w")
    root.create_array("x", data=VALUES, **LAYOUT)
    assert list(zarrdask.open_group(store_like).array_keys()) == ["x"]


def test_dask_entry_points(store_like: Any, tmp_path: Path) -> None:
    zarrdask.to_zarr(da.from_array(VALUES, chunks=(7, 11)), store_like, **LAYOUT)
    assert _stored(store_like) == _reference(tmp_path)
    y = zarrdask.from_zarr(store_like)
    assert y.numblocks == (2, 1) and np.array_equal(y.compute(), VALUES)


def test_xarray_engine_and_writer(store_like: Any, tmp_path: Path) -> None:
    ds = xr.Dataset({"v": (("y", "x"), VALUES.astype("f8"))}, coords={"y": np.arange(20)})
    ds.zarrdask.to_zarr(store_like, mode="w")
    ds.zarrdask.to_zarr(str(tmp_path / "ref.zarr"), mode="w")
    back = xr.open_dataset(store_like, engine="zarrdask")
    xr.testing.assert_identical(back.load(), ds)
    assert _stored(store_like) == _stored(str(tmp_path / "ref.zarr"))


def test_a_local_fsmap_is_a_local_store(tmp_path: Path) -> None:
    assert open_store(fsspec.get_mapper(str(tmp_path)), mode="a") == LocalStore(tmp_path)


def test_an_s3_fsmap(s3_endpoint: str, s3_url: str) -> None:
    mapper = fsspec.get_mapper(s3_url, **s3_storage_options(s3_endpoint))
    zarrdask.to_zarr(da.from_array(VALUES, chunks=(7, 11)), mapper, **LAYOUT)
    assert np.array_equal(zarrdask.from_zarr(mapper).compute(), VALUES)
    assert open_store(mapper).guard == open_store(s3_url, storage_options=s3_storage_options(s3_endpoint)).guard


def _unpickle(blob: bytes, out: Any) -> None:
    try:
        pickle.loads(blob)
        out.put("loaded")
    except StoreError as exc:
        out.put(str(exc))


def test_a_mapping_store_never_travels_to_another_process() -> None:
    """Another process would write into a copy of the dict that is then thrown away."""
    store = open_store({}, mode="a")
    assert pickle.loads(pickle.dumps(store)) == store  # the same process: the same dict
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_unpickle, args=(pickle.dumps(store), out))
    child.start()
    child.join(60)
    assert "lives in the process that made it" in out.get(timeout=10)


def test_opened_nodes_stand_for_their_store_and_path(tmp_path: Path) -> None:
    """A zarr-python Array or Group, or a zarrdask one, where a store goes (from_zarr took
    them already; the openers too now)."""
    import zarr

    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=(4, 4), chunks=(2, 2), dtype="i4")
    z[...] = np.arange(16).reshape(4, 4)
    assert zarrdask.open_array(z)[...].sum() == 120 and zarrdask.open(z)[...].sum() == 120
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    g.create_array("x", shape=(3,), dtype="f8")
    assert zarrdask.open_array(g, path="x").shape == (3,)
    assert list(zarrdask.open_group(g).array_keys()) == ["x"]
    ours = zarrdask.open_group(str(tmp_path / "g.zarr"))
    assert zarrdask.open_array(ours, path="x").shape == (3,)
    with pytest.raises(zarrdask.errors.InvalidModeError, match="does not apply to an opened array"):
        zarrdask.open_array(z, path="y")


def _zip_of(tmp_path: Path, name: str) -> Path:
    """A zip archive holding the group 'g' with the array 'x' (and a Dataset's 'v'), as
    zarr-python's ZipStore writes one."""
    from zarr.storage import ZipStore

    archive = tmp_path / name
    store = ZipStore(str(archive), mode="w")
    root = zarrdask.open_group(store, mode="w")
    root.create_array("x", data=VALUES, **LAYOUT)
    xr.Dataset({"v": (("y", "x"), VALUES.astype("f8"))}).zarrdask.to_zarr(store, group="ds", mode="w")
    store.close()
    return archive


def test_a_zarr_python_zipstore_opened_for_reading_at_every_read_entry_point(tmp_path: Path) -> None:
    """zarr-python's ``ZipStore(p, mode="r")``, not yet opened by zarr-python, in every way
    in that reads: the same values as the archive's path gives."""
    from zarr.storage import ZipStore

    archive = _zip_of(tmp_path, "a.zip")

    def fresh() -> Any:
        return ZipStore(str(archive), mode="r")

    assert np.array_equal(zarrdask.open_array(fresh(), path="x")[...], VALUES)
    assert np.array_equal(zarrdask.open(fresh(), path="x")[...], VALUES)
    assert list(zarrdask.open_group(fresh(), mode="r").array_keys()) == ["x"]
    assert np.array_equal(zarrdask.from_zarr(fresh(), component="x").compute(), VALUES)
    back = xr.open_dataset(fresh(), group="ds", engine="zarrdask")
    xr.testing.assert_identical(back.load(), xr.open_dataset(str(archive), group="ds", engine="zarrdask").load())


def test_a_zarr_python_zipstore_opened_for_writing_at_every_write_entry_point(tmp_path: Path) -> None:
    """zarr-python's ``ZipStore(p, mode="w")`` in ``create_array``, ``to_zarr`` and the
    xarray writer: the archive holds the bytes a path gets."""
    from zarr.storage import ZipStore

    store = ZipStore(str(tmp_path / "w.zip"), mode="w")
    zarrdask.create_array(store, name="c", data=VALUES, **LAYOUT)
    zarrdask.to_zarr(da.from_array(VALUES, chunks=(7, 11)), store, component="d", **LAYOUT)
    ds = xr.Dataset({"v": (("y", "x"), VALUES.astype("f8"))})
    ds.zarrdask.to_zarr(store, group="e", mode="w")
    store.close()
    ref = tmp_path / "ref.zarr"
    zarrdask.create_array(str(ref / "c"), data=VALUES, **LAYOUT)
    zarrdask.to_zarr(da.from_array(VALUES, chunks=(7, 11)), str(ref / "d"), **LAYOUT)
    ds.zarrdask.to_zarr(str(ref), group="e", mode="a")
    archive = str(tmp_path / "w.zip")
    for name in ("c", "d"):
        assert np.array_equal(zarrdask.open_array(archive, path=name)[...], VALUES)
    got, want = _stored(archive), _stored(str(ref))
    assert {k: v for k, v in got.items() if not k.startswith("e/")} == {k: v for k, v in want.items()
                                                                         if not k.startswith("e/")}
    xr.testing.assert_identical(xr.open_dataset(archive, group="e", engine="zarrdask").load(), ds)
