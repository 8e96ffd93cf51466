"""zarr-python's stores (and Icechunk's, built on zarr-python's Store) as zarrdask stores:
Dask writes and reads, the xarray engine, and zarr-python reading what zarrdask wrote."""

from __future__ import annotations

import warnings

import dask.array as da
import icechunk
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import xarray as xr
import zarr
import zarr.storage

import zarrdask
from zarrdask.errors import InvalidStoreError
from zarrdask.storage import ZarrPythonStore, open_store


def _memory(tmp_path):
    store = zarr.storage.MemoryStore()
    return store, lambda: store


def _local(tmp_path):
    store = zarr.storage.LocalStore(tmp_path / "local")
    return store, lambda: zarr.storage.LocalStore(tmp_path / "local", read_only=True)


def _icechunk(tmp_path):
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "ic")))
    session = repo.writable_session("main")

    def committed():
        session.commit("zarrdask writes")
        return repo.readonly_session("main").store

    return session.store, committed


STORES = {"zarr-memory": _memory, "zarr-local": _local, "icechunk": _icechunk}


@pytest.mark.parametrize("make", STORES.values(), ids=STORES.keys())
def test_dask_round_trip(make, tmp_path):
    data = np.random.default_rng(1).standard_normal((60, 50)).astype("f4")
    store, reopen = make(tmp_path)
    zarrdask.to_zarr(da.from_array(data, chunks=(7, 13)), store, path="x", chunks=(5, 5), shards=(20, 25),
                     dimension_names=["y", "x"])
    zarrdask.to_zarr(da.from_array(data[:10, :10] * 2, chunks=3), store, path="x", mode="r+",
                     region=(slice(15, 25), slice(20, 30)))
    expected = data.copy()
    expected[15:25, 20:30] = data[:10, :10] * 2
    store = reopen()
    back = zarrdask.from_zarr(store, path="x")
    assert back.numblocks == (3, 2)
    np.testing.assert_array_equal(back.compute(), expected)
    np.testing.assert_array_equal(zarr.open_array(store, path="x", mode="r")[...], expected)
    opened = zarrdask.open_array(store, path="x").store  # a read-only view of a writable store wraps it
    assert isinstance(opened, ZarrPythonStore) or isinstance(opened.inner, ZarrPythonStore)


@pytest.mark.parametrize("make", STORES.values(), ids=STORES.keys())
def test_xarray_engine_round_trip(make, tmp_path):
    ds = xr.Dataset(
        {"t": (("time", "x"), np.arange(40, dtype="f8").reshape(8, 5), {"units": "K"})},
        coords={"time": pd.date_range("2026-01-01", periods=8), "x": np.arange(5)},
    )
    store, reopen = make(tmp_path)
    ds.chunk({"time": 3}).zarrdask.to_zarr(store, mode="w", encoding={"t": {"chunks": (2, 5), "shards": (4, 5)}})
    store = reopen()
    back = xr.open_dataset(store, engine="zarrdask", chunks={})
    assert back["t"].chunks == ((4, 4), (5,))
    xr.testing.assert_identical(back.load(), ds)


