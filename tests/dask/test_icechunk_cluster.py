"""Writes into an Icechunk session from a cluster of worker processes: the session store
travels as a fork, the workers' changes come back merged, and ``session.commit()`` then
holds every byte; a store that cannot travel is refused before anything is written."""

from __future__ import annotations

import icechunk
import numpy as np
import pytest
import xarray as xr
import zarr

import dask
import dask.array as da
import distributed
import zarrdask
from zarrdask.errors import InvalidModeError, StoreError

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as c:  # the default client: to_zarr computes on it
        yield c


def _repo(tmp_path):
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "ic")))


def _committed(repo, session):
    session.commit("zarrdask writes")
    return repo.readonly_session("main").store


def test_to_zarr_from_worker_processes_commits_every_byte(client, tmp_path):
    repo = _repo(tmp_path)
    session = repo.writable_session("main")
    data = np.random.default_rng(3).standard_normal((90, 70))
    zarrdask.to_zarr(da.from_array(data, chunks=(7, 13)), session.store, path="x", chunks=(8, 8), shards=(32, 32))
    np.testing.assert_array_equal(zarrdask.open_array(_committed(repo, session), path="x")[...], data)
    session = repo.writable_session("main")
    update = data[5:50, 3:40] * 2  # a region write: read-modify-writes of committed shards
    zarrdask.to_zarr(da.from_array(update, chunks=(11, 9)), session.store, path="x", mode="r+",
                     region=(slice(5, 50), slice(3, 40)))
    data[5:50, 3:40] = update
    np.testing.assert_array_equal(zarrdask.open_array(_committed(repo, session), path="x")[...], data)


def test_a_session_holding_chunks_of_the_target_is_refused(client, tmp_path):
    """Forks would carry the uncommitted chunks back over the workers' writes."""
    session = _repo(tmp_path).writable_session("main")
    zarrdask.to_zarr(da.ones((20, 20), chunks=10), session.store, path="x")
    with pytest.raises(StoreError, match="holds uncommitted chunks of the array 'x'.*Commit the session first"):
        zarrdask.to_zarr(da.zeros((20, 20), chunks=10), session.store, path="x", mode="r+")


def test_compute_false_computes_to_the_changes_to_merge(client, tmp_path):
    repo = _repo(tmp_path)
    session = repo.writable_session("main")
    data = np.arange(60 * 40, dtype="i4").reshape(60, 40)
    writes = zarrdask.to_zarr(da.from_array(data, chunks=(9, 11)), session.store, path="y", chunks=(10, 10),
                              compute=False)
    changes = client.compute(writes).result()
    assert changes is not None  # the workers' fork, merged up the tree
    session.merge(changes)
    np.testing.assert_array_equal(zarrdask.open_array(_committed(repo, session), path="y")[...], data)


def test_xarray_writer_from_worker_processes(client, tmp_path):
    repo = _repo(tmp_path)
    session = repo.writable_session("main")
    rng = np.random.default_rng(4)
    ds = xr.Dataset({"t": (("time", "x"), rng.standard_normal((24, 30)).astype("f4")),
                     "u": (("time",), np.arange(24))}, coords={"time": np.arange(24)})
    ds.chunk({"time": 5}).zarrdask.to_zarr(session.store, mode="w",
                                           encoding={"t": {"chunks": (4, 10), "shards": (8, 30)}})
    back = xr.open_dataset(_committed(repo, session), engine="zarrdask").load()
    xr.testing.assert_identical(back, ds)
    np.testing.assert_array_equal(back.t.values, ds.t.values)


class _StaysHome(zarr.storage.MemoryStore):
    """A zarr-python store that refuses to be pickled."""

    def __reduce__(self):
        raise TypeError("this store stays in its process")


def test_a_store_that_cannot_travel_is_refused_before_any_write(client):
    store = _StaysHome()
    with pytest.raises(StoreError, match="cannot be sent to Dask's worker processes") as err:
        zarrdask.to_zarr(da.zeros((10, 10), chunks=5), store, path="z")
    assert "stays in its process" in str(err.value) and "scheduler='threads'" in str(err.value)
    assert not store._store_dict  # nothing written, not even metadata


@pytest.fixture
def source(tmp_path):
    """A local group: ``a`` (108 chunks: two byte-copy tasks) and ``b`` (sharded)."""
    rng = np.random.default_rng(5)
    data = {"a": rng.standard_normal((90, 70)), "b": rng.integers(0, 1000, (40, 50), dtype="i8")}
    root = zarrdask.create_group(str(tmp_path / "src"))
    root.create_array("a", shape=data["a"].shape, dtype=data["a"].dtype, chunks=(8, 8))[...] = data["a"]
    root.create_array("b", shape=data["b"].shape, dtype=data["b"].dtype, chunks=(5, 5), shards=(20, 25))[...] = \
        data["b"]
    return str(tmp_path / "src"), data


