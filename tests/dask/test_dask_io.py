"""from_zarr / to_zarr / plan_write on the local schedulers: graph shape, I/O counts, modes."""

from __future__ import annotations

import pickle
import textwrap
import threading
import time

import dask
import dask.array as da
from dask.array.core import PerformanceWarning
from dask.callbacks import Callback
from dask.delayed import Delayed
from dask.utils import key_split
import numpy as np
import pytest
from _util import CountingStore, run_with_query_planning

from zarrdask.api.openers import open_array
from zarrdask.nodes.create import create_array
from zarrdask.dask_io import from_zarr, plan_write, to_zarr
from zarrdask.nodes.block_reader import BlockReader
from zarrdask.errors import ContainsNodeError, ShapeMismatchError
from zarrdask.storage import MemoryStore, Store, SuffixRange

LAYOUT = dict(chunks=(8, 8), shards=(32, 32), fill_value=0)


class Prefixes(Callback):
    """Records the key prefix of every task the local scheduler starts."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def _pretask(self, key, dsk, state) -> None:
        self.seen.add(key_split(key))


def _data(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _chunk_keys(store: Store) -> list[str]:
    return [k for k in store.list_prefix("") if not k.endswith(("zarr.json", ".zarray", ".zattrs"))]


# ----------------------------------------------------------------------------- reads


def test_one_read_task_and_one_index_read_per_shard():
    store = CountingStore(MemoryStore())
    data = _data((256, 256))
    create_array(store, shape=data.shape, dtype=data.dtype, chunks=(4, 4), shards=(64, 64))[...] = data
    y = from_zarr(store)
    assert y.numblocks == (4, 4)
    assert len(dict(y.__dask_graph__())) == 16  # 16 shards x 256 inner chunks -> 16 tasks
    store.reset()
    assert y.sum().compute(scheduler="threads") == pytest.approx(data.sum())
    # Each task reads its shard's index once (a whole-shard GET carries it; a partial read
    # fetches it by suffix range, then the inner chunks coalesced): 16 index reads, not 4096.
    shard_reads = [k for k, r in store.requests if r is None or isinstance(r, SuffixRange) or r.start == 0]
    assert len(shard_reads) == 16 and len(set(shard_reads)) == 16
    assert len(store.calls) <= 2 * 16, store.calls


def test_from_zarr_graph_for_a_million_chunks_builds_in_well_under_a_second():
    # (untimed: a process's first from_zarr imports distributed through dask's get_scheduler, 0.2-0.5 s)
    from_zarr(create_array(MemoryStore(), shape=(4,), dtype="uint8", chunks=(2,)))
    times = []
    for _ in range(3):  # the best of 3 builds, each of a new array, is timed (a loaded machine stalls)
        array = create_array(MemoryStore(), shape=(100_000, 100_000), dtype="uint8", chunks=(100, 100))
        start = time.perf_counter()
        y = from_zarr(array)
        times.append(time.perf_counter() - start)
        assert y.numblocks == (1000, 1000)
        if times[-1] < 0.25:
            break
    elapsed = min(times)
    assert elapsed < 0.25, f"graph build took {', '.join(f'{t:.3f}' for t in times)} s"
    print(f"\nfrom_zarr graph build for 1,000,000 chunks: {elapsed * 1000:.1f} ms")


def test_read_chunks_default_auto_and_explicit():
    array = create_array(MemoryStore(), shape=(4096, 4096), dtype="float64", **LAYOUT)
    assert from_zarr(array).chunks == ((32,) * 128, (32,) * 128)
    with dask.config.set({"array.chunk-size": "1MiB"}):
        auto = from_zarr(array, chunks="auto")
    assert auto.chunks[0][0] % 32 == 0 and auto.chunks[0][0] * auto.chunks[1][0] * 8 <= 2**20
    with pytest.warns(PerformanceWarning, match=r"chunks=\(100, 64\) cut through the array's shards \(32, 32\)"):
        from_zarr(array, chunks=(100, 64))
    with pytest.warns(PerformanceWarning, match=r"chunks=\(blocks of up to \(100, 64\)\) cut through") as seen:
        from_zarr(array, chunks=((100,) * 40 + (96,), (64,) * 64))
    assert len(str(seen[0].message)) < 250  # (not every block size)
    assert from_zarr(array, chunks=(64, -1)).chunks[1] == (4096,)


def test_read_names_are_deterministic_and_overridable():
    array = create_array(MemoryStore(), shape=(64, 64), dtype="int32", **LAYOUT)
    assert from_zarr(array).name == from_zarr(array).name
    assert from_zarr(array).name.startswith("zarrdask-read-")
    assert from_zarr(array, chunks=(64, 64)).name != from_zarr(array).name
    assert from_zarr(array, name="mine").name == "mine"
    assert from_zarr(array, name=False).name != from_zarr(array, name=False).name


def test_read_tasks_pickle_small():
    array = create_array(MemoryStore(), shape=(64, 64), dtype="int32", **LAYOUT)
    reader = BlockReader(array)
    assert len(pickle.dumps(reader)) < 4096
    assert np.array_equal(pickle.loads(pickle.dumps(reader))[0:32, 0:32], np.zeros((32, 32), "int32"))


def test_read_tasks_go_through_the_one_threading_policy(monkeypatch):
    """Every read asks the executor's one policy how many threads it may use: the cores on
    any thread but a pool thread (idle cores help; tests/nodes/test_executor.py), or the
    explicit ``threads`` option; the values are the same on every scheduler."""
    from concurrent.futures import ThreadPoolExecutor

    from zarrdask.runtime import executor

    data = np.arange(64 * 64, dtype="int32").reshape(64, 64)
    array = create_array(MemoryStore(), shape=(64, 64), dtype="int32", **LAYOUT)
    array[...] = data
    used = []  # threads granted
    real = executor.thread_count

    def spy(requested):
        used.append(real(requested))
        return used[-1]

    monkeypatch.setattr(executor, "thread_count", spy)
    reader = BlockReader(array)
    assert np.array_equal(reader[0:32, 0:64], data[0:32]) and executor._CPUS in used
    x = from_zarr(array)
    for scheduler in ("threads", "sync"):
        used.clear()  # (dask.compute: the blocks; x.compute() reads the whole array in one task)
        assert np.array_equal(dask.compute(x, scheduler=scheduler)[0], data) and set(used) == {executor._CPUS}
        used.clear()
        assert np.array_equal(x.compute(scheduler=scheduler), data) and used[0] == executor._CPUS
    used.clear()
    explicit = array.with_options(threads=3)
    with ThreadPoolExecutor(1) as pool:
        assert np.array_equal(pool.submit(explicit.__getitem__, (slice(0, 64), slice(0, 64))).result(), data)
    assert 3 in used


# ----------------------------------------------------------------------------- writes


def test_misaligned_write_has_one_task_per_shard(tmp_path):
    data = _data((100, 90))
    x = da.from_array(data, chunks=(7, 13))
    delayed = to_zarr(x, str(tmp_path / "a.zarr"), compute=False, **LAYOUT)
    assert isinstance(delayed, da.Array) and delayed.shape == x.shape and delayed.numblocks == (1, 1)  # (as dask's)
    prefixes = [key_split(k) for k in delayed.__dask_graph__()]
    assert prefixes.count("zarrdask-write") == 4 * 3  # a task per shard
    assert prefixes.count("zarrdask-write-done") == 1  # and the final task
    assert open_array(str(tmp_path / "a.zarr")).shape == (100, 90)  # metadata first
    assert _chunk_keys(open_array(str(tmp_path / "a.zarr")).store) == []  # no chunk yet
    delayed.compute()
    np.testing.assert_array_equal(open_array(str(tmp_path / "a.zarr"))[...], data)


@pytest.mark.parametrize("chunks", [(100, 100), (99, 101)], ids=["aligned", "misaligned"])
def test_write_graph_for_a_million_shards_builds_in_under_a_second(chunks, monkeypatch):
    """The write graph is generated from the per-axis plan when it is materialised: building
    it for 1,000,000 shards takes milliseconds and little memory, and generates no task."""
    import tracemalloc

    from zarrdask.dask_io.write_graph import PlanWrites

    # (untimed: the modules a process's first to_zarr imports take up to a second under tracemalloc)
    to_zarr(da.zeros((4, 4), chunks=chunks[:1] * 2, dtype="f4"), MemoryStore(), chunks=(2, 2), shards=(2, 2),
            compute=False)
    generated = []
    real_task = PlanWrites.task
    monkeypatch.setattr(PlanWrites, "task", lambda self, key: generated.append(key) or real_task(self, key))
    x = da.zeros((100_000, 100_000), chunks=chunks, dtype="f4")
    times = []
    for _ in range(3):  # the best of 3 builds is timed (a loaded machine stalls; one build took 1.05 s)
        tracemalloc.start()
        start = time.perf_counter()
        delayed = to_zarr(x, MemoryStore(), chunks=(100, 100), shards=(100, 100), mode="w", compute=False)
        times.append(time.perf_counter() - start)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 20 * 2**20, f"graph build peaked at {peak / 2**20:.1f} MiB"
        assert generated == []
        assert len(pickle.dumps(delayed.__dask_graph__())) < 2**20  # what a client ships: the compact form
        if times[-1] < 1.0:
            break
    elapsed = min(times)
    assert elapsed < 1.0, f"graph build took {', '.join(f'{t:.3f}' for t in times)} s"
    print(f"\nto_zarr graph build for 1,000,000 shards ({chunks}): {elapsed * 1000:.1f} ms")


def test_write_graph_gathers_many_writes_through_a_tree(tmp_path):
    """More writes than one task gathers (FAN_IN): every write is reached through the
    tree, no task waits on more than FAN_IN others, and the data is all there."""
    from zarrdask.dask_io.write_graph import FAN_IN

    n_shards = FAN_IN * FAN_IN + 5  # three levels: writes, FAN_IN + 1 gatherers, the top
    data = np.arange(n_shards * 2, dtype="int32")
    delayed = to_zarr(da.from_array(data, chunks=3), str(tmp_path / "t.zarr"), chunks=(2,), shards=(2,),
                      compute=False)
    graph = dict(delayed.__dask_graph__())
    writes = {k for k in graph if key_split(k) == "zarrdask-write"}
    assert len(writes) == n_shards
    reached, todo = set(), [delayed.__dask_keys__()[0]]  # (the one block of the array it returns, as dask's)
    while todo:
        task = graph[todo.pop()]
        assert len(task.dependencies) <= FAN_IN
        reached |= task.dependencies
        todo.extend(k for k in task.dependencies if key_split(k) == "zarrdask-write-done")
    assert writes <= reached
    delayed.compute()
    np.testing.assert_array_equal(open_array(str(tmp_path / "t.zarr"))[...], data)


def test_write_tasks_pickle_small(tmp_path):
    x = da.from_array(_data((100, 90)), chunks=(7, 13))
    delayed = to_zarr(x, str(tmp_path / "s.zarr"), compute=False, **LAYOUT)
    tasks = [v for k, v in dict(delayed.__dask_graph__()).items() if key_split(k) == "zarrdask-write"]
    assert max(len(pickle.dumps(task)) for task in tasks) < 4096  # store, path, metadata, slices; no data


def test_write_modes(tmp_path):
    path = str(tmp_path / "m.zarr")
    data = _data((40, 40))
    x = da.from_array(data, chunks=(10, 10))
    array = to_zarr(x, path, **LAYOUT)
    np.testing.assert_array_equal(array[...], data)
    with pytest.raises(ContainsNodeError):
        to_zarr(x, path)
    to_zarr(x * 2, path, mode="w", chunks=(4, 4))
    reopened = open_array(path)
    assert reopened.shards is None and tuple(reopened.chunks) == (4, 4)
    np.testing.assert_array_equal(reopened[...], data * 2)
    with pytest.raises(ValueError, match="region"):
        to_zarr(x, path, mode="w", region=(slice(0, 40),))
    with pytest.raises(FileNotFoundError):
        to_zarr(x, str(tmp_path / "missing.zarr"), mode="r+")


def test_region_write_starting_mid_shard(tmp_path):
    path = str(tmp_path / "r.zarr")
    base = _data((100, 100), seed=1)
    create_array(path, shape=base.shape, dtype=base.dtype, **LAYOUT)[...] = base
    patch = _data((50, 37), seed=2)
    region = (slice(13, 63), slice(40, 77))
    summary = plan_write(da.from_array(patch, chunks=(7, 13)), path, region)
    assert summary.write_tasks == summary.units_written == 2 * 2  # rows 13:63, columns 40:77
    assert summary.read_modify_writes == 4 and summary.full_writes == 0
    to_zarr(da.from_array(patch, chunks=(7, 13)), path, mode="r+", region=region)
    base[region] = patch
    np.testing.assert_array_equal(open_array(path)[...], base)
    with pytest.raises(ShapeMismatchError):
        to_zarr(da.from_array(patch), path, mode="r+", region=(slice(0, 10), slice(0, 10)))


def test_append_first_row_mid_shard(tmp_path):
    path = str(tmp_path / "app.zarr")
    first = _data((45, 20), seed=3)
    to_zarr(da.from_array(first, chunks=(9, 20)), path, mode="a", **LAYOUT)  # "a" creates
    second = _data((30, 20), seed=4)
    array = to_zarr(da.from_array(second, chunks=(7, 13)), path, mode="a")
    assert array.shape == (75, 20)
    np.testing.assert_array_equal(open_array(path)[...], np.concatenate([first, second]))
    with pytest.raises(ShapeMismatchError):
        to_zarr(da.from_array(_data((5, 21))), path, mode="a")
    np.testing.assert_array_equal(
        open_array(path)[...], np.concatenate([first, second])
    )  # a rejected append changed nothing


def test_append_along_another_axis(tmp_path):
    path = str(tmp_path / "ax.zarr")
    first, second = _data((20, 30), seed=5), _data((20, 11), seed=6)
    to_zarr(first, path, **LAYOUT)
    to_zarr(da.from_array(second, chunks=(6, 5)), path, mode="a", append_axis=1)
    np.testing.assert_array_equal(open_array(path)[...], np.concatenate([first, second], axis=1))


def test_numpy_input_is_written_one_task_per_shard(tmp_path):
    data = _data((70, 40))
    delayed = to_zarr(data, str(tmp_path / "n.zarr"), compute=False, **LAYOUT)
    assert sum(key_split(k) == "zarrdask-write" for k in delayed.__dask_graph__()) == 3 * 2
    delayed.compute()
    np.testing.assert_array_equal(open_array(str(tmp_path / "n.zarr"))[...], data)


def test_default_chunks_follow_the_dask_blocks(tmp_path):
    array = to_zarr(da.zeros((30, 20), chunks=(10, 20)) + 1, str(tmp_path / "c.zarr"))
    assert tuple(array.chunks) == (10, 20) and array.shards is None
    assert plan_write(da.ones((30, 20), chunks=(10, 20)), array).aligned


def test_empty_shards_are_not_written(tmp_path):
    array = to_zarr(da.zeros((64, 64), chunks=(7, 13)), str(tmp_path / "e.zarr"), **LAYOUT)
    assert _chunk_keys(array.store) == []


def test_progress_shows_read_and_write_prefixes(tmp_path):
    with Prefixes() as prefixes:
        array = to_zarr(da.ones((64, 64), chunks=(7, 13)), str(tmp_path / "p.zarr"), **LAYOUT)
        from_zarr(array).persist()
    assert {"zarrdask-read", "zarrdask-write"} <= prefixes.seen


def test_reads_fuse_with_their_consumers_into_one_task_per_shard(tmp_path):
    """The read layer adds no task to a graph: after optimisation, a reduction over
    ``from_zarr`` has as many tasks as the same reduction over dask's own ``from_array``
    of an object read block by block (as ``dask.array.from_zarr`` builds it)."""

    class Blocks:
        def __init__(self, values):
            self.values, self.shape, self.dtype, self.ndim = values, values.shape, values.dtype, values.ndim

        def __getitem__(self, key):
            return self.values[key]

    array = to_zarr(da.ones((64, 64), chunks=(7, 13)), str(tmp_path / "f.zarr"), **LAYOUT)
    held = da.from_array(Blocks(np.ones(array.shape, array.dtype)), chunks=from_zarr(array).chunks,
                         asarray=False, inline_array=True)
    for graph in (lambda x: x.sum(), lambda x: (x + 1).mean(axis=0), lambda x: x[::2].max()):
        (read,) = dask.optimize(graph(from_zarr(array)))
        (memory,) = dask.optimize(graph(held))
        assert len(read.__dask_graph__()) == len(memory.__dask_graph__())
        assert np.array_equal(read.compute(), memory.compute())


def test_query_planning_on_in_a_subprocess(tmp_path):
    script = textwrap.dedent(
        f"""
        import time
        import numpy as np, dask, dask.array as da
        from dask.callbacks import Callback
        from dask.utils import key_split
        assert da.array_expr_enabled()
        from zarrdask.nodes.create import create_array
        from zarrdask.dask_io import from_zarr, to_zarr
        from zarrdask.storage import MemoryStore

        class Prefixes(Callback):  # as in tests/dask/test_dask_io.py
            def __init__(self):
                super().__init__()
                self.seen = set()
            def _pretask(self, key, dsk, state):
                self.seen.add(key_split(key))

        def prefixes(collection):
            return {{key_split(k) for k in dict(collection.__dask_graph__())}}

        data = np.arange(100 * 90, dtype="float64").reshape(100, 90)
        target = {str(tmp_path / "q.zarr")!r}
        source = da.from_array(data, chunks=(7, 13)) + 1
        write = to_zarr(source, target, chunks=(8, 8), shards=(32, 32), compute=False)
        assert "zarrdask-write" in prefixes(write), prefixes(write)
        with Prefixes() as seen:
            write.compute()
        assert "zarrdask-write" in seen.seen, seen.seen
        y = from_zarr(target)
        assert y.numblocks == (4, 3), y.numblocks
        assert y.name.startswith("zarrdask-read-"), y.name
        assert prefixes(y) == {{"zarrdask-read"}}, prefixes(y)
        assert len(dict(y.__dask_graph__())) == 12
        assert y.name == from_zarr(target).name  # deterministic
        (optimised,) = dask.optimize(y.sum())
        assert "zarrdask-read" in prefixes(optimised), prefixes(optimised)
        assert np.array_equal(y.compute(), data + 1)
        with Prefixes() as seen:
            assert float(y.sum().compute()) == float((data + 1).sum())
        assert "zarrdask-read" in seen.seen, seen.seen
        assert np.array_equal(y[5:50, 3:77].rechunk((20, 20)).compute(), (data + 1)[5:50, 3:77])
        with Prefixes() as seen:  # a read feeding a write: both show in a progress bar
            to_zarr(y * 2, {str(tmp_path / "r.zarr")!r}, chunks=(8, 8), shards=(32, 32))
        assert {{"zarrdask-read", "zarrdask-write"}} <= seen.seen, seen.seen
        assert np.array_equal(from_zarr({str(tmp_path / "r.zarr")!r}).compute(), 2 * (data + 1))

        big = create_array(MemoryStore(), shape=(1000, 1000), dtype="float64", chunks=(1, 1))  # metadata only
        start = time.perf_counter()
        z = from_zarr(big)
        z.sum()
        elapsed = time.perf_counter() - start
        assert z.numblocks == (1000, 1000) and z.name.startswith("zarrdask-read-"), (z.numblocks, z.name)
        assert elapsed < 1.0, f"graph build took {{elapsed:.3f}}s"
        print("ok")
        """
    )
    run_with_query_planning(script)
