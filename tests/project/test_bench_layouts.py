"""The rows benchmarks/bench_layouts.py adds for issue 25's window and group-open targets,
run small against zarrdask and TensorStore (and zarr-python for the group): every library's
result checks, so the acceptance harness cannot rot unnoticed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

pytest.importorskip("tensorstore", reason="the rows compare against TensorStore (the test extra installs it)")
pytest.importorskip("zarr", reason="the rows compare against zarr-python (the test extra installs it)")

import bench_layouts  # noqa: E402
from bench_sharding import window_task  # noqa: E402
from harness import TENSORSTORE, ZARRDASK, Geometry, random_windows  # noqa: E402
from libs import LIB_OBJECTS, Layout  # noqa: E402


@pytest.mark.parametrize("cold", [True, False])
def test_window_reads_check_against_the_data(tmp_path, cold):
    geom = Geometry.from_size(8)
    data = np.random.default_rng(0).random(geom.shape, dtype=np.float32)
    path = str(tmp_path / "a.zarr")
    LIB_OBJECTS[ZARRDASK].write(path, data, Layout((4, 32, 32), (8, 64, 64)))
    windows = random_windows(geom, 6)
    for lib in (ZARRDASK, TENSORSTORE):
        task = window_task(LIB_OBJECTS[lib], path, windows, cold, data)
        timed = task.fn()
        assert timed.seconds > 0
        assert task.check(timed.result) is None, lib


def test_group_open_row_checks_every_library(tmp_path):
    row = bench_layouts.group_open_row(str(tmp_path), repeat=1)
    assert set(row.cells) == {"zarrdask", "zarr-python", "tensorstore"}
    for lib, cell in row.cells.items():
        assert cell.error is None, (lib, cell.error)
        assert cell.times and all(c is None for c in cell.checks), (lib, cell.checks)
    assert not (tmp_path / "layouts_group.zarr").exists()  # removed after the row
