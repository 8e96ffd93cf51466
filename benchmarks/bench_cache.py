#!/usr/bin/env python
"""Scenario 'cache' (issue 26): interactive access patterns with and without the decoded-chunk cache.

    python benchmarks/bench_cache.py [--size-mib 512] [--repeat 5] [--budget-mib 1024]
                                     [--patterns slab1,slab6,slab64,point,pan] [--json F] [--idle-wait 10]
                                     [--data-dir DIR]

A climate-like float32 array (harness.make_data) of (time, 512, 512), 512 time steps at
512 MiB, in shards (64, 256, 256) of inner chunks (16, 64, 64) (256 KiB), bytes + zstd-1,
written once by zarr-python (cached under ``<data>/ref`` with a stamp). The patterns, each
timed as one pass of reads (every read a separate call, as a notebook makes them):
  slab1    every time step in turn: a[t]                      (T reads of 1 MiB)
  slab6    6 time steps at a time through the axis: a[t:t+6]  (T/6 reads)
  slab64   64 time steps at a time: a[t:t+64]                 (T/64 reads)
  point    20 times: a map a[t] at a random time, then the time series at a random point a[:, y, x]
  pan      200 pans of a zoomed 1 x 128 x 128 window at one time step, each a random step of up to
           48 pixels from the last (a random walk kept inside the map)
Readers (the columns):
  zarrdask          zarrdask.open_array(path) without the cache (cache_bytes=0)
  zarrdask+cache    zarrdask.open_array(path, cache_bytes=budget)
  tensorstore+pool  tensorstore.open with a Context whose cache_pool total_bytes_limit = budget
Two rows per pattern:
  cold   the pass on an empty cache: zarrdask.cache_clear() / a new TensorStore Context before
         each pass (the uncached reader is the same in both rows: it keeps nothing)
  warm   the pass again, as a user revisiting: the first pass is the untimed warm-up round,
         every timed pass finds what the previous ones left in the cache
The readers run interleaved round by round (harness.measure_many), with the usual warm-up round.
Before timing, every read of every pattern of every reader is compared with numpy, bit for bit
(untimed). Memory: the cache's bytes held after each pass (its maximum) against the budget,
and the process's resident set size before and after the cached passes.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.path.insert(1, str(HERE.parent))  # the working tree's zarrdask, as run.py does

import numpy as np  # noqa: E402

import harness  # noqa: E402
import reference  # noqa: E402
from harness import MiB, Row, Scenario, Task, environment, fmt_time, make_data, measure_many  # noqa: E402
from libs import LIB_OBJECTS, ZARR_PYTHON, Layout, preload_zarrdask, ts_spec  # noqa: E402

NO_CACHE = "zarrdask"
CACHED = "zarrdask+cache"
TS_POOL = "tensorstore+pool"
READERS = (NO_CACHE, CACHED, TS_POOL)
PATTERNS = ("slab1", "slab6", "slab64", "point", "pan")
SIDE = 512
SHARD = (64, 256, 256)
INNER = (16, 64, 64)
WINDOW = 128
PANS = 200
POINTS = 20


def geometry(size_mib: int) -> tuple[tuple[int, int, int], Layout]:
    """The array's shape (``size_mib`` of float32, 512 x 512 maps) and its layout (the
    shard's and inner chunk's time sides capped at the array's length)."""
    t = max(size_mib * MiB // (4 * SIDE * SIDE), 1)
    return (t, SIDE, SIDE), Layout((min(INNER[0], t), *INNER[1:]), (min(SHARD[0], t), *SHARD[1:]))


def climate_array(data: np.ndarray, layout: Layout, data_dir: str) -> str:
    """The array of ``data`` in ``layout``, written once by zarr-python."""
    path = os.path.join(data_dir, "ref", "cache_climate.zarr")
    params = {"v": reference.STAMP_VERSION, "shape": list(data.shape), "chunks": list(layout.chunks),
              "shards": list(layout.shards)}
    if not reference._fresh(path, params):
        print(f"  .. writing the array with zarr-python: {path}", flush=True)
        harness.rmtree(path)
        LIB_OBJECTS[ZARR_PYTHON].write(path, data, layout)
        reference._stamp(path, params)
    return path


def selections(pattern: str, shape: tuple[int, int, int]) -> list[tuple]:
    """The reads of one pass of ``pattern`` (fixed by a seed: every pass and reader the same)."""
    t_n, y_n, x_n = shape
    rng = np.random.default_rng(26)
    if pattern.startswith("slab"):
        step = int(pattern[4:])
        return [(slice(t, min(t + step, t_n)),) for t in range(0, t_n, step)]
    if pattern == "point":
        out: list[tuple] = []
        for _ in range(POINTS):
            out.append((int(rng.integers(t_n)),))
            out.append((slice(None), int(rng.integers(y_n)), int(rng.integers(x_n))))
        return out
    t = int(rng.integers(t_n))
    y, x = (y_n - WINDOW) // 2, (x_n - WINDOW) // 2
    out = []
    for _ in range(PANS):
        y = int(np.clip(y + rng.integers(-48, 49), 0, y_n - WINDOW))
        x = int(np.clip(x + rng.integers(-48, 49), 0, x_n - WINDOW))
        out.append((t, slice(y, y + WINDOW), slice(x, x + WINDOW)))
    return out


class Readers:
    """The three readers of one array; ``read(name, sel)`` reads through one of them."""

    def __init__(self, path: str, budget: int) -> None:
        import zarrdask

        self.path, self.budget = path, budget
        self.plain = zarrdask.open_array(path, cache_bytes=0)
        self.cached = zarrdask.open_array(path, cache_bytes=budget)
        self.ts = self.fresh_tensorstore()

    def fresh_tensorstore(self):
        """The array opened in a new TensorStore Context: a cache pool of the budget, empty."""
        import tensorstore as ts

        context = ts.Context({"cache_pool": {"total_bytes_limit": self.budget}})
        return ts.open(ts_spec(self.path), read=True, context=context).result()

    def pass_fn(self, reader: str, sels: list[tuple]):
        """One pass of ``sels`` through ``reader``; returns the last result (checked)."""
        if reader == TS_POOL:
            def run():
                arr, last = self.ts, None
                for sel in sels:
                    last = arr[sel].read().result()
                return last
            return run
        array = self.plain if reader == NO_CACHE else self.cached

        def run():
            last = None
            for sel in sels:
                last = array[sel]
            return last
        return run

    def clear(self, reader: str) -> None:
        """Empty ``reader``'s cache (a cold pass)."""
        import zarrdask

        if reader == CACHED:
            zarrdask.cache_clear()
        elif reader == TS_POOL:
            self.ts = self.fresh_tensorstore()


def verify(readers: Readers, data: np.ndarray, patterns) -> list[str]:
    """Every read of every pattern through every reader compared with numpy (untimed)."""
    problems = []
    for pattern in patterns:
        for reader in READERS:
            readers.clear(reader)
            for sel in selections(pattern, data.shape):
                got = readers.ts[sel].read().result() if reader == TS_POOL else \
                    (readers.plain if reader == NO_CACHE else readers.cached)[sel]
                if not np.array_equal(got, data[sel]):
                    problems.append(f"{reader} {pattern} {sel}: differs from numpy")
                    break
    return problems


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MiB


def add_floors(rows, patterns, shape, path: str, data: np.ndarray, repeat: int) -> None:
    """Every row's floor (harness.Floor), measured after all rows (their timing is as it was), a pass
    of the pattern's reads with no Zarr code: cold, each chunk the pass touches read with os.pread
    at its shard index's offset (the indexes held in memory) and decoded by libzstd once, on a thread
    per core, then each read copied out (zstd_floor.pass_floor: the least a reader with a cache of
    decoded chunks does on a first visit); warm, each read one numpy copy out of the array held
    decoded in memory (the least a cache hit does: the bytes copied out once)."""
    import zstd_floor

    cores = os.cpu_count() or 1
    by_case = {row.case: row for row in rows}
    for pattern in patterns:
        sels = selections(pattern, shape)
        expected = data[sels[-1]]

        def check(last, expected=expected):
            return None if np.array_equal(np.reshape(last, expected.shape), expected) else "last read differs"

        def cold_task(sels=sels, check=check):
            return Task(zstd_floor.pass_floor(path, sels, cores), check=check, unit="ms")

        def warm_task(sels=sels, check=check):
            def one_pass():
                last = None
                for sel in sels:
                    last = np.array(data[sel])
                return last

            return Task(one_pass, check=check, unit="ms")

        for temperature, make, what in (
            ("cold", cold_task, f"every chunk the pass touches os.pread + libzstd once ({cores} threads) into one "
                                "array, each read one numpy copy out of it"),
            ("warm", warm_task, "each read one numpy copy out of the array held decoded in memory"),
        ):
            row = by_case.get(f"{pattern} ({len(sels)} reads) {temperature}")
            if row is not None:
                row.floor = harness.measure_floor(f"{pattern} {temperature}: {what}, a pass", make, repeat)


def run(size_mib: int, repeat: int, budget: int, data_dir: str, patterns=PATTERNS) -> Scenario:
    import zarrdask
    from zarrdask.runtime.cache import pool_info

    shape, layout = geometry(size_mib)
    data = make_data(shape)
    path = climate_array(data, layout, data_dir)
    readers = Readers(path, budget)
    sc = Scenario(
        name="cache",
        title=(f"interactive patterns on {shape} float32, shards {layout.shards} of inner chunks {layout.chunks}, "
               f"zstd-1; cache budget {budget / MiB:.0f} MiB (issue 26)"),
        columns={NO_CACHE: "zarrdask, no cache", CACHED: f"zarrdask, cache_bytes={budget / MiB:.0f} MiB",
                 TS_POOL: f"TensorStore, cache_pool {budget / MiB:.0f} MiB"},
    )
    problems = verify(readers, data, patterns)
    sc.notes.append("every read of every pattern through every reader equals numpy's" if not problems
                    else "WRONG: " + "; ".join(problems))
    held: list[int] = []
    rss0 = rss_mib()

    def note_held(_result) -> None:
        held.append(pool_info().bytes)

    for pattern in patterns:
        sels = selections(pattern, shape)
        expected = data[sels[-1]]

        def check(result, expected=expected):
            note_held(result)
            return None if np.array_equal(result, expected) else "last read differs from numpy"

        for temperature in ("cold", "warm"):
            tasks = {}
            for reader in READERS:
                setup = (lambda r=reader: readers.clear(r)) if temperature == "cold" else None
                tasks[reader] = Task(readers.pass_fn(reader, sels), setup=setup, check=check, check_every=True,
                                     unit="ms")
            if temperature == "warm":
                readers.clear(CACHED)
                readers.clear(TS_POOL)
            case = f"{pattern} ({len(sels)} reads) {temperature}"
            sc.rows.append(Row(case, measure_many(case, tasks, repeat), nbytes=None))
    add_floors(sc.rows, patterns, shape, path, data, repeat)
    rss1 = rss_mib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    info = readers.cached.cache_info()
    for row in sc.rows:
        zd, zc, ts_ = (row.cells[r].median for r in READERS)
        if zd and zc and ts_:
            sc.notes.append(f"{row.case}: cache {zd / zc:.1f}x faster than no cache (target >= 5); "
                            f"TensorStore+pool / cache = {ts_ / zc:.2f} (target >= 1)")
    sc.notes.append(f"memory: cache bytes held after each timed pass: max {max(held, default=0) / MiB:.1f} MiB of "
                    f"the {budget / MiB:.0f} MiB budget (array {data.nbytes / MiB:.0f} MiB); process RSS "
                    f"{rss0:.0f} MiB before the timed passes, {rss1:.0f} MiB after (peak {peak:.0f} MiB; it "
                    f"holds the numpy copy of the array, {data.nbytes / MiB:.0f} MiB, and TensorStore's pool)")
    sc.notes.append(f"zarrdask cache statistics at the end: {info!r}")
    sc.notes.append("cold: the cache emptied before each pass; warm: the pass after a first (untimed) one. "
                    "The uncached reader does the same work in both rows (the OS page cache is warm for all)")
    del zarrdask
    return sc


def render(sc: Scenario) -> str:
    """The table: each reader's median (min) per row, the cache's speed-up over no cache and
    TensorStore's time over the cache's (both > 1 when the cache wins), then the notes."""
    header = ["case", "zarrdask", "zarrdask+cache", "speed-up", "tensorstore+pool", "ts/cache", "floor",
              "cache/floor", "check"]
    lines = []
    for row in sc.rows:
        cells = [row.cells[r] for r in READERS]
        med = [c.median for c in cells]
        times = [f"{fmt_time(c.median, 'ms')} ({fmt_time(c.min, 'ms')})" if c.median is not None
                 else f"n/a: {c.error}" for c in cells]
        up = f"{med[0] / med[1]:.1f}x" if med[0] and med[1] else "-"
        vs = f"{med[2] / med[1]:.2f}x" if med[1] and med[2] else "-"
        checks = " ".join(f"{r}:{c.check_summary()}" for r, c in zip(READERS, cells) if c.checks)
        f = row.floor.cell if row.floor is not None else None
        if f is not None and f.checks:
            checks += f" floor:{f.check_summary()}"
        floor = "-" if f is None else (f"n/a: {f.error}" if f.error else
                                       f"{fmt_time(f.median, 'ms')} ({fmt_time(f.min, 'ms')})")
        over = f"{med[1] / f.median:.2f}x" if f is not None and f.median and med[1] and not f.error else "-"
        lines.append([row.case, times[0], times[1], up, times[2], vs, floor, over, checks])
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(header)]
    out = [f"== {sc.name}: {sc.title}"]
    out += [f"   {r:<16} = {sc.columns[r]}" for r in READERS]
    out.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in lines]
    out.append("   floor = the pass with no Zarr code, measured in this run; cache/floor = zarrdask+cache's time / "
               "the floor's (1.00x = at the floor):")
    out += [f"   floor {row.case}: {row.floor.name}" for row in sc.rows if row.floor is not None]
    out += [f"   - {n}" for n in sc.notes]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--budget-mib", type=int, default=1024)
    p.add_argument("--patterns", default=",".join(PATTERNS))
    p.add_argument("--json", default=None)
    p.add_argument("--idle-wait", type=float, default=10.0,
                   help="before each timed call wait up to S seconds for other processes to use < 0.25 cores")
    p.add_argument("--data-dir", default=str(HERE / "data"))
    args = p.parse_args(argv)
    patterns = tuple(n for n in args.patterns.split(",") if n)
    unknown = [n for n in patterns if n not in PATTERNS]
    if unknown:
        raise SystemExit(f"unknown patterns {unknown}; choose from {', '.join(PATTERNS)}")

    preload_zarrdask()
    warnings.simplefilter("ignore")
    harness.IDLE_WAIT_S = args.idle_wait
    os.makedirs(args.data_dir, exist_ok=True)
    env = environment()
    print(f"zarrdask cache benchmark  {env['time']}  commit {env['git_commit']}; versions {env['versions']}")
    t0 = time.perf_counter()
    sc = run(args.size_mib, args.repeat, args.budget_mib * MiB, args.data_dir, patterns)
    sc.wall_s = time.perf_counter() - t0
    print()
    print(render(sc))
    harness.finish(env, args, [sc])
    return 0


if __name__ == "__main__":
    sys.exit(main())
