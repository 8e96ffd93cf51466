"""The rows benchmarks/bench_layouts.py adds for issue 25's window and group-open targets,
run small against zarrdask and TensorStore (and zarr-python for the group): every library's
result checks, so the acceptance harness cannot rot unnoticed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

pytest.importorskip("tensorstore", reason="the rows compare against TensorStore (the test extra installs it)")
pytest.importorskip("zarr", reason="the rows compare against zarr-python (the test extra installs it)")

pytestmark = pytest.mark.usefixtures("frozen_heap")  # (the harness collects garbage before each call)

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


@pytest.mark.parametrize("shards", [None, (8, 64, 64)])
@pytest.mark.parametrize("cold", [True, False])
def test_the_window_floor_reads_the_windows(tmp_path, cold, shards):
    import zstd_floor

    geom = Geometry.from_size(8)
    data = np.random.default_rng(1).random(geom.shape, dtype=np.float32)
    path = str(tmp_path / "a.zarr")
    LIB_OBJECTS[ZARRDASK].write(path, data, Layout((4, 32, 32), shards))
    windows = random_windows(geom, 6)
    fn, read = zstd_floor.window_floor(path, windows, cold)
    assert fn().seconds > 0
    for sel in windows:
        assert np.array_equal(read(sel), data[sel])


@pytest.mark.parametrize("consolidated", [True, False])
def test_group_open_row_checks_every_library(tmp_path, consolidated):
    row = bench_layouts.group_open_row(str(tmp_path), repeat=1, consolidated=consolidated)
    assert row.case.endswith("consolidated)") and ("unconsolidated" in row.case) is not consolidated
    assert set(row.cells) == {"zarrdask", "zarr-python", "tensorstore"}
    for lib, cell in row.cells.items():
        assert cell.error is None, (lib, cell.error)
        assert cell.times and all(c is None for c in cell.checks), (lib, cell.checks)
    assert not (tmp_path / "layouts_group.zarr").exists()  # removed after the row
    floor = bench_layouts.group_open_floor(str(tmp_path), 1, consolidated)
    assert floor.cell.error is None and floor.cell.times and all(c is None for c in floor.cell.checks), floor
    assert ("each of the 50" in floor.name) is not consolidated


_ZARRS_INSTALLED = importlib.util.find_spec("zarrs") is not None  # (the bench extra; CI installs test only)


def _cells_ok(row, libs):
    assert set(row.cells) == set(libs), set(row.cells)
    for lib, cell in row.cells.items():
        if lib == "zarr-python+zarrs" and not _ZARRS_INSTALLED:
            assert cell.error and "zarrs" in cell.error, cell  # (the peer is absent, and says so)
            continue
        assert cell.error is None, (lib, cell.error)
        assert cell.times and all(c is None for c in cell.checks), (lib, cell.checks)


def test_materialised_reads_and_their_floors_check(tmp_path):
    """dask-compute and xarray-values / xarray-load, at a tiny size, every reader's result
    checked, each row with its floor measured and checked; the table prints both ratios."""
    import harness

    geom = Geometry.from_size(1)  # (4, 256, 256): the layouts' spatial sides shrink to 64 / 128 / 16
    sc = bench_layouts.run(geom, 1, str(tmp_path), layouts=("big-inner",),
                           workloads=("dask-compute", "xarray-values", "xarray-load", "read", "write"))
    rows = {row.case.split("] ", 1)[1]: row for row in sc.rows}
    assert set(rows) == {"dask .compute()", 'xarray open_dataset(chunks={})["v"].values',
                         "xarray open_dataset(chunks={}).load()", "read a[...]", "write numpy"}
    _cells_ok(rows["dask .compute()"], (ZARRDASK, "zarr-python", "zarr-python+zarrs", TENSORSTORE))
    for case in ('xarray open_dataset(chunks={})["v"].values', "xarray open_dataset(chunks={}).load()"):
        _cells_ok(rows[case], (ZARRDASK, "zarr-python", "zarr-python+zarrs"))
    for row in sc.rows:
        assert row.floor is not None and row.floor.cell.error is None, (row.case, row.floor)
        assert row.floor.cell.times and all(c is None for c in row.floor.cell.checks), row.case
        assert row.floor_ratio() is not None and row.best_peer() is not None
    # the three materialised reads share one floor; the read and the write have their own
    assert rows["dask .compute()"].floor is rows["xarray open_dataset(chunks={}).load()"].floor
    assert len({id(row.floor) for row in sc.rows}) == 3
    table = harness.render_scenario(sc)
    assert "best peer" in table and "zd/floor" in table and "F3 = big-inner: libzstd-1 compression" in table
    doc = rows["dask .compute()"].to_json()
    assert doc["floor"]["name"].startswith("big-inner: dask .compute()") and doc["ratios_over_floor"]["zarrdask"]


def test_the_layout_arrays_carry_dimension_names_and_a_dataset(tmp_path):
    import xarray as xr

    geom = Geometry.from_size(1)
    data = np.arange(np.prod(geom.shape), dtype=np.float32).reshape(geom.shape)
    layout = bench_layouts.scaled(bench_layouts.LAYOUTS["unsharded"], geom.shape)
    path = bench_layouts.layout_array("unsharded", layout, data, str(tmp_path))
    ds_path = bench_layouts.layout_dataset("unsharded", path)
    for engine in ("zarrdask", "zarr"):
        ds = xr.open_dataset(ds_path, engine=engine, chunks={})
        assert ds["v"].dims == bench_layouts.DIMS
        assert np.array_equal(ds["v"].values, data), engine
    assert bench_layouts.layout_dataset("unsharded", path) == ds_path  # cached: the stamp is fresh


@pytest.mark.parametrize("shards", [None, (4, 64, 64), (8, 128, 128)])  # (one shard: split over threads)
def test_the_floors_do_the_rows_work(tmp_path, shards):
    """The read floors give the array back, the reduce floors its sum and mean, and the write
    floor's files hold the array (read back by zarrdask beside a copy of its metadata)."""
    import shutil

    import dask
    import zstd_floor

    data = np.random.default_rng(3).random((8, 128, 128), dtype=np.float32)
    chunks = (2, 32, 32)
    path = str(tmp_path / "a.zarr")
    LIB_OBJECTS[ZARRDASK].write(path, data, Layout(chunks, shards))
    assert np.array_equal(zstd_floor.read_floor(path, 2)(), data)
    with dask.config.set(scheduler="threads"):
        assert np.array_equal(zstd_floor.dask_floor(path)(), data)
        assert np.isclose(zstd_floor.dask_floor(path, lambda x: x.sum(dtype=np.float64))(), data.sum(dtype=np.float64))
        assert np.allclose(zstd_floor.dask_floor(path, lambda x: x.mean(axis=0))(), data.mean(axis=0))
    assert np.isclose(sum(zstd_floor.reduce_floor(path, lambda b: b.sum(dtype=np.float64), 2)()),
                      data.sum(dtype=np.float64))
    out = tmp_path / "floor.zarr"
    zstd_floor.write_floor(data, chunks, shards, str(out), 2)()
    shutil.copy(tmp_path / "a.zarr" / "zarr.json", out / "zarr.json")
    import zarrdask

    assert np.array_equal(zarrdask.open_array(str(out))[...], data)
    assert zstd_floor.metadata_floor(path)()["shape"] == [8, 128, 128]


