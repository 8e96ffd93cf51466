"""The decompression floor of a benchmark array: libzstd alone, no Zarr at all.

Every reader of ``data/sharded/<copy>`` (written by ``run.py sharding``), or of the array
at ``--path`` (e.g. the layouts of ``bench_layouts.py``, sharded or not), has to run zstd
over each of its (inner) chunks; this times only that, with the chunks already
in memory, on 1 thread and on as many threads as there are cores (each thread its own
decompression context, the GIL released inside libzstd). No reader can beat these figures
on this machine, which puts the read targets in proportion.

    python benchmarks/zstd_floor.py [--copy zarrdask | --path ARRAY] [--repeat 7]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import zstandard

import zarrdask


def inner_chunks(path: str) -> list[list[memoryview]]:
    """Each stored unit's chunks (a shard's inner chunks, or the chunk itself), as slices
    of the unit's bytes held in memory."""
    array = zarrdask.open_array(path)
    codec = array.units.pipeline.sharding  # (the index layout)
    shards = []
    for name in sorted(glob.glob(os.path.join(path, "c", "**", "*"), recursive=True)):
        if os.path.isfile(name):
            with open(name, "rb") as f:
                blob = f.read()
            view = memoryview(blob)
            if codec is None:
                shards.append([view])
                continue
            entries = codec.index_of(blob, name).table().reshape(-1, 2).tolist()
            shards.append([view[off: off + size] for off, size in entries])
    return shards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copy", default="zarrdask", help="which library's copy of the array (default zarrdask)")
    parser.add_argument("--path", help="any local array instead (overrides --copy)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    shards = inner_chunks(args.path or os.path.join(here, "data", "sharded", args.copy))
    local = threading.local()

    def decode(frames: list[memoryview]) -> None:
        d = getattr(local, "d", None)
        if d is None:
            d = local.d = zstandard.ZstdDecompressor()
        for frame in frames:
            d.decompress(frame)

    cores = os.cpu_count() or 1
    times: dict[int, list[float]] = {1: [], cores: []}
    with ThreadPoolExecutor(cores) as pool:
        for _ in range(args.repeat):
            for n in times:
                t0 = time.perf_counter()
                if n == 1:
                    for frames in shards:
                        decode(frames)
                else:
                    list(pool.map(decode, shards))
                times[n].append(time.perf_counter() - t0)
    n_chunks = sum(len(s) for s in shards)
    print(f"{len(shards)} stored units, {n_chunks} chunks; libzstd decompression only:")
    for n, ts in times.items():
        print(f"  {n} thread(s): median {statistics.median(ts):.3f} s, min {min(ts):.3f} s")


if __name__ == "__main__":
    main()
