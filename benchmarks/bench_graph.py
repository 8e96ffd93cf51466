#!/usr/bin/env python
"""Write-graph build time: ``zarrdask.to_zarr(..., compute=False)`` against ``dask.array.to_zarr``.

    python benchmarks/bench_graph.py [--repeat R]

Times building the (uncomputed) write graph, metadata write included, for a
100,000 x 100,000 float32 array: 38,416 shards of 512 x 512 (aligned dask chunks, and
misaligned 500 x 500 chunks), and 1,000,000 shards of 100 x 100 (chunks 100 x 100 and
99 x 101). ``dask.array.to_zarr`` (zarr-python) builds the aligned 38,416-shard graph in
the same run; it cannot write misaligned chunks into shards correctly, so it has no such
row. The dask arrays are made outside the timing. Medians of R interleaved repetitions.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the working tree's zarrdask

import dask.array as da  # noqa: E402

import zarrdask  # noqa: E402

N = 100_000


def _zarrdask(chunks: tuple[int, int], shard: int, inner: int):
    x = da.zeros((N, N), chunks=chunks, dtype="f4")
    return lambda path: zarrdask.to_zarr(x, path, chunks=(inner, inner), shards=(shard, shard), mode="w",
                                         compute=False)


def _dask_zarr_python(chunks: tuple[int, int], shard: int, inner: int):
    x = da.zeros((N, N), chunks=chunks, dtype="f4")
    return lambda path: da.to_zarr(x, path, chunks=(inner, inner), shards=(shard, shard), overwrite=True,
                                   compute=False, zarr_format=3)


CASES = {
    "38,416 shards, aligned: zarrdask": _zarrdask((512, 512), 512, 128),
    "38,416 shards, aligned: dask.array.to_zarr (zarr-python)": _dask_zarr_python((512, 512), 512, 128),
    "38,416 shards, misaligned (500 x 500): zarrdask": _zarrdask((500, 500), 512, 128),
    "1,000,000 shards, aligned: zarrdask": _zarrdask((100, 100), 100, 50),
    "1,000,000 shards, misaligned (99 x 101): zarrdask": _zarrdask((99, 101), 100, 50),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    times: dict[str, list[float]] = {name: [] for name in CASES}
    root = Path(tempfile.mkdtemp(prefix="zarrdask-graph-"))
    try:
        for rep in range(args.repeat + 1):  # round 0 warms up
            for name, build in CASES.items():
                path = str(root / f"{abs(hash(name))}.zarr")
                start = time.perf_counter()
                build(path)
                elapsed = time.perf_counter() - start
                if rep:
                    times[name].append(elapsed)
                shutil.rmtree(path, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"write graph build, 100,000 x 100,000 float32, median of {args.repeat}")
    for name, ts in times.items():
        print(f"  {name:58s} {statistics.median(ts) * 1000:8.1f} ms  (min {min(ts) * 1000:.1f})")
    ours = statistics.median(times["38,416 shards, aligned: zarrdask"])
    peer = statistics.median(times["38,416 shards, aligned: dask.array.to_zarr (zarr-python)"])
    print(f"  ratio dask.array.to_zarr / zarrdask (aligned, 38,416 shards): {peer / ours:.1f}x")


if __name__ == "__main__":
    main()