def test_the_cache_pass_floor_gives_the_last_read(tmp_path):
    import zstd_floor

    data = np.random.default_rng(4).random((16, 128, 128), dtype=np.float32)
    path = str(tmp_path / "a.zarr")
    LIB_OBJECTS[ZARRDASK].write(path, data, Layout((4, 32, 32), (8, 64, 64)))
    sels = [(3,), (slice(None), 70, 5), (2, slice(10, 90), slice(40, 128))]
    last = zstd_floor.pass_floor(path, sels, 2)()
    assert np.array_equal(np.reshape(last, data[sels[-1]].shape), data[sels[-1]])


def test_the_cluster_materialised_read_checks_with_its_floor(tmp_path):
    """cluster-compute at a tiny size: zarrdask, zarr-python and TensorStore ``.compute()`` on a
    LocalCluster of worker processes, each result checked, and the floor's tasks run there too."""
    geom = Geometry.from_size(1)
    sc = bench_layouts.run(geom, 1, str(tmp_path), layouts=("big-inner",), workloads=("cluster-compute",))
    [row] = sc.rows
    assert row.case.endswith("dask .compute() on a LocalCluster"), row.case
    _cells_ok(row, (ZARRDASK, "zarr-python", TENSORSTORE))
    assert row.floor is not None and row.floor.cell.error is None, row.floor
    assert row.floor.cell.times and all(c is None for c in row.floor.cell.checks)
    assert "on the same cluster" in row.floor.name
