"""What merging the units an array's edge cuts costs a write (session 30).

On stores that guard partial writes, a write that covers a shard or chunk the array's
edge cuts merges it (reads what is stored there, decodes it, writes it back guarded), so
rows another process appended past this open's edge survive. ``safe_chunks=False`` writes
such units whole, as before: the two are timed alternately in one process.

    .venv/bin/python benchmarks/probes/edge_writes.py [--repeat 7]

A (1000, 1000, 10) float32 array (40 MB; zstd-1), where 15 of 64 chunks (128 x 128 x 10)
and 7 of 16 shards (256 x 256 x 10 of 32 x 32 x 10 chunks) lie on an edge: each written
whole by one numpy write into a fresh array (nothing stored at the edges yet) and again
over itself (every edge unit stored).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time

import numpy as np

import zarrdask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="zarrdask-edges-")
    x = np.random.default_rng(0).random((1000, 1000, 10)).astype("f4")
    zstd = {"name": "zstd", "configuration": {"level": 1}}
    layouts = {"chunks 128x128x10": {"chunks": (128, 128, 10)},
               "shards 256x256x10 of 32x32x10": {"chunks": (32, 32, 10), "shards": (256, 256, 10)}}
    times: dict[tuple[str, str, bool], list[float]] = {}
    try:
        for rep in range(args.repeat):
            for k, (name, layout) in enumerate(layouts.items()):
                for merged in (True, False):
                    a = zarrdask.create_array(f"{root}/{rep}-{k}-{merged}.zarr", shape=x.shape, dtype=x.dtype,
                                              compressors=zstd, **layout).with_options(safe_chunks=merged)
                    for when in ("into a fresh array", "over itself"):
                        start = time.perf_counter()
                        a[...] = x
                        times.setdefault((name, when, merged), []).append(time.perf_counter() - start)
        print(f"medians of {args.repeat} (ms): edge units merged (default) / written whole (safe_chunks=False)")
        for name in layouts:
            for when in ("into a fresh array", "over itself"):
                m, w = (statistics.median(times[(name, when, merged)]) * 1e3 for merged in (True, False))
                print(f"  {name:31s} {when:19s} {m:7.1f} / {w:7.1f}  = {m / w:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
