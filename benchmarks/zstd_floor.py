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
import itertools
import os
import statistics
import threading
import time
import uuid
import weakref
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


# --------------------------------------------------------------------------- floors of benchmark rows
#
# The floors the benchmark tables print beside every row (harness.Floor): the same work as
# the row with no Zarr code in the timed part. zarrdask is used only, untimed, to find the
# chunks' bytes in each stored unit (the shard index), as above.


class Units:
    """An array's stored units held in memory: each unit's chunk frames, where it goes, and the
    geometry (``chunk`` the inner chunk, or the chunk when unsharded; ``unit`` the shard or chunk)."""

    def __init__(self, path: str):
        array = zarrdask.open_array(path)
        self.shape = tuple(array.shape)
        self.dtype = np.dtype(array.dtype)
        self.unit = tuple(array.shards or array.chunks)
        self.chunk = tuple(array.units.pipeline.sharding.chunk_shape if array.shards else array.chunks)
        if any(s % u for s, u in zip(self.shape, self.unit)) or any(u % c for u, c in zip(self.unit, self.chunk)):
            raise ValueError(f"the floor needs whole units: shape {self.shape}, unit {self.unit}, chunk {self.chunk}")
        self.grid = tuple(u // c for u, c in zip(self.unit, self.chunk))  # chunks per unit
        self.frames = inner_chunks(path)
        self._plans = [self._plan(frames) for frames in self.frames]  # (untimed: where each frame lies)
        self.regions = [tuple(slice(c * u, (c + 1) * u) for c, u in zip(coords, self.unit))
                        for coords, _ in unit_files(path)]
        ndim = len(self.unit)
        self._order = [*range(0, 2 * ndim, 2), *range(1, 2 * ndim, 2)]  # (g0, c0, g1, c1, ...) -> (*grid, *chunk)
        self._local = threading.local()

    def _plan(self, frames: list[memoryview]):
        """(the frames in the file's order, the span holding them when back to back or None,
        each frame's slot in the unit's grid)."""
        whole = frames[0].obj
        starts = [_offset(f, whole) for f in frames]
        ranks = sorted(range(len(frames)), key=starts.__getitem__)
        span = None
        if all(starts[a] + frames[a].nbytes == starts[b] for a, b in zip(ranks, ranks[1:])):
            first, last = ranks[0], ranks[-1]
            span = memoryview(whole)[starts[first]: starts[last] + frames[last].nbytes]
        ends = np.cumsum([0, *(frames[k].nbytes for k in ranks)])  # (the ordered frames' bounds in the span)
        # frames in C order (the usual case): the stack goes into the slots as one transposed copy
        slot = None if ranks == list(range(len(frames))) else np.unravel_index(ranks, self.grid)
        return [frames[k] for k in ranks], span, slot, ends

    def _into_slots(self, block: np.ndarray, stack: np.ndarray, slot, a: int = 0, b: int | None = None) -> None:
        slots = block.reshape([n for pair in zip(self.grid, self.chunk) for n in pair]).transpose(self._order)
        if slot is not None:
            slots[tuple(ix[a:b] for ix in slot)] = stack
        elif a == 0 and (b is None or b == len(stack)) and len(stack) == int(np.prod(self.grid)):
            slots[...] = stack.reshape(*self.grid, *self.chunk)
        else:
            slots[np.unravel_index(range(a, b), self.grid)] = stack

    def place_part(self, i: int, block: np.ndarray, a: int, b: int) -> None:
        """Frames ``a:b`` (in the file's order) of unit ``i`` decoded into their slots of ``block``
        (so that a unit's chunks can be split over threads when there are fewer units than threads)."""
        ordered, span, slot, ends = self._plans[i]
        stack = getattr(self._local, "stack", None)
        if stack is None or len(stack) != len(ordered):
            stack = self._local.stack = np.empty((len(ordered), *self.chunk), self.dtype)
        if span is not None:
            numcodecs_zstd.decompress(span[int(ends[a]): int(ends[b])], stack[: b - a])
        else:
            for row, frame in enumerate(ordered[a:b]):
                numcodecs_zstd.decompress(frame, stack[row])
        if len(ordered) == 1:
            block[...] = stack[0]
            return
        self._into_slots(block, stack[: b - a], slot, a, b)

    def place(self, i: int, block: np.ndarray) -> None:
        """Unit ``i``'s chunks decoded by libzstd into ``block`` (a unit-shaped array or view):
        into a per-thread stack (one call when the frames lie back to back), then one copy of
        every chunk into its slot."""
        frames = self.frames[i]
        if len(frames) == 1 and block.flags.c_contiguous:
            numcodecs_zstd.decompress(frames[0], block)  # (a fresh block: straight into it)
            return
        ordered, span, slot, _ = self._plans[i]
        stack = getattr(self._local, "stack", None)
        if stack is None or len(stack) != len(frames):
            stack = self._local.stack = np.empty((len(frames), *self.chunk), self.dtype)
        if span is not None:
            numcodecs_zstd.decompress(span, stack)
        else:
            for row, frame in enumerate(ordered):
                numcodecs_zstd.decompress(frame, stack[row])
        if len(frames) == 1:
            block[...] = stack[0]
            return
        self._into_slots(block, stack, slot)

    def block(self, i: int) -> np.ndarray:
        out = np.empty(self.unit, self.dtype)
        self.place(i, out)
        return out


_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    """One pool per thread count, kept for the process (the floors of many rows share it)."""
    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="floor")
    return _POOLS[threads]


