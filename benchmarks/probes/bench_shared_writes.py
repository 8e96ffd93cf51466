"""What guarding partial-shard writes costs on local files (issue 41).

Whole-shard writes take each key's lock (the file the value is written into) and nothing
else; partial-shard writes hold it from the shard's read to the rename. Run this in two
checkouts (before and after) on a quiet machine and compare the medians:

    .venv/bin/python benchmarks/probes/bench_shared_writes.py --repeat 7

Rows: the scenarios' write rows on 512 MiB of float32 (zstd-1; ``--size-mib``): a numpy
write into 4 MiB chunks and into 16 MiB shards of 64 KiB chunks, a dask write with chunks =
shards and one with chunks cutting shards; then 1,024 whole shards of 16 KiB, a shard
written in 8 region writes of one eighth each (one process, in turn), and 4 processes
writing quarters of one shard at once (each a ``to_zarr`` of its region).
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import zarrdask

_CONTEXT = multiprocessing.get_context("forkserver")


def _timed(fn: Callable[[], None], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def _quarter(url: str, rows: slice, barrier: Any) -> None:
    import dask.array as da

    x = da.from_array(np.full((rows.stop - rows.start, 4000), rows.start, dtype="f8"), chunks=(25, 4000))
    barrier.wait()
    zarrdask.to_zarr(x, url, region=(rows, slice(None)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--dir", default=None, help="where arrays are written (default: a temporary directory)")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="zarrdask-shared-", dir=args.dir)
    rng = np.random.default_rng(0)
    rows = []
    try:
        import dask.array as da

        zstd = {"name": "zstd", "configuration": {"level": 1}}
        shape = (max(16, args.size_mib // 4 // 16 * 16), 1024, 1024)
        x = rng.random(shape, dtype="f4")
        layouts = {"numpy write, 4 MiB chunks": dict(chunks=(4, 512, 512)),
                   "numpy write, 16 MiB shards of 64 KiB chunks": dict(chunks=(4, 64, 64), shards=(16, 512, 512))}
        for name, layout in layouts.items():
            def write(layout: dict[str, Any] = layout) -> None:
                zarrdask.create_array(f"{root}/w.zarr", shape=shape, dtype="f4", compressors=zstd, overwrite=True,
                                      **layout)[...] = x
            rows.append((name, _timed(write, args.repeat)))
        for name, blocks in (("dask write, chunks = shards", (16, 512, 512)),
                             ("dask write, chunks cutting shards", (12, 384, 384))):
            source = da.from_array(x, chunks=blocks)
            rows.append((name, _timed(lambda s=source: zarrdask.to_zarr(
                s, f"{root}/d.zarr", chunks=(4, 64, 64), shards=(16, 512, 512), compressors=zstd, mode="w"),
                args.repeat)))
        del x

        tiny = zarrdask.create_array(f"{root}/tiny.zarr", shape=(1024, 4096), dtype="f4", chunks=(1, 1024),
                                     shards=(1, 4096), compressors=None)
        y = rng.random(tiny.shape, dtype="f4")
        rows.append(("whole shards: 1,024 of 16 KiB", _timed(lambda: tiny.__setitem__(..., y), args.repeat)))

        part = zarrdask.create_array(f"{root}/part.zarr", shape=(80, 4000), dtype="f8", chunks=(10, 100),
                                     shards=(80, 4000))
        z = rng.random(part.shape)

        def eighths() -> None:
            for k in range(0, 80, 10):
                part[k: k + 10] = z[k: k + 10]

        rows.append(("partial: one 2.4 MiB shard in 8 writes of 1/8", _timed(eighths, args.repeat)))

        url = f"{root}/quarters.zarr"
        zarrdask.create_array(url, shape=(100, 4000), dtype="f8", chunks=(10, 100), shards=(100, 4000))

        def quarters() -> None:
            barrier = _CONTEXT.Barrier(4)
            jobs = [_CONTEXT.Process(target=_quarter, args=(url, slice(k, k + 25), barrier)) for k in range(0, 100, 25)]
            for j in jobs:
                j.start()
            for j in jobs:
                j.join()
            assert all(j.exitcode == 0 for j in jobs)

        rows.append(("4 processes, a quarter of one shard each (incl. start-up)", _timed(quarters, args.repeat)))
        got = zarrdask.open_array(url)[...]
        lost = int((got != np.repeat(np.arange(0, 100, 25), 25)[:, None]).sum())
    finally:
        shutil.rmtree(root)
    print(f"zarrdask {zarrdask.__version__} ({zarrdask.__file__})")
    for name, (median, best) in rows:
        print(f"{name:60s} median {median * 1e3:9.2f} ms   min {best * 1e3:9.2f} ms")
    print(f"cells lost by the 4 processes in the last run: {lost} of {got.size}")


if __name__ == "__main__":
    main()
