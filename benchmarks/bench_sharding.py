"""Scenario 'sharding' (issue 3): a sharded float32 array with small inner chunks.

Shards (16, 512, 512) = 16 MiB, inner chunks (4, 64, 64) = 64 KiB, zstd-1, index at the end
with crc32c (zarr-python's default sharding layout). Measured:

* write: each library writes its own copy (create + write everything);
* full read: each library opens and reads its own copy, and every library's copy;
* window reads: 200 random 1x64x64 windows at arbitrary offsets (each touches 1-4 inner
  chunks) read from one common copy (the one zarr-python wrote), median latency per read:
  - cold: the array is opened anew before every read (open untimed), so any per-array
    shard-index cache starts empty: each read pays the index fetch;
  - warm: one open, the 200 windows read once untimed, then the same 200 timed: a library
    that caches shard indexes per array (zarrdask, by design) reads no index.
  zarr-python has no shard-index cache; TensorStore's default context has a cache pool of
  0 bytes, so it keeps no index between reads either. Both run with their defaults.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from harness import LIBS, ZARR_PYTHON, Geometry, Row, Scenario, SelfTimed, Task, compare, measure_many, random_windows
from harness import make_data, measure_floor
from libs import LIB_OBJECTS, Layout, Lib
from bench_core import write_read_rows


def window_task(L: Lib, path: str, windows, cold: bool, data: np.ndarray) -> Task:
    state: dict = {}

    def one_pass() -> SelfTimed:
        lat = []
        if cold:
            for sel in windows:
                h = L.open(path)  # a fresh open: empty per-array caches (untimed)
                t0 = time.perf_counter()
                L.read(h, sel)
                lat.append(time.perf_counter() - t0)
                del h
        else:
            if "h" not in state:
                state["h"] = L.open(path)
                for sel in windows:  # untimed first pass: fills a per-array index cache
                    L.read(state["h"], sel)
            h = state["h"]
            for sel in windows:
                t0 = time.perf_counter()
                L.read(h, sel)
                lat.append(time.perf_counter() - t0)
        return SelfTimed(statistics.median(lat), result=None, extra={"p90_s": float(np.percentile(lat, 90))})

    def check(_):
        h = L.open(path)
        return next((p for p in (compare(data[sel], L.read(h, sel)) for sel in windows[:10]) if p), None)

    return Task(fn=one_pass, check=check, unit="ms")


def window_floor(path: str, windows, cold: bool, data: np.ndarray, repeat: int, label: str = ""):
    """The window rows' floor (zstd_floor.window_floor) on ``path``: median latency per read."""
    import zstd_floor

    def make() -> Task:
        fn, read = zstd_floor.window_floor(path, windows, cold)

        def check(_):
            return next((p for p in (compare(data[sel], read(sel)) for sel in windows[:10]) if p), None)

        return Task(fn=fn, check=check, unit="ms")

    import zarrdask

    if zarrdask.open_array(path).shards is None:
        what = "each touched chunk's file read whole + libzstd + copied out"
    elif cold:
        what = "the touched shards' indexes read from the files and parsed, each touched chunk os.pread + libzstd " \
               "+ copied out"
    else:
        what = "the shard indexes held in memory; each touched chunk os.pread + libzstd + copied out"
    return measure_floor(f"{label or 'x'.join(map(str, data.shape)) + ' array'}: {what}, median per read", make,
                         repeat)


def run(geom: Geometry, repeat: int, data_dir: str, n_windows: int = 200, cross: bool = True) -> Scenario:
    sc = Scenario(
        name="sharding",
        title=(
            f"sharded {geom.shape} float32, shards {geom.shard}, inner chunks {geom.inner}, "
            "zstd-1 (issue 3)"
        ),
        columns={lib: f"{lib} Array API" for lib in LIBS},
    )
    data = make_data(geom.shape)
    layout = Layout(chunks=geom.inner, shards=geom.shard)
    paths, w = write_read_rows(sc, geom, repeat, layout, os.path.join(data_dir, "sharded"), cross, "full read")

    common = next((lib for lib in (ZARR_PYTHON, *LIBS) if not w[lib].error), None)
    floor_rows = []
    if common is not None:
        windows = random_windows(geom, n_windows)
        for cold in (True, False):
            mode = "cold" if cold else "warm"
            cells = measure_many(
                f"{n_windows} windows, {mode} index",
                {lib: window_task(LIB_OBJECTS[lib], paths[common], windows, cold, data) for lib in LIBS},
                repeat,
            )
            desc = "cold index (open per read)" if cold else "warm index (1 open, 2nd pass)"
            p90 = "; ".join(
                f"{lib} {statistics.median(c.extra['p90_s']) * 1e3:.2f}ms"
                for lib, c in cells.items()
                if c.extra.get("p90_s")
            )
            sc.rows.append(
                Row(f"window {'x'.join(map(str, geom.window))} median/read, {desc}", cells, note=f"p90 {p90}")
            )
            floor_rows.append((sc.rows[-1], cold))
        for row, cold in floor_rows:  # (after both window rows: their timing is as it was)
            row.floor = window_floor(paths[common], windows, cold, data, repeat)
        sc.notes.append(
            f"window reads: {n_windows} random windows at unaligned offsets (seeded), on the copy "
            f"written by {common}; each repetition reports its median latency per read"
        )
    large = Layout(chunks=geom.inner_large, shards=geom.shard)
    write_read_rows(sc, geom, repeat, large, os.path.join(data_dir, "sharded_large"), False, "full read",
                    label=f", inner {'x'.join(map(str, geom.inner_large))}")
    sc.notes.append(
        "zarr-python keeps no shard-index cache; TensorStore's default context has a 0-byte cache "
        "pool (no index kept between reads); zarrdask keeps an LRU of shard indexes per open array"
    )
    return sc
