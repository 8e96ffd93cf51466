"""The ``dask`` and ``xarray`` scenarios of benchmarks/run.py (part of ``run.py all``) at a tiny
size: their materialised reads (``.compute()``, ``["t2m"].values``, ``.load()``) check for
every reader, and every row has a measured floor, printed with the best peer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

pytest.importorskip("tensorstore", reason="the rows compare against TensorStore (the test extra installs it)")
pytest.importorskip("zarr", reason="the rows compare against zarr-python (the test extra installs it)")

pytestmark = pytest.mark.usefixtures("frozen_heap")  # (the harness collects garbage before each call)

import harness  # noqa: E402
from harness import Geometry  # noqa: E402


def _check_rows(sc, materialised: set[str]) -> None:
    cases = {row.case: row for row in sc.rows}
    assert materialised <= set(cases), set(cases)
    for case in materialised:
        for lib, cell in cases[case].cells.items():
            if lib == "zarr-python+zarrs" and cell.error and "zarrs" in cell.error:
                continue  # (the bench extra's zarrs is not installed)
            assert cell.error is None, (case, lib, cell.error)
            assert cell.times and all(c is None for c in cell.checks), (case, lib, cell.checks)
    for row in sc.rows:
        assert row.floor is not None and row.floor.cell.error is None, (row.case, row.floor)
        assert row.floor.cell.times and all(c is None for c in row.floor.cell.checks), row.case
    table = harness.render_scenario(sc)
    assert "best peer" in table and "zd/floor" in table and "F1 = " in table


def test_the_dask_scenario_has_a_materialised_read_and_floors(tmp_path):
    import bench_dask

    sc = bench_dask.run(Geometry.from_size(1), 1, str(tmp_path))
    _check_rows(sc, {"full read .compute() (the whole array)"})
    assert set(sc.rows[-1].cells) == {"zarrdask", "zarr-python", "zarr-python+zarrs", "tensorstore"}


def test_the_xarray_scenario_has_materialised_reads_and_floors(tmp_path, monkeypatch):
    import bench_xarray

    monkeypatch.setattr(bench_xarray, "OPENS_PER_REP", 2)
    sc = bench_xarray.run(Geometry.from_size(1), 1, str(tmp_path), n_vars=3)
    _check_rows(sc, {'open_dataset(chunks={})["t2m"].values', "open_dataset(chunks={}).load()"})


def test_the_core_and_sharding_scenarios_have_floors(tmp_path):
    import bench_core
    import bench_sharding

    geom = Geometry.from_size(1)
    _check_rows(bench_core.run(geom, 1, str(tmp_path), cross=False), set())
    sc = bench_sharding.run(geom, 1, str(tmp_path), n_windows=4, cross=False)
    _check_rows(sc, set())
    assert len({id(row.floor) for row in sc.rows}) == 6  # write, read, cold and warm windows, 2nd write and read
