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

import gc
import os
import statistics
import time

import numpy as np

from harness import (
    LIBS,
    ZARR_PYTHON,
    Cell,
    Geometry,
    Row,
    Scenario,
    compare,
    dir_size,
    make_data,
    measure,
    random_windows,
    rmtree,
    run_cell,
)
from libs import LIB_OBJECTS, Layout, Lib


def window_cell(L: Lib, path: str, windows, repeat: int, cold: bool, data: np.ndarray) -> Cell:
    cell = Cell(unit="ms")
    p90s = []
    for _ in range(repeat):
        lat = []
        gc.collect()
        if cold:
            for sel in windows:
                h = L.open(path)
                t0 = time.perf_counter()
                L.read(h, sel)
                lat.append(time.perf_counter() - t0)
                del h
        else:
            h = L.open(path)
            for sel in windows:
                L.read(h, sel)
            for sel in windows:
                t0 = time.perf_counter()
                L.read(h, sel)
                lat.append(time.perf_counter() - t0)
        cell.times.append(statistics.median(lat))
        p90s.append(float(np.percentile(lat, 90)))
    # correctness of a few windows (untimed)
    h = L.open(path)
    problems = [compare(data[sel], L.read(h, sel)) for sel in windows[:10]]
    cell.checks.append(next((p for p in problems if p), None))
    cell.note = f"p90 {statistics.median(p90s) * 1e3:.2f}ms"
    return cell


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
    paths = {lib: os.path.join(data_dir, "sharded", lib) for lib in LIBS}

    def check_read(result):
        return compare(data, result)

    write_cells: dict[str, Cell] = {}
    for lib in LIBS:
        L = LIB_OBJECTS[lib]
        write_cells[lib] = run_cell(
            f"sharded write {lib}",
            lambda L=L, p=paths[lib]: measure(
                lambda: L.write(p, data, layout), repeat, setup=lambda: rmtree(p)
            ),
        )
    sizes = {lib: dir_size(p) for lib, p in paths.items() if os.path.isdir(p)}
    sc.rows.append(Row("write (own copy)", write_cells, nbytes=geom.nbytes))

    read_cells: dict[str, Cell] = {}
    for lib in LIBS:
        L = LIB_OBJECTS[lib]
        if write_cells[lib].error:
            read_cells[lib] = Cell(error="its write failed")
            continue
        read_cells[lib] = run_cell(
            f"sharded full read own copy {lib}",
            lambda L=L, p=paths[lib]: measure(lambda: L.read_all(L.open(p)), repeat, check=check_read),
        )
    sc.rows.append(Row("full read (own copy)", read_cells, nbytes=geom.nbytes))

    if cross:
        for writer in LIBS:
            if write_cells[writer].error:
                continue
            cells = {}
            for reader in LIBS:
                L = LIB_OBJECTS[reader]
                cells[reader] = run_cell(
                    f"sharded full read {writer}'s copy with {reader}",
                    lambda L=L, p=paths[writer]: measure(
                        lambda: L.read_all(L.open(p)), repeat, check=check_read
                    ),
                )
            sc.rows.append(Row(f"full read copy by {writer}", cells, nbytes=geom.nbytes))

    # window reads on one common copy
    common = next((w for w in (ZARR_PYTHON, *LIBS) if not write_cells[w].error), None)
    if common is not None:
        windows = random_windows(geom, n_windows)
        for cold in (True, False):
            cells = {}
            for lib in LIBS:
                L = LIB_OBJECTS[lib]
                cells[lib] = run_cell(
                    f"{n_windows} windows {'cold' if cold else 'warm'} {lib}",
                    lambda L=L: window_cell(L, paths[common], windows, repeat, cold, data),
                )
            mode = "cold index (open per read)" if cold else "warm index (1 open, 2nd pass)"
            sc.rows.append(
                Row(
                    f"window {'x'.join(map(str, geom.window))} median/read, {mode}",
                    cells,
                    note="; ".join(f"{lib} {c.note}" for lib, c in cells.items() if c.note),
                )
            )
        sc.notes.append(
            f"window reads: {n_windows} random windows at unaligned offsets (seeded), on the copy "
            f"written by {common}; each repetition reports its median latency"
        )
    ratios = ", ".join(f"{lib} {geom.nbytes / s:.2f}x ({s / 2**20:.0f} MiB)" for lib, s in sizes.items())
    sc.notes.append(f"compression ratio of each copy: {ratios}")
    sc.notes.append(
        "zarr-python keeps no shard-index cache; TensorStore's default context has a 0-byte cache "
        "pool (no index kept between reads); zarrdask keeps an LRU of shard indexes per open array"
    )
    return sc
