"""``task_size=``: write tasks grouped to a target size, still one owner per unit.

Planner properties on random problems (regular and rectilinear unit grids, any source
chunks, regions and targets), bit-exact writes on the threaded scheduler and on a small
process cluster, and the keyword's refusals.
"""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dask
import dask.array as da
from _util import IrregularAxis
from _write_plans import assert_reproduces, partitions

import zarrdask
from zarrdask.errors import InvalidValueError, ZarrdaskError
from zarrdask.plan import make_write_plan



@st.composite
def axis_grids(draw, size: int):
    """A regular unit extent, or an irregular axis (a rectilinear grid's) over ``size``."""
    if draw(st.booleans()):
        return draw(st.integers(1, 12))
    extents = draw(partitions(size, 12)) if size else ()
    edges = tuple(itertools.accumulate((e for e in extents if e), initial=0))
    return IrregularAxis(edges if size else (0, 1))


@st.composite
def grouped_problems(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 40), min_size=ndim, max_size=ndim)))
    grid = tuple(draw(axis_grids(n)) for n in shape)
    region = []
    for n in shape:
        start = draw(st.integers(0, n))
        region.append(slice(start, draw(st.integers(start, n))))
    chunks = tuple(draw(partitions(s.stop - s.start)) for s in region)
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    task_bytes = draw(st.integers(1, 4000))
    return shape, grid, tuple(region), chunks, itemsize, task_bytes


def _cell(grid_axis, k: int, n: int) -> tuple[int, int]:
    if isinstance(grid_axis, int):
        return k * grid_axis, min((k + 1) * grid_axis, n)
    return grid_axis.bounds(k)


