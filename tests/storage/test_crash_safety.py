"""Writers killed with SIGKILL mid-write leave every key at its old or new value.

A writer process rewrites a sharded array over and over, each generation with its own
value, and is killed at random moments (local files and S3 on a loopback moto server);
worker processes of a distributed cluster are killed at random moments during
``to_zarr``. Every stored value carries crc32c checksums (inner chunks and shard
index), so a torn value cannot read as data: after every kill each shard must read
whole, and hold one generation. Re-running the write completes it, and the temporary
files killed writers left are found and removed by ``zarrdask.remove_temporary_files``.

``ZARRDASK_ACCEPTANCE_TRIALS`` sets the kills per case: the suite runs 5, the acceptance
run (the README's "20 kills") 20::

    ZARRDASK_ACCEPTANCE_TRIALS=20 .venv/bin/python -m pytest tests/storage/test_crash_safety.py -p no:cacheprovider
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrdask
from zarrdask.storage.local import is_temporary_name

from _s3 import s3_storage_options

pytestmark = pytest.mark.timeout(600)

KILLS = int(os.environ.get("ZARRDASK_ACCEPTANCE_TRIALS", "5"))
SHAPE = (32, 256, 256)  # float32: 8 MiB, in 4 shards of 2 MiB and 64 KiB inner chunks
SHARDS = (8, 256, 256)
CHUNKS = (4, 64, 64)
CODECS = dict(chunks=CHUNKS, shards=SHARDS, compressors=[{"name": "crc32c"}], fill_value=-1.0, dtype="float32")

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["zarrdask", "numpy", "s3fs"])


def _rewrite_forever(url: str, options: dict[str, Any] | None, first: int, ready: Any) -> None:
    """The writer process: generation g writes the value g everywhere, g = first, first + 1, ..."""
    array = zarrdask.open_array(url, mode="r+", storage_options=options)
    generation = first
    while True:
        array[...] = np.float32(generation)
        ready.set()
        generation += 1


def _write_once(url: str, options: dict[str, Any] | None, value: int) -> None:
    zarrdask.open_array(url, mode="r+", storage_options=options)[...] = np.float32(value)


def _shard_generations(url: str, options: dict[str, Any] | None) -> list[float]:
    """Each shard's one value (asserting it is whole and uniform); reads verify every crc32c."""
    values = zarrdask.open_array(url, storage_options=options)[...]
    found = []
    for k in range(SHAPE[0] // SHARDS[0]):
        shard = values[k * SHARDS[0]:(k + 1) * SHARDS[0]]
        assert (shard == shard.flat[0]).all(), f"shard {k} holds values of several writes"
        found.append(float(shard.flat[0]))
    return found


def _kill_writers(url: str, options: dict[str, Any] | None, seed: int) -> int:
    """Kill a writer at ``KILLS`` random moments; check every key after each kill; return
    the number of generations seen."""
    rng = random.Random(seed)
    zarrdask.create_array(url, shape=SHAPE, storage_options=options, **CODECS)
    highest = -1.0
    for kill in range(KILLS):
        ready = _CONTEXT.Event()
        first = (kill + 1) * 1000
        writer = _CONTEXT.Process(target=_rewrite_forever, args=(url, options, first, ready), daemon=True)
        writer.start()
        assert ready.wait(120), "the writer never completed a first generation"
        time.sleep(rng.uniform(0, 0.25))
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()
        assert writer.exitcode == -signal.SIGKILL
        generations = _shard_generations(url, options)
        assert all(first <= g < first + 1000 for g in generations), (kill, generations)
        highest = max(highest, *generations)
    final = _CONTEXT.Process(target=_write_once, args=(url, options, 7))
    final.start()
    final.join()
    assert final.exitcode == 0
    assert _shard_generations(url, options) == [7.0] * (SHAPE[0] // SHARDS[0])
    return int(highest)


def _temporary_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if is_temporary_name(p.name))


def test_sigkill_local_writer(tmp_path: Path) -> None:
    root = tmp_path / "a.zarr"
    _kill_writers(str(root), None, seed=1)
    left = _temporary_files(root)
    assert zarrdask.remove_temporary_files(str(root)) == left
    assert _temporary_files(root) == [] and zarrdask.remove_temporary_files(root) == []
    # listing never shows them; the data is unaffected by their removal
    assert _shard_generations(str(root), None) == [7.0] * 4
    print(f"local: {len(left)} temporary files left by {KILLS} kills")


def test_remove_temporary_files_spares_recent_writes_when_asked(tmp_path: Path) -> None:
    array = zarrdask.create_array(tmp_path / "a.zarr", shape=(4,), chunks=(2,), dtype="i1")
    array[...] = 1
    stale = tmp_path / "a.zarr" / "c" / f".0.{'a' * 32}.tmp"
    stale.write_bytes(b"partial")
    assert zarrdask.remove_temporary_files(tmp_path / "a.zarr", older_than=3600) == []
    assert stale.exists()
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert zarrdask.remove_temporary_files(tmp_path / "a.zarr", older_than=3600) == ["c/.0." + "a" * 32 + ".tmp"]
    assert zarrdask.open_array(tmp_path / "a.zarr")[...].tolist() == [1, 1, 1, 1]


@pytest.mark.s3
def test_sigkill_s3_writer(s3_endpoint: str, s3_url: str) -> None:
    options = s3_storage_options(s3_endpoint)
    _kill_writers(s3_url, options, seed=2)
    assert zarrdask.remove_temporary_files(zarrdask.open_store(s3_url, mode="a", storage_options=options)) == []


def _workers_back(client, expected: int) -> int:
    """Wait for the nannies to restart the killed workers; return how many to wait for
    next time. Now and then a nanny does not restart its worker (distributed's race, not
    zarrdask's): the kills then go on with the one left, which keeps testing what this is
    about, torn writes, without waiting for the lost one after every kill."""
    try:
        client.wait_for_workers(expected, timeout=30)
        return expected
    except TimeoutError:
        client.wait_for_workers(1, timeout=120)
        return 1


def _completed(future, killed: type[Exception], timeout: float = 120) -> bool:
    """True when a write survived a worker's kill, False when the kill failed it (the worker
    was killed, or the future cancelled); anything else fails the test. Its status is
    polled: a future the scheduler cancelled after a kill once left ``result()`` waiting
    for its whole timeout (distributed's race, not zarrdask's)."""
    deadline = time.monotonic() + timeout
    while future.status == "pending":
        assert time.monotonic() < deadline, f"a write still pending {timeout} s after the kill"
        time.sleep(0.05)
    if future.status == "error":
        exc = future.exception()
        assert isinstance(exc, killed), f"the write failed otherwise than by the kill: {exc!r}"
    return future.status == "finished"


@contextmanager
def _process_cluster(tmp_path: Path, workers: int) -> Iterator[str]:
    """A scheduler and ``workers`` nanny-managed workers in processes of their own, started
    as a deployment starts them (``dask scheduler``, ``dask worker --nanny``); yields the
    scheduler file. (Not ``LocalCluster``: its bookkeeping of workers dies on a KeyError when
    workers come and go fast, dask/distributed#5407, and fails its close.) Everything it
    started is stopped with its process group."""
    scheduler_file = tmp_path / "scheduler.json"
    # (a worker killed while another fetches from it: fail the fetch in seconds, not 30)
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"}
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        with open(tmp_path / f"{name}.log", "wb") as log:
            procs.append(subprocess.Popen([sys.executable, "-m", f"distributed.cli.dask_{name}", *args], env=env,
                                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
              "--scheduler-file", str(scheduler_file))
        deadline = time.monotonic() + 60
        while not (scheduler_file.exists() and scheduler_file.read_text().rstrip().endswith("}")):
            assert time.monotonic() < deadline and procs[0].poll() is None, "the scheduler did not start"
            time.sleep(0.1)
        start("worker", "--scheduler-file", str(scheduler_file), "--nworkers", str(workers), "--nthreads", "1",
              "--nanny", "--host", "127.0.0.1", "--no-dashboard", "--local-directory", str(tmp_path / "workers"))
        yield str(scheduler_file)
    finally:
        for proc in reversed(procs):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.mark.distributed
def test_sigkill_distributed_workers(tmp_path: Path) -> None:
    import dask.array as da
    import distributed

    url = str(tmp_path / "d.zarr")
    zarrdask.create_array(url, shape=SHAPE, **CODECS)
    rng = random.Random(3)
    during = failed = 0

    def write(value: int) -> distributed.Future:
        x = da.full(SHAPE, value, dtype="float32", chunks=(4, 128, 256))  # 4 source blocks per shard
        return client.compute(zarrdask.to_zarr(x, url, mode="r+", compute=False))

    with _process_cluster(tmp_path, workers=2) as scheduler_file, \
            distributed.Client(scheduler_file=scheduler_file, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=120)
        write(999).result(timeout=120)  # (the first write warms the workers up: time the second)
        started = time.perf_counter()
        write(999).result(timeout=120)
        duration = time.perf_counter() - started
        workers = 2
        for kill in range(KILLS):
            workers = _workers_back(client, workers)
            value = 1000 + kill
            future = write(value)
            time.sleep(rng.uniform(0, duration))
            during += future.status == "pending"
            os.kill(rng.choice(list(client.run(os.getpid).values())), signal.SIGKILL)
            failed += not _completed(future, distributed.KilledWorker)
            generations = _shard_generations(url, None)
            assert all(999 <= g <= value for g in generations), (kill, generations)
        write(7).result(timeout=120)
    assert _shard_generations(url, None) == [7.0] * 4
    left = _temporary_files(Path(url))
    assert zarrdask.remove_temporary_files(url) == left and _temporary_files(Path(url)) == []
    print(f"distributed: {KILLS} workers killed, {during} while the write ({duration:.2f} s warm) was running, "
          f"{failed} writes failed (and were re-run), {len(left)} temporary files left")
