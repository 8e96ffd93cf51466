#!/usr/bin/env python
"""Where a cold window read's time goes: the shard index, step by step, in its place.

    python benchmarks/probes/cold_index.py [--rounds 4] [--layout small-inner] [--data-dir benchmarks/data]

The 200 unaligned 1 x 64 x 64 windows of ``bench_layouts.py``'s window rows, on that
layout's cached array (run ``bench_layouts.py --layouts <layout> --workloads windows``
first). Each round, alternated:

* **cold**: ``zarrdask.open_array`` anew (untimed) before each read, as the cold row does;
  inside it, the shard's one store call (``store.get_then``: open, size, the index read,
  decoded and parsed, the chunks read, close), the index decode (checksum; the bytes codec
  only views the bytes) and its wrapping (``ShardIndex.parse``: the entries are checked as
  the read looks them up), each timed in place by a wrapper (per index: median ns; the
  store call includes the other two);
* **cold, index bare**: the index's bytes taken as they are (no checksum, no codec, no
  check; the probe's patch again): what is left of a cold read over a warm one when the
  index costs only its request;
* **warm**: one open, every window read once untimed first;
* the floors of both rows (``zstd_floor.window_floor``: ``os.pread`` + libzstd, the index
  parsed with ``np.frombuffer``).

Then, once, the steps alone on one shard's index bytes (medians, us): in a loop of their
own, and each right after a fresh ``open_array`` (untimed), as a cold read meets them; beside
them the floor's index read (open, ``os.pread``, ``np.frombuffer``, close).

Medians of the per-read latencies (us), then of the rounds. A step costs about three times
as much in place as in a loop of its own: each read's decodes (about 300 us of libzstd over
4 x 64 KiB) leave the caches cold for the Python and numpy calls that follow.
"""

from __future__ import annotations

import array
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

    import numpy as np

    import zarrdask
    import zstd_floor
    from zarrdask.codecs.sharding import ShardIndex, ShardingCodec

    steps: dict[str, list[int]] = defaultdict(list)

    def timed(label: str, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter_ns()
            try:
                return fn(*a, **k)
            finally:
                steps[label].append(time.perf_counter_ns() - t0)
        return wrapper

    parse, decode = ShardIndex.parse.__func__, ShardingCodec.read_index

    def bare_index(self, data, key, shard_size=None):
        return ShardIndex(array.array("Q", bytes(memoryview(data)[:16 * int(np.prod(self.grid_shape))])),
                          self.grid_shape)

    def read_index(self, data, key, shard_size=None):  # (decode and parse apart, as read_index does them)
        table = timed("index decode", self.index_pipeline.decode_to_bytes)(data)
        data_end = None if shard_size is None else shard_size - (self.index_size if self.index_location == "end" else 0)
        return ShardIndex.parse(table, self.grid_shape, self._data_start, data_end, key)

    def reads(cold: bool) -> float:
        lat = []
        held = None if cold else zarrdask.open_array(path)
        if held is not None:
            for sel in windows:
                held[sel]
        for sel in windows:
            a = zarrdask.open_array(path) if cold else held
            if cold:
                a.units.fetch.store.get_then = timed("index + chunks", a.units.fetch.store.get_then)
            t0 = time.perf_counter()
            a[sel]
            lat.append(time.perf_counter() - t0)
        return statistics.median(lat) * 1e6

    floors = {cold: zstd_floor.window_floor(path, windows, cold)[0] for cold in (True, False)}
    rows: dict[str, list[float]] = defaultdict(list)
    ShardingCodec.read_index = read_index
    try:
        for _ in range(args.rounds):
            steps.clear()
            ShardIndex.parse = classmethod(timed("index parse", parse))
            rows["cold"].append(reads(True))
            fetched = {k: statistics.median(v) / 1e3 for k, v in steps.items()}
            ShardIndex.parse = classmethod(parse)
            ShardingCodec.read_index = bare_index
            rows["cold, index bare"].append(reads(True))
            ShardingCodec.read_index = read_index
            rows["warm"].append(reads(False))
            for cold, fn in floors.items():
                rows[f"floor, {'cold' if cold else 'warm'}"].append(fn().seconds * 1e6)
            print("  round: " + ", ".join(f"{k} {v[-1]:.0f} us" for k, v in rows.items())
                  + " | per index: " + ", ".join(f"{k} {v:.1f} us" for k, v in fetched.items()), flush=True)
    finally:
        ShardIndex.parse, ShardingCodec.read_index = classmethod(parse), decode
    print(f"{args.layout}, 200 windows 1x64x64, medians of {args.rounds} rounds:")
    for k, v in rows.items():
        print(f"  {k:22s} {statistics.median(v):6.0f} us")
    alone(path)


def alone(path: str) -> None:
    """The index steps on one shard's index, in a loop and each after a fresh open."""
    import os

    import numpy as np

    import zarrdask
    from zarrdask.codecs.sharding import ShardIndex

    first = zarrdask.open_array(path)
    key = first.units.key((0,) * first.ndim)
    codec = first.units._codec_at((0,) * first.ndim)
    raw = first.units.fetch.store.get_ranges([(key, codec.index_request())])[0]
    table = codec.index_pipeline.decode_to_bytes(raw)
    name = first.units.fetch.store.path_of(key)
    size = os.path.getsize(name)

    def floor_index(_) -> None:
        fd = os.open(name, os.O_RDONLY)
        try:
            np.frombuffer(os.pread(fd, codec.index_size, size - codec.index_size), "<u8", (codec.index_size - 4) // 8)
        finally:
            os.close(fd)

    steps = {
        "index request": lambda a: a.units.fetch.store.get_ranges_versioned([(key, codec.index_request())]),
        "index decode": lambda a: a.units._codec_at((0,) * a.ndim).index_pipeline.decode_to_bytes(raw),
        "index parse": lambda a: ShardIndex.parse(table, codec.grid_shape, 0, None, key),
        "decode + parse": lambda a: a.units._codec_at((0,) * a.ndim).read_index(raw, key),
        "whole check": lambda a: ShardIndex.parse(table, codec.grid_shape, 0, None, key).check(),
        "floor's index read": floor_index,
    }
    print(f"one shard's index ({codec.index_size} bytes), medians:")
    for label, step in steps.items():
        t0 = time.perf_counter_ns()
        for _ in range(5000):
            step(first)
        in_loop = (time.perf_counter_ns() - t0) / 5000 / 1e3
        after = []
        for _ in range(400):
            a = zarrdask.open_array(path)
            t0 = time.perf_counter_ns()
            step(a)
            after.append(time.perf_counter_ns() - t0)
        print(f"  {label:22s} in a loop {in_loop:5.1f} us, after an open {statistics.median(after) / 1e3:5.1f} us")


if __name__ == "__main__":
    main()