def read_floor(path: str, threads: int | None = None):
    """fn: every chunk decoded by libzstd into its place in one fresh output array, a unit per
    task on ``threads`` (default: the cores) threads; with fewer than 4 units per thread, each
    unit's chunks split into as many runs as make 4 tasks per thread. The floor of ``a[...]``."""
    units = Units(path)
    threads = threads or os.cpu_count() or 1
    pool = _pool(threads)
    n = len(units.frames)
    jobs = []
    for i in range(n):
        k = len(units.frames[i])
        parts = max(1, min(k, -(-4 * threads // n)))
        cuts = [k * j // parts for j in range(parts + 1)]
        jobs += [(i, a, b) for a, b in zip(cuts, cuts[1:])]

    def fn():
        out = np.empty(units.shape, units.dtype)
        list(pool.map(lambda job: units.place_part(job[0], out[units.regions[job[0]]], job[1], job[2]), jobs))
        return out

    return fn


def reduce_floor(path: str, reduce, threads: int | None = None):
    """fn: each unit decoded into a fresh block and reduced (``reduce(block)``), a unit per task
    on ``threads`` threads (no dask scheduling): the floor of a dask ``.sum()``/``.mean()``."""
    units = Units(path)
    pool = _pool(threads or os.cpu_count() or 1)
    return lambda: list(pool.map(lambda i: reduce(units.block(i)), range(len(units.frames))))


_HELD: dict[str, Units] = {}


def held_units(path: str) -> Units:
    """The process's :class:`Units` of ``path`` (read once per process: a worker's first task)."""
    if path not in _HELD:
        _HELD[path] = Units(path)
    return _HELD[path]


def _unit_block(path: str, i: int) -> np.ndarray:
    return held_units(path).block(i)


def dask_floor(path: str, op=lambda x: x):
    """fn: a dask array whose tasks are libzstd's decoding of one unit into a fresh block (no
    Zarr code), ``op``'d and ``.compute()``d on the scheduler in effect. With ``op`` the
    identity: the blocks, then dask's assembly of them into one array, as every dask reader's
    ``.compute()`` ends; with a reduction, what dask's own scheduling of that reduction adds
    to the decoding, which every dask reader pays alike. A task names its unit by path and
    number (a worker process reads the frames into memory at its first task, as this process
    does here, untimed)."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    units = held_units(path)
    chunks = da.core.normalize_chunks(units.unit, units.shape)
    nblocks = tuple(len(c) for c in chunks)
    files = unit_files(path)

    def fn():
        name = "zstd-floor-" + uuid.uuid4().hex
        dsk = {(name, *coords): (_unit_block, path, i) for i, (coords, _) in enumerate(files)}
        assert len(dsk) == int(np.prod(nblocks))
        graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
        return op(da.Array(graph, name, chunks, dtype=units.dtype)).compute()

    return fn


def assembly_floor(data: np.ndarray, unit: tuple[int, ...]):
    """fn: dask's assembly alone: ``da.from_array(data, chunks=unit).compute()`` over the array
    already in memory (each task a view of one block; dask concatenates them)."""
    import dask.array as da

    x = da.from_array(data, chunks=unit, name="assembly-floor-" + uuid.uuid4().hex)
    return lambda: x.compute()


def write_floor(data: np.ndarray, chunks: tuple[int, ...], shards: tuple[int, ...] | None, out: str,
                threads: int | None = None):
    """fn: the least a write of ``data`` does without Zarr: a unit per task on ``threads`` threads,
    each chunk copied to contiguous memory and compressed by libzstd (level 1), a shard's frames
    joined with their index (offsets and sizes, crc32c) at the end, and each unit written to its
    own file under ``out/c/...`` (the directories made in the call). ``out`` is not removed."""
    import crc32c

    unit = shards or chunks
    if any(s % u for s, u in zip(data.shape, unit)) or any(u % c for u, c in zip(unit, chunks)):
        raise ValueError(f"the floor needs whole units: shape {data.shape}, unit {unit}, chunk {chunks}")
    grid = [range(s // u) for s, u in zip(data.shape, unit)]
    coords = [tuple(int(x) for x in c) for c in np.ndindex(*(len(g) for g in grid))]
    inner = list(np.ndindex(*(u // c for u, c in zip(unit, chunks))))
    local = threading.local()
    pool = _pool(threads or os.cpu_count() or 1)

    def one(c):
        z = getattr(local, "z", None)
        if z is None:
            z = local.z = zstandard.ZstdCompressor(level=1, write_checksum=False)
        origin = [i * u for i, u in zip(c, unit)]
        if shards is None:
            blob = z.compress(np.ascontiguousarray(data[tuple(slice(o, o + n) for o, n in zip(origin, unit))]))
        else:
            frames, index, offset = [], np.empty((len(inner), 2), "<u8"), 0
            for k, ic in enumerate(inner):
                sel = tuple(slice(o + i * n, o + (i + 1) * n) for o, i, n in zip(origin, ic, chunks))
                frame = z.compress(np.ascontiguousarray(data[sel]))
                frames.append(frame)
                index[k] = (offset, len(frame))
                offset += len(frame)
            raw = index.tobytes()
            frames += [raw, crc32c.crc32c(raw).to_bytes(4, "little")]
            blob = b"".join(frames)
        name = os.path.join(out, "c", *map(str, c))
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, "wb") as f:
            f.write(blob)

    return lambda: list(pool.map(one, coords))


def metadata_floor(path: str, members: tuple[str, ...] = ()):
    """fn: read and parse the group's ``zarr.json`` (consolidated: every array's document is in
    it) and each of ``members``' own (unconsolidated), the least an open of the group and of
    those members does; returns the group's document."""
    import json

    names = [os.path.join(path, "zarr.json"), *(os.path.join(path, m, "zarr.json") for m in members)]

    def fn():
        docs = []
        for name in names:
            with open(name, "rb") as f:
                docs.append(json.loads(f.read()))
        return docs[0]

    return fn


def _slices(sel, shape) -> tuple[slice, ...]:
    """A basic selection (ints, slices with step 1, fewer entries than dims) as one slice per dim."""
    sel = sel if isinstance(sel, tuple) else (sel,)
    out = []
    for d, n in enumerate(shape):
        s = sel[d] if d < len(sel) else slice(None)
        if isinstance(s, slice):
            start, stop, step = s.indices(n)
            if step != 1:
                raise ValueError("the floor reads steps of 1 only")
            out.append(slice(start, stop))
        else:
            i = int(s) % n
            out.append(slice(i, i + 1))
    return tuple(out)


def window_floor(path: str, windows, cold: bool, threads: int = 1):
    """(fn, read): the least a window read does without Zarr. ``read(sel)`` reads the window
    ``sel``: for every unit it touches, one ``os.pread`` of the span of the unit's file holding
    the touched chunks (their offsets from the shard index), libzstd into a chunk buffer, and the
    overlap copied into a fresh output. Cold (``cold=True``): each read opens the touched files
    and reads and parses their shards' indexes (no checksum check); warm: the files are held
    open and the indexes in memory (both untimed, before). ``fn()`` reads ``windows`` one after another and
    gives their median latency (harness.SelfTimed), as bench_sharding.window_task does. A read's
    chunks are decoded on ``threads`` threads (1: in the calling thread); a selection may be any
    basic one (an int keeps its dimension, of length 1)."""
    from harness import SelfTimed  # noqa: PLC0415 - (this module also runs alone)

    array = zarrdask.open_array(path)
    shape, dtype = tuple(array.shape), np.dtype(array.dtype)
    unit = tuple(array.shards or array.chunks)
    chunk = tuple(array.units.pipeline.sharding.chunk_shape if array.shards else array.chunks)
    grid = tuple(u // c for u, c in zip(unit, chunk))
    n_inner = int(np.prod(grid))
    index_bytes = 16 * n_inner + 4  # (offset, nbytes) uint64 pairs + crc32c, at the end
    strides = [int(np.prod(grid[d + 1:])) for d in range(len(grid))]  # (C order in the shard)
    files = {coords: name for coords, name in unit_files(path)}
    sizes = {coords: os.path.getsize(name) for coords, name in files.items()}

    def read_index(fd: int, coords) -> np.ndarray:
        raw = os.pread(fd, index_bytes, sizes[coords] - index_bytes)
        return np.frombuffer(raw, "<u8", count=2 * n_inner).reshape(n_inner, 2)

    held, fds = {}, {}  # warm: every index, and every file open (a reader may keep both), untimed
    if not cold:
        for coords, name in files.items():
            fds[coords] = os.open(name, os.O_RDONLY)
            if array.shards:
                held[coords] = read_index(fds[coords], coords)

    local = threading.local()
    pool = _pool(threads) if threads > 1 else None

    def read_unit(coords, cis, lo, hi, out) -> None:
        stack = getattr(local, "stack", None)
        if stack is None:
            stack = local.stack = np.empty((n_inner, *chunk), dtype)
        fd = fds[coords] if coords in fds else os.open(files[coords], os.O_RDONLY)
        try:
            if array.shards:
                table = held[coords] if coords in held else read_index(fd, coords)
                rows = table[[sum((c % g) * st for c, g, st in zip(ci, grid, strides)) for ci in cis]]
                order = np.argsort(rows[:, 0], kind="stable")
                cis, rows = [cis[k] for k in order], rows[order]
                start, stop = int(rows[0, 0]), int(rows[-1, 0] + rows[-1, 1])
                span = memoryview(os.pread(fd, stop - start, start))  # (one read over the touched chunks)
                # runs of frames back to back in the file: one libzstd call each, into the stack
                ends = rows[:, 0] + rows[:, 1]
                cuts = [0, *(np.flatnonzero(ends[:-1] != rows[1:, 0]) + 1).tolist(), len(rows)]
                for a, b in zip(cuts, cuts[1:]):
                    lo_b, hi_b = int(rows[a, 0]) - start, int(ends[b - 1]) - start
                    numcodecs_zstd.decompress(span[lo_b:hi_b], stack[a:b])
            else:
                numcodecs_zstd.decompress(os.pread(fd, sizes[coords], 0), stack[0])
            for buf, ci in zip(stack, cis):
                origin = [c * n for c, n in zip(ci, chunk)]
                a = [max(l, o) for l, o in zip(lo, origin)]
                b = [min(h, o + n) for h, o, n in zip(hi, origin, chunk)]
                out[tuple(slice(x - l, y - l) for x, y, l in zip(a, b, lo))] = \
                    buf[tuple(slice(x - o, y - o) for x, y, o in zip(a, b, origin))]
        finally:
            if coords not in fds:
                os.close(fd)

    def touched(sel) -> dict:
        """The chunks ``sel`` touches, by unit: {unit coords: [chunk coords]}."""
        sel = _slices(sel, shape)
        spans = [range(s.start // c, (s.stop - 1) // c + 1) for s, c in zip(sel, chunk)]
        by_unit: dict = {}
        for ci in itertools.product(*spans):
            by_unit.setdefault(tuple(c // g for c, g in zip(ci, grid)), []).append(ci)
        return by_unit

    def decode_into(by_unit: dict, out: np.ndarray) -> None:
        """The chunks of ``by_unit`` decoded into their places in ``out`` (the array's shape), a
        task per chunk on the threads."""
        jobs = [(coords, ci) for coords, cis in by_unit.items() for ci in cis]
        run = (lambda job: read_unit(job[0], [job[1]], [0] * len(shape), shape, out))
        list(pool.map(run, jobs)) if pool is not None else [run(job) for job in jobs]

    def read(sel) -> np.ndarray:
        sel = _slices(sel, shape)
        lo = [s.start for s in sel]
        hi = [s.stop for s in sel]
        out = np.empty([b - a for a, b in zip(lo, hi)], dtype)
        by_unit = touched(sel)
        if pool is None or len(by_unit) == 1 and len(next(iter(by_unit.values()))) == 1:
            for coords, cis in by_unit.items():
                read_unit(coords, cis, lo, hi, out)
        else:  # a task per chunk
            list(pool.map(lambda job: read_unit(job[0], [job[1]], lo, hi, out),
                          [(coords, ci) for coords, cis in by_unit.items() for ci in cis]))
        return out

    def fn():
        lat = []
        for sel in windows:
            t0 = time.perf_counter()
            read(sel)
            lat.append(time.perf_counter() - t0)
        return SelfTimed(statistics.median(lat), extra={"p90_s": float(np.percentile(lat, 90))})

    if any(s % u for s, u in zip(shape, unit)):
        raise ValueError(f"the floor needs whole units: shape {shape}, unit {unit}")
    read.touched, read.decode_into, read.shape, read.dtype = touched, decode_into, shape, dtype
    if fds:
        weakref.finalize(read, _close, list(fds.values()))  # (fn holds read: the files close with both)
    return fn, read


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def pass_floor(path: str, sels, threads: int):
    """fn: a pass of the reads ``sels`` as a reader with a cache of decoded chunks at least does it:
    every distinct chunk the pass touches read (os.pread at its shard index's offset, the indexes
    held in memory) and decoded by libzstd once, into its place in an array of the array's shape
    (a task per chunk on ``threads`` threads), then each read one numpy copy out of it; the last
    read's result returned."""
    _, read = window_floor(path, sels, cold=False, threads=threads)
    needed: dict = {}
    for sel in sels:
        for coords, cis in read.touched(sel).items():
            needed.setdefault(coords, set()).update(cis)
    needed = {coords: sorted(cis) for coords, cis in needed.items()}

    def fn():
        full = np.empty(read.shape, read.dtype)
        read.decode_into(needed, full)
        last = None
        for sel in sels:
            last = np.array(full[sel])
        return last

    return fn