def _touched(shape, grid, region) -> set[tuple[int, ...]]:
    if any(s.start == s.stop for s in region):
        return set()
    per_axis = []
    for g, s, n in zip(grid, region, shape):
        if isinstance(g, int):
            per_axis.append(range(s.start // g, -(-s.stop // g)))
        else:
            per_axis.append(range(g.index_of(s.start), g.index_of(s.stop - 1) + 1))
    return set(itertools.product(*per_axis))


@settings(max_examples=400, deadline=None)
@given(grouped_problems())
def test_grouped_plan_owns_every_unit_once_within_the_target(problem):
    shape, grid, region, chunks, itemsize, task_bytes = problem
    plan = make_write_plan(shape, chunks, grid, region, task_bytes=task_bytes, itemsize=itemsize)
    tasks = list(plan.tasks())
    owned = [u for task in tasks for u in task.units()]
    assert len(owned) == len(set(owned))
    assert set(owned) == _touched(shape, grid, region)
    for task in tasks:
        units = math.prod(len(c) for c in task.cells)
        assert units == 1 or math.prod(task.shape) * itemsize <= task_bytes, (task.region, task.cells)
        for sel, cells, g, n, r in zip(task.region, task.cells, grid, shape, region):  # the owned units' part
            lo, hi = _cell(g, cells.start, n)[0], _cell(g, cells.stop - 1, n)[1]
            assert (sel.start, sel.stop) == (max(lo, r.start), min(hi, r.stop))
    units = [math.prod(len(c) for c in t.cells) for t in tasks]
    summary = plan.summary(itemsize)
    assert summary.task_bytes == task_bytes
    assert summary.write_tasks == len(tasks)
    assert summary.max_units_per_task == max(units, default=0)
    assert summary.median_units_per_task == (statistics.median_low(units) if units else 0)
    assert summary.max_task_bytes == max((math.prod(t.shape) * itemsize for t in tasks), default=0)


@settings(max_examples=400, deadline=None)
@given(grouped_problems())
def test_grouped_pieces_tile_each_task_and_reproduce_the_source(problem):
    shape, grid, region, chunks, itemsize, task_bytes = problem
    plan = make_write_plan(shape, chunks, grid, region, task_bytes=task_bytes, itemsize=itemsize)
    for task in plan.tasks():
        blocks = [p.block for p in task.pieces]
        assert len(set(blocks)) == len(blocks), "a task depends on one block twice"
    assert_reproduces(plan, shape, chunks, region)


@settings(max_examples=200, deadline=None)
@given(grouped_problems())
def test_a_target_holding_the_whole_region_is_one_task(problem):
    shape, grid, region, chunks, itemsize, _ = problem
    whole = itemsize * math.prod(s.stop - s.start for s in region)
    plan = make_write_plan(shape, chunks, grid, region, task_bytes=max(1, whole), itemsize=itemsize)
    assert len(plan) == (0 if whole == 0 else 1)


def test_tiny_shards_grouped_to_a_balanced_square():
    # 64 x 64 units of 16 x 16 float32 (1 KiB), one block each; 64 KiB tasks are 8 x 8 units
    plan = make_write_plan((1024, 1024), ((16,) * 64,) * 2, (16, 16), task_bytes=64 * 2**10, itemsize=4)
    assert plan.task_grid == (8, 8)
    summary = plan.summary(4)
    assert (summary.max_units_per_task, summary.median_units_per_task, summary.max_blocks_per_task) == (64, 64, 64)
    assert summary.aligned  # the blocks still end on unit lines
    assert "target 64.00 kiB" in repr(summary)


def test_a_big_block_is_split_between_units_and_a_big_unit_stays_alone():
    plan = make_write_plan((1000,), ((1000,),), (10,), task_bytes=400, itemsize=4)  # 100 elements a task
    assert [t.region[0] for t in plan.tasks()] == [slice(i, i + 100) for i in range(0, 1000, 100)]
    assert all([p.block for p in t.pieces] == [(0,)] for t in plan.tasks())
    plan = make_write_plan((100,), ((30, 30, 40),), (32,), task_bytes=8, itemsize=4)
    assert [(t.cells[0], [p.block for p in t.pieces]) for t in plan.tasks()] == [
        (range(0, 1), [(0,), (1,)]), (range(1, 2), [(1,), (2,)]), (range(2, 3), [(2,)]), (range(3, 4), [(2,)])]


def _sources() -> np.ndarray:
    return np.random.default_rng(5).standard_normal((70, 90)).astype("f4")


CASES = {
    "sharded, blocks cut the shards": (dict(chunks=(4, 5), shards=(8, 10)), (7, 13), None),
    "sharded, one block per shard": (dict(chunks=(4, 5), shards=(8, 10)), (8, 10), None),
    "unsharded, blocks cut the chunks": (dict(chunks=(6, 9)), (5, 4), None),
    "sharded, region from mid shard": (dict(chunks=(4, 5), shards=(8, 10)), (6, 11), (slice(3, 61), slice(7, 88))),
    "unsharded, region": (dict(chunks=(6, 9)), (7, 7), (slice(1, 70), slice(0, 83))),
}


@pytest.mark.parametrize("task_size", ["auto", 3000, "2 kiB", 1])
@pytest.mark.parametrize("case", list(CASES))
def test_grouped_writes_are_bit_exact(tmp_path, case, task_size):
    layout, blocks, region = CASES[case]
    base = _sources()
    target = str(tmp_path / "t.zarr")
    if region is None:
        x = da.from_array(base, chunks=blocks)
        with dask.config.set(scheduler="threads"):
            zarrdask.to_zarr(x, target, task_size=task_size, fill_value=0, **layout)
        expected = base
    else:
        zarrdask.create_array(target, shape=base.shape, dtype="f4", fill_value=0, **layout)[...] = base
        part = -base[region]
        with dask.config.set(scheduler="threads"):
            zarrdask.to_zarr(da.from_array(part, chunks=blocks), target, region=region, task_size=task_size)
        expected = base.copy()
        expected[region] = part
    np.testing.assert_array_equal(zarrdask.open_array(target)[...], expected)


def test_grouping_cuts_the_task_count_and_plan_write_shows_it(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "g.zarr"), shape=(256, 256), dtype="f4", chunks=(8, 8), shards=(16, 16))
    x = da.ones((256, 256), chunks=(16, 16), dtype="f4")
    ungrouped = zarrdask.plan_write(x, a)
    grouped = zarrdask.plan_write(x, a, task_size="16 kiB")  # 16 shards of 1 KiB
    assert (ungrouped.write_tasks, ungrouped.max_units_per_task, ungrouped.task_bytes) == (256, 1, None)
    assert (grouped.write_tasks, grouped.max_units_per_task, grouped.median_units_per_task) == (16, 16, 16)
    assert grouped.max_task_bytes == 16 * 2**10 == grouped.task_bytes
    written = zarrdask.to_zarr(x, a, task_size="16 kiB", compute=False)
    layer = next(n for n in written.dask.layers if n.startswith("zarrdask-write-") and "done" not in n)
    assert len(written.dask.layers[layer]) == 16
    html = grouped._repr_html_()
    assert "Task size target" in html and "16.00 kiB" in html


@pytest.mark.parametrize("bad", [True, 1.5, -1, 0, "abc", "", "kB", [64], "-5 MB"])
def test_bad_task_sizes_are_refused_before_writing(tmp_path, bad):
    target = tmp_path / "never.zarr"
    with pytest.raises(InvalidValueError, match=r"task_size=.*auto.*size string") as caught:
        zarrdask.to_zarr(da.zeros((4,), chunks=2), str(target), task_size=bad)
    assert repr(bad) in str(caught.value)
    assert isinstance(caught.value, ZarrdaskError)
    assert not target.exists()
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype="f8", chunks=(2,))
    with pytest.raises(InvalidValueError, match=r"plan_write\(\): task_size="):
        zarrdask.plan_write(np.zeros(4), a, task_size=bad)


def test_auto_follows_dask_chunk_size(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(4096,), dtype="u1", chunks=(16,))
    x = da.zeros(4096, chunks=16, dtype="u1")
    with dask.config.set({"array.chunk-size": "1 KiB"}):
        summary = zarrdask.plan_write(x, a, task_size="auto")
    assert (summary.task_bytes, summary.write_tasks, summary.max_units_per_task) == (1024, 4, 64)


@pytest.mark.distributed
@pytest.mark.timeout(120)
def test_grouped_write_on_a_process_cluster_is_bit_exact(tmp_path):
    distributed = pytest.importorskip("distributed")
    data = _sources()
    target = str(tmp_path / "c.zarr")
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        delayed = zarrdask.to_zarr(da.from_array(data, chunks=(7, 13)), target, compute=False, task_size="4 kiB",
                                   chunks=(4, 5), shards=(8, 10), fill_value=0)
        client.compute(delayed).result()
        read = client.compute(zarrdask.from_zarr(target, chunks="auto")).result()
    np.testing.assert_array_equal(zarrdask.open_array(target)[...], data)
    np.testing.assert_array_equal(read, data)


@pytest.mark.parametrize("task_bytes, itemsize", [(0, 4), (-8, 4), (64, 0)])
def test_the_planner_refuses_a_target_or_itemsize_that_is_not_positive(task_bytes, itemsize):
    with pytest.raises(InvalidValueError, match=f"task_bytes={task_bytes} and itemsize={itemsize}"):
        make_write_plan((10,), ((10,),), (5,), task_bytes=task_bytes, itemsize=itemsize)
