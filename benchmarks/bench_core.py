"""Scenario 'core' (issue 2): write and read an unsharded float32 array, zstd level 1.

Each library writes its own copy (timed: create + write everything), reads its own copy
(timed: open + read everything), and reads every other library's copy (same bytes, so the
fairest read comparison). Reads are verified bit-exact against the source (untimed).
"""

from __future__ import annotations

import os

from harness import (
    LIBS,
    Cell,
    Geometry,
    Row,
    Scenario,
    compare,
    dir_size,
    make_data,
    measure,
    rmtree,
    run_cell,
)
from libs import LIB_OBJECTS, Layout


def run(geom: Geometry, repeat: int, data_dir: str, cross: bool = True) -> Scenario:
    sc = Scenario(
        name="core",
        title=f"unsharded {geom.shape} float32, chunks {geom.chunks}, zstd-1 (issue 2)",
        columns={lib: f"{lib} Array API" for lib in LIBS},
    )
    data = make_data(geom.shape)
    layout = Layout(chunks=geom.chunks)
    paths = {lib: os.path.join(data_dir, "core", lib) for lib in LIBS}

    def check_read(result):
        return compare(data, result)

    # write: each library writes its own copy
    write_cells: dict[str, Cell] = {}
    for lib in LIBS:
        L = LIB_OBJECTS[lib]
        write_cells[lib] = run_cell(
            f"core write {lib}",
            lambda L=L, p=paths[lib]: measure(
                lambda: L.write(p, data, layout), repeat, setup=lambda: rmtree(p)
            ),
        )
    sizes = {lib: dir_size(p) for lib, p in paths.items() if os.path.isdir(p)}
    sc.rows.append(Row("write (own copy)", write_cells, nbytes=geom.nbytes))

    # read: each library reads its own copy (checked bit-exact after the first repetition)
    read_cells: dict[str, Cell] = {}
    for lib in LIBS:
        L = LIB_OBJECTS[lib]
        if write_cells[lib].error:
            read_cells[lib] = Cell(error="its write failed")
            continue
        read_cells[lib] = run_cell(
            f"core read own copy {lib}",
            lambda L=L, p=paths[lib]: measure(lambda: L.read_all(L.open(p)), repeat, check=check_read),
        )
    sc.rows.append(Row("read (own copy)", read_cells, nbytes=geom.nbytes))

    if cross:
        for writer in LIBS:
            if write_cells[writer].error:
                continue
            cells = {}
            for reader in LIBS:
                L = LIB_OBJECTS[reader]
                cells[reader] = run_cell(
                    f"core read {writer}'s copy with {reader}",
                    lambda L=L, p=paths[writer]: measure(
                        lambda: L.read_all(L.open(p)), repeat, check=check_read
                    ),
                )
            sc.rows.append(Row(f"read copy by {writer}", cells, nbytes=geom.nbytes))

    ratios = ", ".join(f"{lib} {geom.nbytes / s:.2f}x ({s / 2**20:.0f} MiB)" for lib, s in sizes.items())
    sc.notes.append(f"compression ratio of each copy: {ratios}")
    sc.notes.append("write = create + write whole array into an emptied directory; read = open + read whole array")
    return sc