def test_a_read_only_icechunk_snapshot_keeps_its_indexes_and_caches_chunks(tmp_path):
    """A read-only session is pinned to one snapshot: its shard indexes serve later reads
    (one request per partial read, not two) and ``cache_bytes`` caches its chunks; a
    writable session's store, whose contents change, gets neither."""
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "ic")))
    session = repo.writable_session("main")
    data = np.arange(64, dtype="f4").reshape(8, 8)
    zarrdask.create_array(session.store, path="a", shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="f4",
                          fill_value=0)[...] = data
    writable = zarrdask.open_array(session.store, path="a")
    writable[0:1, 0:1]
    assert writable.units.fetch.cache.get("a/c/0/0") is None
    session.commit("the array")

    snapshot = repo.readonly_session("main").store
    a = zarrdask.open_array(snapshot, path="a")
    np.testing.assert_array_equal(a[1:3, 5:8], data[1:3, 5:8])
    assert a.units.fetch.cache.get("a/c/0/1") is not None
    np.testing.assert_array_equal(a[0:1, 4:5], data[0:1, 4:5])  # (through the kept index)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "read without the decoded-chunk cache" warning)
        cached = zarrdask.open_array(snapshot, path="a", cache_bytes="1 MiB")
    for _ in range(2):
        np.testing.assert_array_equal(cached[2:7, 1:6], data[2:7, 1:6])
    info = cached.cache_info()
    assert info.budget == 2**20 and info.hits > 0


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_each_icechunk_snapshot_reads_its_own_values_through_the_caches(tmp_path_factory, data):
    """Commits one after another, each snapshot opened read-only (kept indexes, cached
    chunks) before and after the next commit: an open of an older snapshot keeps reading
    that snapshot, a newer one reads its own values, never an older snapshot's cached chunk."""
    root = tmp_path_factory.mktemp("ic")
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(root)))
    draw = data.draw
    shape = (draw(st.integers(1, 12)), draw(st.integers(1, 12)))
    chunks = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    session = repo.writable_session("main")
    zarrdask.create_array(session.store, path="a", shape=shape, chunks=chunks, shards=shards, dtype="i4",
                          fill_value=0)
    model = np.zeros(shape, "i4")
    opened: list[tuple[zarrdask.Array, np.ndarray]] = []
    for step in range(draw(st.integers(1, 4))):
        lo = [draw(st.integers(0, n - 1)) for n in shape]
        region = tuple(slice(a, draw(st.integers(a + 1, n))) for a, n in zip(lo, shape))
        values = np.full(model[region].shape, step + 1, "i4")
        zarrdask.open_array(session.store, path="a", mode="r+")[region] = values
        model[region] = values
        session.commit(f"step {step}")
        session = repo.writable_session("main")
        snapshot = zarrdask.open_array(repo.readonly_session("main").store, path="a", cache_bytes="1 MiB")
        opened.append((snapshot, model.copy()))
        for array, expected in opened:  # (every snapshot so far, through its kept indexes and cache)
            sel = tuple(slice(draw(st.integers(0, n - 1)), None) for n in shape)
            np.testing.assert_array_equal(array[sel], expected[sel])
            np.testing.assert_array_equal(array[...], expected)


def test_an_icechunk_session_or_repository_is_refused_naming_the_store_to_pass():
    """zarr-python and xarray take a session's ``.store``; passing the session or the
    repository itself is refused with what to pass, and that works where it is printed."""
    repo = icechunk.Repository.create(icechunk.in_memory_storage())
    session = repo.writable_session("main")
    with pytest.raises(InvalidStoreError, match=r"got Session: .* pass its \.store"):
        zarrdask.create_array(session, path="a", shape=(3,), dtype="i4", chunks=(3,))
    with pytest.raises(InvalidStoreError, match=r"got Session: .* pass its \.store"):
        xr.open_dataset(session, engine="zarrdask")
    with pytest.raises(InvalidStoreError, match=r"got Repository: .*\.writable_session\('main'\)\.store to write"):
        zarrdask.open_array(repo, path="a")
    zarrdask.create_array(session.store, path="a", shape=(3,), dtype="i4", chunks=(3,))[...] = [1, 2, 3]
    session.commit("a")
    np.testing.assert_array_equal(zarrdask.open_array(repo.readonly_session("main").store, path="a")[...], [1, 2, 3])


def test_a_read_only_zarr_store_stays_read_only():
    store = zarr.storage.MemoryStore()
    zarrdask.create_array(store, shape=(4,), dtype="i1", chunks=(2,))[...] = [1, 2, 3, 4]
    assert open_store(store, mode="r").read_only
    with pytest.raises(PermissionError):
        zarrdask.open_array(store)[0] = 9
    with pytest.raises(zarrdask.errors.InvalidModeError):
        open_store(store, storage_options={"anon": True})