@pytest.mark.parametrize("layout", [{}, {"chunks": (16, 16), "shards": None}], ids=["bytes", "rechunked"])
def test_copy_into_a_session_from_worker_processes(client, tmp_path, source, layout):
    path, data = source
    repo = _repo(tmp_path)
    session = repo.writable_session("main")
    plan = zarrdask.copy(path, session.store, dry_run=True, **layout)
    assert all(a.bytes_copied == (not layout) for a in plan.arrays)
    zarrdask.copy(path, session.store, client=client, **layout)
    back = _committed(repo, session)
    for name, values in data.items():
        array = zarrdask.open_array(back, path=name)
        assert array.chunks == ((16, 16) if layout else zarrdask.open_array(path, path=name).chunks)
        np.testing.assert_array_equal(array[...], values)
        assert array[...].dtype == values.dtype


def test_copy_refuses_a_target_that_cannot_travel_before_any_write(client, source):
    store = _StaysHome()
    with pytest.raises(StoreError, match="zarrdask.copy.*cannot be sent to Dask's worker processes"):
        zarrdask.copy(source[0], store, client=client)
    assert not store._store_dict


@pytest.mark.parametrize("kind", ["Dataset", "DataTree"])
def test_xarray_writer_refuses_a_store_that_cannot_travel_before_any_write(client, kind):
    """Refused by the writer the user called, before the group's metadata is prepared."""
    store = _StaysHome()
    ds = xr.Dataset({"t": (("x",), np.arange(20.0)), "u": (("x",), np.arange(20))}).chunk({"x": 5})
    data = ds if kind == "Dataset" else xr.DataTree.from_dict({"/": ds, "/child": ds})
    with pytest.raises(StoreError, match=rf"^{kind}\.zarrdask\.to_zarr\(\): the store .* cannot be sent to Dask's "
                                         "worker processes"):
        data.zarrdask.to_zarr(store, mode="w")
    assert not store._store_dict  # not the group's metadata either


def test_return_stored_deferred_into_a_session_is_refused_before_any_write(client, tmp_path):
    session = _repo(tmp_path).writable_session("main")
    with pytest.raises(InvalidModeError, match=r"return_stored=True with compute=False.*forks of the session taken "
                                               r"before the workers write.*zarrdask.from_zarr"):
        zarrdask.to_zarr(da.ones((20, 20), chunks=10), session.store, path="x", return_stored=True, compute=False)
    assert not session.has_uncommitted_changes


@pytest.mark.parametrize("store", ["memory://", "zarrdask", "zarr-python"])
def test_a_store_in_this_process_memory_is_refused_on_a_process_cluster(client, store):
    """Worker processes would each write a copy of their own: the data would be lost, and
    reads would see only the fill value. Refused before anything is written or read."""
    from zarrdask.storage import MemoryStore

    target = {"memory://": "memory://refused-on-a-cluster", "zarrdask": MemoryStore(),
              "zarr-python": zarr.storage.MemoryStore()}[store]
    with pytest.raises(StoreError, match="held in this process's memory"):
        zarrdask.to_zarr(da.zeros((10, 10), chunks=5), target, path="z")
    with dask.config.set(scheduler="threads"):
        zarrdask.to_zarr(da.ones((10, 10), chunks=5), target, path="z")
    with pytest.raises(StoreError, match="held in this process's memory"):
        zarrdask.from_zarr(target, component="z")


def test_memory_stores_on_a_cluster_in_this_process():
    """A LocalCluster(processes=False) runs its workers in this process: zarrdask's memory
    stores are shared with them and work; zarr-python's MemoryStore is pickled with its
    contents into every task (its writes were lost), so it is refused."""
    from zarrdask.storage import MemoryStore

    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        for target in (MemoryStore(), "memory://shared-in-this-process"):
            zarrdask.to_zarr(da.ones((10, 10), chunks=5), target, path="z")
            assert float(zarrdask.from_zarr(target, component="z").sum().compute()) == 100.0
        copied = zarr.storage.MemoryStore()
        with pytest.raises(StoreError, match="every task receives a copy of its contents"):
            zarrdask.to_zarr(da.ones((10, 10), chunks=5), copied, path="z")
        assert not copied._store_dict


@pytest.mark.parametrize("on_cluster", [False, True])
def test_copy_overwrites_an_array_a_session_holds(tmp_path, request, on_cluster):
    """copy(overwrite=True) into a session holding the array: the old chunks are deleted
    before its zarr.json (Icechunk refuses the other order), and the new copy commits whole."""
    src = str(tmp_path / "src.zarr")
    zarrdask.to_zarr(da.arange(1600, chunks=100).reshape(40, 40).rechunk(10), src, path="a", chunks=(5, 5))
    repo = _repo(tmp_path)
    with dask.config.set(scheduler="threads"):
        session = repo.writable_session("main")
        zarrdask.to_zarr(da.ones((40, 40), chunks=10), session.store, path="a", chunks=(10, 10))
        session.commit("old")
    if on_cluster:
        request.getfixturevalue("client")
    session = repo.writable_session("main")
    zarrdask.copy(src, session.store, overwrite=True)
    session.commit("new")
    got = zarrdask.open_array(repo.readonly_session("main").store, path="a")
    assert got.chunks == (5, 5)
    np.testing.assert_array_equal(got[...], np.arange(1600).reshape(40, 40))
