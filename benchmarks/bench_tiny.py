#!/usr/bin/env python
"""The per-shard cost of tiny shards: zarrdask on one and on two threads against TensorStore.

    python benchmarks/bench_tiny.py [--shards 1024 16384 65536] [--repeat 3] [--dir DIR]

A (sqrt(N) * 64)^2 float32 array of N shards of (64, 64) = 16 KiB, inner chunks (16, 64)
(4 per shard), zarrdask's default codecs (bytes + zstd, crc32c index), on local files.
Per run: zarrdask writes it (`create_array` + `a[...] = data`) into an emptied directory,
then a fresh open reads it whole (`a[...]`), with `threads=1` and with `threads=2`;
TensorStore reads the same array with its own threads and no cache. Every read is
compared with the data (untimed). Medians of ``--repeat`` runs, in microseconds per shard;
the load average is printed before each size (the machine may be shared).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the working tree's zarrdask

import numpy as np  # noqa: E402

import zarrdask  # noqa: E402

SHARD, INNER = (64, 64), (16, 64)


def _us_per_shard(seconds: list[float], shards: int) -> str:
    return f"{1e6 * statistics.median(seconds) / shards:7.0f}"


def run(shards: int, repeat: int, root: str) -> dict[str, list[float]]:
    side = math.isqrt(shards) * SHARD[0]
    data = np.random.default_rng(0).random((side, side), dtype=np.float32)
    path = os.path.join(root, f"tiny{shards}.zarr")
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for threads in (1, 2):
            shutil.rmtree(path, ignore_errors=True)
            t0 = time.perf_counter()
            a = zarrdask.create_array(path, shape=data.shape, dtype="float32", chunks=INNER, shards=SHARD,
                                      threads=threads)
            a[...] = data
            t1 = time.perf_counter()
            got = zarrdask.open_array(path, threads=threads)[...]
            t2 = time.perf_counter()
            assert np.array_equal(got, data)
            times.setdefault(f"write, {threads} thread{'s' * (threads > 1)}", []).append(t1 - t0)
            times.setdefault(f"read, {threads} thread{'s' * (threads > 1)}", []).append(t2 - t1)
        try:
            import tensorstore as ts
        except ImportError:
            continue
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "recheck_cached_data": False}
        t0 = time.perf_counter()
        got = ts.open(spec, context=ts.Context({"cache_pool": {"total_bytes_limit": 0}})).result().read().result()
        times.setdefault("read, TensorStore", []).append(time.perf_counter() - t0)
        assert np.array_equal(got, data)
    shutil.rmtree(path, ignore_errors=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[1024, 16384, 65536])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the arrays are written (default: the temp dir)")
    args = parser.parse_args()
    for n in args.shards:
        if math.isqrt(n) ** 2 != n:
            parser.error(f"--shards {n}: give square numbers of shards (1024, 16384, 65536)")
    root = args.dir or tempfile.mkdtemp(prefix="zarrdask-tiny-")
    print("us per shard, medians of", args.repeat)
    for n in args.shards:
        print(f"== {n} shards of 16 KiB (load average {os.getloadavg()[0]:.1f})")
        for what, seconds in run(n, args.repeat, root).items():
            print(f"   {what:<22} {_us_per_shard(seconds, n)}")


if __name__ == "__main__":
    main()
