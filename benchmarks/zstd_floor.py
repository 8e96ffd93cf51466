"""The decompression floor of a benchmark array: libzstd alone, no Zarr at all.

Every reader of ``data/sharded/<copy>`` (written by ``run.py sharding``), or of the array
at ``--path`` (e.g. the layouts of ``bench_layouts.py``, sharded or not), has to run zstd
over each of its (inner) chunks; this times only that, with the chunks already
in memory, on 1 thread and on as many threads as there are cores (each thread its own
decompression context, the GIL released inside libzstd). No reader can beat these figures
on this machine, which puts the read targets in proportion.

``--placed`` times, besides, the least work a dask ``.sum()`` task does per stored unit,
still without Zarr: each chunk decoded into its slot of a reused per-thread stack, the
stack copied into a fresh block in the array's axis order, the block summed; one unit per
task on a pool of one thread per core, as dask's threaded scheduler runs them (without its
scheduling).

    python benchmarks/zstd_floor.py [--copy zarrdask | --path ARRAY] [--repeat 7] [--placed]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import zstandard
from numcodecs import zstd as numcodecs_zstd

import zarrdask


def unit_files(path: str) -> list[tuple[tuple[int, ...], str]]:
    """The grid coordinates and file of each stored unit (keys ``c/i/j/...``), sorted by file name."""
    root = os.path.join(path, "c")
    names = sorted(n for n in glob.glob(os.path.join(root, "**", "*"), recursive=True) if os.path.isfile(n))
    return [(tuple(int(p) for p in os.path.relpath(n, root).split(os.sep)), n) for n in names]


def inner_chunks(path: str) -> list[list[memoryview]]:
    """Each stored unit's chunks (a shard's inner chunks, or the chunk itself), as slices
    of the unit's bytes held in memory, in the order of :func:`unit_files`."""
    array = zarrdask.open_array(path)
    codec = array.units.pipeline.sharding  # (the index layout)
    shards = []
    for _, name in unit_files(path):
        with open(name, "rb") as f:
            blob = f.read()
        view = memoryview(blob)
        if codec is None:
            shards.append([view])
            continue
        entries = codec.index_of(blob, name).table().reshape(-1, 2).tolist()
        shards.append([view[off: off + size] for off, size in entries])
    return shards


_local = threading.local()


def decode_frames(frames: list[memoryview]) -> None:
    """libzstd over ``frames``, the output discarded (a decompression context per thread)."""
    d = getattr(_local, "d", None)
    if d is None:
        d = _local.d = zstandard.ZstdDecompressor()
    for frame in frames:
        d.decompress(frame)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copy", default="zarrdask", help="which library's copy of the array (default zarrdask)")
    parser.add_argument("--path", help="any local array instead (overrides --copy)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--placed", action="store_true", help="also decode into place and sum, a task per unit")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    path = args.path or os.path.join(here, "data", "sharded", args.copy)
    shards = inner_chunks(path)
    decode = decode_frames
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
    if args.placed:
        placed = placed_sums(path, shards, args.repeat, cores)
        print(f"  decoded into place and summed, a task per unit on {cores} threads: "
              f"median {statistics.median(placed):.3f} s, min {min(placed):.3f} s")


def _offset(view: memoryview, whole: bytes) -> int:
    """Where a slice of ``whole`` starts in it."""
    return np.frombuffer(view, np.uint8).ctypes.data - np.frombuffer(whole, np.uint8).ctypes.data


def placed_sums(path: str, shards: list[list[memoryview]], repeat: int, threads: int) -> list[float]:
    """Times of one pass of the least ``.sum()`` work per unit (see the module docstring),
    after an untimed check that every unit's block equals zarrdask's read of it. The
    array's shape must be a whole number of units (the layouts' arrays are)."""
    array = zarrdask.open_array(path)
    chunk = array.units.pipeline.sharding.chunk_shape if array.shards else array.chunks
    unit = array.shards or array.chunks
    grid = tuple(u // c for u, c in zip(unit, chunk))
    ndim = len(unit)
    order = [*range(0, 2 * ndim, 2), *range(1, 2 * ndim, 2)]  # (g0, c0, g1, c1, ...) -> (*grid, *chunk)
    local = threading.local()

    def place(frames: list[memoryview]) -> np.ndarray:
        stack = getattr(local, "stack", None)
        if stack is None:
            stack = local.stack = np.empty((len(frames), *chunk), array.dtype)
        whole = frames[0].obj  # (the unit's bytes)
        starts = [_offset(f, whole) for f in frames]
        ranks = sorted(range(len(frames)), key=starts.__getitem__)  # (the frames in the file's order)
        if all(starts[a] + frames[a].nbytes == starts[b] for a, b in zip(ranks, ranks[1:])):
            first, last = ranks[0], ranks[-1]  # back to back: one call, in the file's order
            numcodecs_zstd.decompress(memoryview(whole)[starts[first]: starts[last] + frames[last].nbytes], stack)
        else:
            for row, k in enumerate(ranks):
                numcodecs_zstd.decompress(frames[k], stack[row])
        block = np.empty(unit, array.dtype)
        slots = block.reshape([n for pair in zip(grid, chunk) for n in pair]).transpose(order)  # (*grid, *chunk)
        slots[np.unravel_index(ranks, grid)] = stack  # (one copy, each chunk into its place)
        return block

    for (coords, _), frames in zip(unit_files(path), shards):
        region = tuple(slice(c * u, (c + 1) * u) for c, u in zip(coords, unit))
        if not np.array_equal(place(frames), array[region]):
            raise SystemExit(f"the placed unit {coords} is not the array's")
    times = []
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeat):
            t0 = time.perf_counter()
            list(pool.map(lambda frames: float(place(frames).sum()), shards))
            times.append(time.perf_counter() - t0)
    return times


if __name__ == "__main__":
    main()
