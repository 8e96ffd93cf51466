"""Scenario 'core' (issue 2): write and read an unsharded float32 array, zstd level 1.

Each library writes its own copy (timed: create + write everything), reads its own copy
(timed: open + read everything), and reads every library's copy (the same bytes for all
three readers: the fairest read comparison). Reads are checked bit-exact against the
source after the first timed repetition (untimed).
"""

from __future__ import annotations

import os

from harness import LIBS, ZARRDASK, Geometry, Row, Scenario, Task, compare, dir_size, make_data, measure_floor
from harness import empty_for_write, measure_many, rmtree
from libs import LIB_OBJECTS, Layout


def write_read_rows(sc: Scenario, geom: Geometry, repeat: int, layout: Layout, base: str, cross: bool, what: str,
                    label: str = ""):
    """Rows shared by 'core' and 'sharding': write own copy, read own copy, read each copy
    (``label`` tells the rows of a second layout in one scenario apart)."""
    data = make_data(geom.shape)
    paths = {lib: os.path.join(base, lib) for lib in LIBS}

    def check_read(result):
        return compare(data, result)

    def writer(lib):
        L, p = LIB_OBJECTS[lib], paths[lib]
        return Task(fn=lambda: L.write(p, data, layout), setup=lambda: empty_for_write(p))

    def reader(lib, path):
        L = LIB_OBJECTS[lib]
        return Task(fn=lambda: L.read_all(L.open(path)), check=check_read)

    first_row = len(sc.rows)
    w = measure_many(f"{sc.name} write", {lib: writer(lib) for lib in LIBS}, repeat)
    sc.rows.append(Row(f"write{label} (own copy)", w, nbytes=geom.nbytes))
    ok = [lib for lib in LIBS if not w[lib].error]
    sizes = {lib: dir_size(paths[lib]) for lib in ok}
    os.sync()  # the copies' dirty pages go to disk now, not as writeback during the timed reads

    r = measure_many(f"{sc.name} {what} own copy", {lib: reader(lib, paths[lib]) for lib in ok}, repeat)
    sc.rows.append(Row(f"{what}{label} (own copy)", r, nbytes=geom.nbytes))
    if cross:
        for src in ok:
            cells = measure_many(
                f"{sc.name} {what} {src}'s copy", {lib: reader(lib, paths[src]) for lib in LIBS}, repeat
            )
            sc.rows.append(Row(f"{what} copy by {src}", cells, nbytes=geom.nbytes))
    add_floors(sc.rows[first_row:], geom, repeat, layout, base, paths, ok, data)
    ratios = ", ".join(f"{lib} {geom.nbytes / s:.2f}x ({s / 2**20:.0f} MiB)" for lib, s in sizes.items())
    sc.notes.append(f"compression ratio of each copy{label}: {ratios}")
    return paths, w


def add_floors(rows, geom: Geometry, repeat: int, layout: Layout, base: str, paths: dict, ok: list, data) -> None:
    """The floors of write_read_rows' rows, measured after all of them (their timing is as it
    was): the write's (libzstd compression + the files) and the reads' (libzstd into one output,
    over one copy: zarrdask's, else the first that was written)."""
    import zstd_floor

    cores = os.cpu_count() or 1
    out = os.path.join(base, "floor")
    desc = f"shards {'x'.join(map(str, layout.shards))}, inner " if layout.shards else "chunks "
    desc += "x".join(map(str, layout.chunks))
    write = measure_floor(
        f"{desc}: libzstd-1 compression of every chunk{' + shard index' if layout.shards else ''} + one file per "
        f"{'shard' if layout.shards else 'chunk'}, {cores} threads",
        lambda: Task(zstd_floor.write_floor(data, layout.chunks, layout.shards, out, cores),
                     setup=lambda: empty_for_write(out)), repeat)
    rmtree(out)
    read = None
    if ok:
        src = ZARRDASK if ZARRDASK in ok else ok[0]
        read = measure_floor(
            f"{desc}: libzstd decoding every chunk of {src}'s copy into its place in one output, {cores} threads",
            lambda: Task(zstd_floor.read_floor(paths[src], cores), check=lambda r: compare(data, r)), repeat)
    for row in rows:
        row.floor = write if row.case.startswith("write") else read


def run(geom: Geometry, repeat: int, data_dir: str, cross: bool = True) -> Scenario:
    sc = Scenario(
        name="core",
        title=f"unsharded {geom.shape} float32, chunks {geom.chunks}, zstd-1 (issue 2)",
        columns={lib: f"{lib} Array API" for lib in LIBS},
    )
    write_read_rows(sc, geom, repeat, Layout(chunks=geom.chunks), os.path.join(data_dir, "core"), cross, "read")
    sc.notes.append("write = create + write whole array into an emptied directory (no earlier write's pages left "
                    "to write back); read = open + read whole array")
    return sc
