"""Processes writing one array at once, outside Dask.

Disjoint shard-aligned regions need nothing: every key has one writer. Parts of the
same shard are read-modify-writes of one key, safe only with ``lock=``: a
``zarrdask.FileLock`` between processes of one machine, a ``distributed.Lock`` between
tasks of a cluster. Each repetition starts all writers together (a barrier) and the
result must be bit-exact. ``ZARRDASK_ACCEPTANCE_TRIALS`` sets the repetitions of the
shared-shard races (default 5; the acceptance run, 20; the disjoint regions run a quarter
of them, at least 2)::

    ZARRDASK_ACCEPTANCE_TRIALS=20 .venv/bin/python -m pytest tests/nodes/test_concurrent_writers.py -p no:cacheprovider
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrdask

REPEAT = int(os.environ.get("ZARRDASK_ACCEPTANCE_TRIALS", "5"))
WRITERS = 4
SHAPE = (64, 96)
LAYOUT = dict(chunks=(16, 16), shards=(64, 96), dtype="int32", fill_value=-1,
              compressors=[{"name": "zstd", "configuration": {"level": 1}}])

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["zarrdask", "numpy"])


def _expected(rep: int) -> np.ndarray:
    return np.random.default_rng(rep).integers(0, 2**31 - 1, SHAPE, dtype="int32")


def _write_part(url: str, rows: slice, rep: int, lock: Any, barrier: Any) -> None:
    array = zarrdask.open_array(url, mode="r+", lock=lock)
    barrier.wait()
    array[rows] = _expected(rep)[rows]


def _run_writers(url: str, parts: list[slice], rep: int, lock: Any) -> None:
    barrier = _CONTEXT.Barrier(len(parts))
    writers = [_CONTEXT.Process(target=_write_part, args=(url, rows, rep, lock, barrier)) for rows in parts]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
        assert w.exitcode == 0


def test_disjoint_shard_aligned_regions_need_no_lock(tmp_path: Path) -> None:
    for rep in range(max(2, REPEAT // 4)):
        url = str(tmp_path / f"d{rep}.zarr")
        zarrdask.create_array(url, shape=(WRITERS * 64, 96), **LAYOUT)  # one shard per writer
        parts = [slice(k * 64, (k + 1) * 64) for k in range(WRITERS)]
        barrier = _CONTEXT.Barrier(WRITERS)
        want = np.random.default_rng(rep).integers(0, 2**31 - 1, (WRITERS * 64, 96), dtype="int32")
        np.save(tmp_path / "want.npy", want)
        writers = [_CONTEXT.Process(target=_write_rows, args=(url, rows, str(tmp_path / "want.npy"), barrier))
                   for rows in parts]
        for w in writers:
            w.start()
        for w in writers:
            w.join(120)
            assert w.exitcode == 0
        np.testing.assert_array_equal(zarrdask.open_array(url)[...], want, err_msg=f"repetition {rep}")


def _write_rows(url: str, rows: slice, source: str, barrier: Any) -> None:
    array = zarrdask.open_array(url, mode="r+")
    barrier.wait()
    array[rows] = np.load(source)[rows]


def test_parts_of_one_shard_with_a_file_lock(tmp_path: Path) -> None:
    lock = zarrdask.FileLock(tmp_path / "array.lock")
    parts = [slice(k * 16, (k + 1) * 16) for k in range(WRITERS)]  # 4 writers, one shard
    for rep in range(REPEAT):
        url = str(tmp_path / f"s{rep}.zarr")
        zarrdask.create_array(url, shape=SHAPE, **LAYOUT)
        _run_writers(url, parts, rep, lock)
        np.testing.assert_array_equal(zarrdask.open_array(url)[...], _expected(rep), err_msg=f"repetition {rep}")


def test_file_lock_excludes_threads_and_processes(tmp_path: Path) -> None:
    import threading

    lock = zarrdask.FileLock(tmp_path / "l")
    inside: list[int] = []
    overlaps: list[int] = []

    def hold(i: int) -> None:
        for _ in range(50):
            with lock:
                inside.append(i)
                if len(inside) > 1:
                    overlaps.append(i)
                inside.remove(i)

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    zarrdask.create_array(tmp_path / "a.zarr", shape=(2,), chunks=(1,), dtype="i1")
    with pytest.raises(zarrdask.ZarrdaskError, match="acquire"):
        zarrdask.open_array(tmp_path / "a.zarr", lock="not a lock")


@pytest.mark.distributed
def test_parts_of_one_shard_with_a_distributed_lock(tmp_path: Path) -> None:
    import distributed

    parts = [slice(k * 16, (k + 1) * 16) for k in range(WRITERS)]
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=2, dashboard_address=None) \
            as cluster, distributed.Client(cluster, set_as_default=False) as client:
        for rep in range(REPEAT):
            url = str(tmp_path / f"t{rep}.zarr")
            zarrdask.create_array(url, shape=SHAPE, **LAYOUT)
            lock = distributed.Lock(f"zarrdask-test-{rep}")
            futures = client.map(_write_task, [url] * WRITERS, parts, [rep] * WRITERS, [lock] * WRITERS, pure=False)
            client.gather(futures)
            np.testing.assert_array_equal(zarrdask.open_array(url)[...], _expected(rep), err_msg=f"repetition {rep}")


def _write_task(url: str, rows: slice, rep: int, lock: Any) -> None:
    zarrdask.open_array(url, mode="r+", lock=lock)[rows] = _expected(rep)[rows]
