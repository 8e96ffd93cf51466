#!/usr/bin/env python
"""What a cold window read's fetch (a shard's index, then its chunks) costs in place, against
the least a fetch in Python can do.

    python benchmarks/probes/cold_fetch.py [--rounds 4] [--layout small-inner] [--data-dir benchmarks/data]

The 200 unaligned 1 x 64 x 64 windows of ``bench_layouts.py``'s window rows, on that
layout's cached array (run ``bench_layouts.py --layouts <layout> --workloads windows``
first). Window by window, each after a fresh ``zarrdask.open_array`` (untimed), as the cold
row reads them, alternated in one process:

* **as it is**: the read;
* **bare fetch**: the same read with ``ShardFetch.ranges`` replaced (the probe patches it)
  by the least a fetch does: per shard one open, the index's suffix read, its crc32c
  checked and its entries copied, the needed chunks read a run of neighbours at a time, one
  close (no index cache, no versions, no store layer);
* **floor**: ``zstd_floor.window_floor``'s cold read of the same window (no Zarr code).

Medians of the per-read latencies (us) per round, then of the rounds; the order of the
readers turns each round. "as it is" minus "bare fetch" is what the fetch's layers (the
store call, versions, the index cache, coalescing) cost in place.
"""

from __future__ import annotations

import array
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/probes
BENCH = HERE.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))  # the working tree's zarrdask


def main() -> None:
    from harness import window_probe

    args, path, windows = window_probe(__doc__)

    from crc32c import crc32c

    import zarrdask
    import zstd_floor
    from zarrdask.codecs.sharding import ShardIndex
    from zarrdask.nodes.units.shard_fetch import InnerJob, ShardFetch

    floor_read = zstd_floor.window_floor(path, windows, True)[1]
    first = zarrdask.open_array(path)
    codec = first.units._codec_at((0,) * first.ndim)
    index_size, grid = codec.index_size, codec.grid_shape
    assert codec.index_location == "end", "the bare fetch reads an index at the end"
    fetch = ShardFetch.ranges

    def bare(self, units, targets):  # (the least a fetch does; see the module docstring)
        jobs = []
        for unit, target in zip(units, targets):
            fd = os.open(os.path.join(path, unit.key), os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                raw = memoryview(os.pread(fd, index_size, size - index_size))
                if crc32c(raw[:-4]) != int.from_bytes(raw[-4:], "little"):
                    raise ValueError(f"shard {unit.key}: index checksum")
                entries = array.array("Q")
                entries.frombytes(raw[:-4])
                index = ShardIndex(entries, grid, 0, size - index_size, unit.key)
                inner = [InnerJob(unit.key, placement, target) for placement in unit.chunks]
                spans = index.lookup([job.placement.position for job in inner])
                order = sorted((i for i, s in enumerate(spans) if s is not None), key=lambda i: spans[i][0])
                k = 0
                while k < len(order):  # (a run of neighbouring chunks: one read)
                    end = k + 1
                    while end < len(order) and spans[order[end]][0] == spans[order[end - 1]][1]:
                        end += 1
                    start = spans[order[k]][0]
                    blob = memoryview(os.pread(fd, spans[order[end - 1]][1] - start, start))
                    for i in order[k:end]:
                        inner[i].data = blob[spans[i][0] - start: spans[i][1] - start]
                    k = end
                jobs.extend(inner)
            finally:
                os.close(fd)
        return jobs

    rows: dict[str, list[float]] = defaultdict(list)
    readers = ["as it is", "bare fetch", "floor"]
    try:
        for r in range(args.rounds):
            lat: dict[str, list[float]] = defaultdict(list)
            order = readers[r % 3:] + readers[: r % 3]
            for w in windows:
                for mode in order:
                    if mode == "floor":
                        t0 = time.perf_counter()
                        floor_read(w)
                    else:
                        ShardFetch.ranges = fetch if mode == "as it is" else bare
                        a = zarrdask.open_array(path)
                        t0 = time.perf_counter()
                        a[w]
                    lat[mode].append(time.perf_counter() - t0)
            for k, v in lat.items():
                rows[k].append(statistics.median(v) * 1e6)
            print("  round: " + ", ".join(f"{k} {v[-1]:.0f} us" for k, v in rows.items()), flush=True)
    finally:
        ShardFetch.ranges = fetch
    ShardFetch.ranges = bare
    try:
        assert all((zarrdask.open_array(path)[w] == first[w]).all() for w in windows[:20]), "the bare fetch read wrong"
    finally:
        ShardFetch.ranges = fetch
    print(f"{args.layout}, 200 windows 1x64x64, medians of {args.rounds} rounds:")
    for k, v in rows.items():
        print(f"  {k:12s} {statistics.median(v):6.0f} us")
    print(f"  the fetch's layers in place: {statistics.median(rows['as it is']) - statistics.median(rows['bare fetch']):.0f} us")


if __name__ == "__main__":
    main()
