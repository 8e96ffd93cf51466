"""Property tests of the pure write planner: ownership, coverage, memory bound."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _util import IrregularAxis
from _write_plans import assert_reproduces, partitions

from zarrdask.errors import BoundsError, SelectionError, ShapeMismatchError
from zarrdask.plan import make_write_plan



@st.composite
def write_problems(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 40), min_size=ndim, max_size=ndim)))
    grid = tuple(draw(st.lists(st.integers(1, 12), min_size=ndim, max_size=ndim)))
    region = []
    for n in shape:
        start = draw(st.integers(0, n))
        region.append(slice(start, draw(st.integers(start, n))))
    chunks = tuple(draw(partitions(s.stop - s.start)) for s in region)
    return shape, chunks, grid, tuple(region)


def _block_offsets(chunks):
    return [list(itertools.accumulate(c, initial=0)) for c in chunks]


@settings(max_examples=400, deadline=None)
@given(write_problems())
def test_every_touched_unit_is_owned_by_exactly_one_task(problem):
    shape, chunks, grid, region = problem
    plan = make_write_plan(shape, chunks, grid, region)
    owned = [u for task in plan.tasks() for u in task.units()]
    touched = set(itertools.product(*(range(s.start // g, -(-s.stop // g)) for s, g in zip(region, grid))))
    if any(s.start == s.stop for s in region):
        touched = set()
    assert len(owned) == len(set(owned))
    assert set(owned) == touched


@settings(max_examples=400, deadline=None)
@given(write_problems())
def test_writes_cover_the_region_once_and_stay_in_owned_units(problem):
    shape, chunks, grid, region = problem
    plan = make_write_plan(shape, chunks, grid, region)
    count = np.zeros(shape, dtype=int)
    for task in plan.tasks():
        count[task.region] += 1
        for sel, cells, g, n in zip(task.region, task.cells, grid, shape):
            assert cells.start * g <= sel.start < sel.stop <= min(cells.stop * g, n)
    expected = np.zeros(shape, dtype=int)
    expected[region] = 1
    np.testing.assert_array_equal(count, expected)


@settings(max_examples=400, deadline=None)
@given(write_problems())
def test_assembling_the_pieces_reproduces_the_source(problem):
    shape, chunks, grid, region = problem
    assert_reproduces(make_write_plan(shape, chunks, grid, region), shape, chunks, region)


@settings(max_examples=400, deadline=None)
@given(write_problems())
def test_no_task_holds_more_than_one_unit_or_one_block_per_axis(problem):
    shape, chunks, grid, region = problem
    plan = make_write_plan(shape, chunks, grid, region)
    for task in plan.tasks():
        for axis, (sel, g) in enumerate(zip(task.region, grid)):
            biggest_input = max(chunks[axis][p.block[axis]] for p in task.pieces)
            assert sel.stop - sel.start <= max(g, biggest_input)
        # pieces are distinct source blocks: a task never depends on one block twice
        assert len({p.block for p in task.pieces}) == len(task.pieces)


@settings(max_examples=300, deadline=None)
@given(write_problems(), st.integers(1, 8))
def test_full_flags_and_summary_match_brute_force(problem, itemsize):
    shape, chunks, grid, region = problem
    plan = make_write_plan(shape, chunks, grid, region)
    tasks = list(plan.tasks())
    full = rmw = written = read = 0
    for task in tasks:
        for unit in task.units():
            cell = tuple(slice(c * g, min((c + 1) * g, n)) for c, g, n in zip(unit, grid, shape))
            volume = math.prod(s.stop - s.start for s in cell)
            covered = all(r.start <= s.start and s.stop <= r.stop for s, r in zip(cell, region))
            assert task.is_full(unit) == covered
            full += covered
            rmw += not covered
            written += volume
            read += 0 if covered else volume
    summary = plan.summary(itemsize)
    blocks = [len(t.pieces) for t in tasks]
    assert summary.write_tasks == len(tasks) == len(plan)
    assert (summary.full_writes, summary.read_modify_writes) == (full, rmw)
    assert summary.units_written == full + rmw
    assert (summary.bytes_written, summary.bytes_read) == (written * itemsize, read * itemsize)
    assert summary.max_blocks_per_task == max(blocks, default=0)
    assert summary.mean_blocks_per_task == pytest.approx(sum(blocks) / len(blocks) if blocks else 0.0)
    assert summary.max_task_bytes == max((math.prod(t.shape) * itemsize for t in tasks), default=0)


@st.composite
def aligned_problems(draw):
    ndim = draw(st.integers(1, 3))
    grid = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    chunks, shape, region = [], [], []
    for g in grid:
        multiples = draw(st.lists(st.integers(1, 3), min_size=1, max_size=5))
        axis_chunks = [m * g for m in multiples]
        axis_chunks[-1] -= draw(st.integers(0, g - 1))  # the array's last block may be short
        start = g * draw(st.integers(0, 3))
        chunks.append(tuple(axis_chunks))
        region.append(slice(start, start + sum(axis_chunks)))
        shape.append(start + sum(axis_chunks))
    return tuple(shape), tuple(chunks), grid, tuple(region)


@settings(max_examples=200, deadline=None)
@given(aligned_problems())
def test_aligned_blocks_map_one_to_one_to_tasks(problem):
    shape, chunks, grid, region = problem
    plan = make_write_plan(shape, chunks, grid, region)
    summary = plan.summary()
    assert summary.aligned
    assert summary.write_tasks == math.prod(len(c) for c in chunks)
    assert summary.read_modify_writes == 0
    for task in plan.tasks():
        (piece,) = task.pieces
        assert piece.block == task.index


def test_issue_example_small_blocks_into_shards():
    plan = make_write_plan((100, 100), ((7,) * 14 + (2,), (13,) * 7 + (9,)), (32, 32))
    summary = plan.summary(itemsize=8)
    assert summary.write_tasks == 16  # one task per shard
    assert summary.full_writes == 16 and summary.read_modify_writes == 0
    assert not summary.aligned
    assert summary.max_blocks_per_task == 6 * 4


def test_region_starting_mid_shard_reads_and_rewrites_edge_shards():
    plan = make_write_plan((64, 64), ((7, 7, 7), (20,)), (32, 32), (slice(10, 31), slice(40, 60)))
    summary = plan.summary()
    assert (summary.write_tasks, summary.full_writes, summary.read_modify_writes) == (1, 0, 1)


def test_a_block_spanning_several_shards_writes_them_in_one_task():
    plan = make_write_plan((100,), ((100,),), (10,))
    (task,) = plan.tasks()
    assert list(task.cells[0]) == list(range(10))


def test_empty_region_has_no_tasks():
    plan = make_write_plan((10, 10), ((0,), (10,)), (4, 4), (slice(3, 3), slice(None)))
    assert len(plan) == 0 and list(plan.tasks()) == []
    assert plan.summary().write_tasks == 0


def test_invalid_inputs_raise_zarrdask_errors():
    with pytest.raises(ShapeMismatchError, match="sum to 9"):
        make_write_plan((10,), ((4, 5),), (4,))
    with pytest.raises(ShapeMismatchError):
        make_write_plan((10, 10), ((10,),), (4, 4))
    with pytest.raises(SelectionError, match="step 1"):
        make_write_plan((10,), ((5,),), (4,), (slice(0, 10, 2),))
    with pytest.raises(BoundsError):
        make_write_plan((10,), ((5,),), (4,), (slice(8, 13),))
    for bad in (slice(1, "a"), slice(1.5, 6), slice(True, 6)):  # (never turned into another index)
        with pytest.raises(SelectionError, match="slice of integers"):
            make_write_plan((10,), ((5,),), (4,), (bad,))
    assert len(make_write_plan((10,), ((5,),), (4,), (slice(np.int64(0), np.int32(5)),))) > 0


def test_planning_a_million_units_is_cheap():
    plan = make_write_plan((100_000, 100_000), ((100,) * 1000, (100,) * 1000), (100, 100))
    assert len(plan) == 1_000_000
    assert plan.summary().aligned


def test_docstring_examples_run():
    import doctest

    from zarrdask.plan import fetch_plan, read_plan, write_plan

    for module in (write_plan, read_plan, fetch_plan):
        assert doctest.testmod(module).failed == 0


@st.composite
def irregular_write_problems(draw):
    ndim = draw(st.integers(1, 3))
    axes, shape, region = [], [], []
    for _ in range(ndim):
        extents = draw(st.lists(st.integers(1, 9), min_size=1, max_size=6))
        axis = IrregularAxis(tuple(itertools.accumulate([0, *extents])))
        axes.append(axis)
        shape.append(axis.size)
        start = draw(st.integers(0, axis.size))
        region.append(slice(start, draw(st.integers(start, axis.size))))
    chunks = tuple(draw(partitions(s.stop - s.start)) for s in region)
    return tuple(shape), chunks, tuple(axes), tuple(region)


@settings(max_examples=300, deadline=None)
@given(irregular_write_problems())
def test_irregular_grids_are_owned_once_covered_once_and_flagged_exactly(problem):
    """The planner works on any grid's axes (a rectilinear grid drops in)."""
    shape, chunks, axes, region = problem
    plan = make_write_plan(shape, chunks, axes, region)
    owned = [u for task in plan.tasks() for u in task.units()]
    assert len(owned) == len(set(owned))
    touched = set()
    if all(s.start < s.stop for s in region):
        per_axis = [[k for k in range(a.count) if a.bounds(k)[0] < s.stop and s.start < a.bounds(k)[1]]
                    for a, s in zip(axes, region)]
        touched = set(itertools.product(*per_axis))
    assert set(owned) == touched
    count = np.zeros(shape, dtype=int)
    for task in plan.tasks():
        count[task.region] += 1
        for unit in task.units():
            cell = tuple(slice(*a.bounds(k)) for a, k in zip(axes, unit))
            covered = all(r.start <= c.start and c.stop <= r.stop for c, r in zip(cell, region))
            assert task.is_full(unit) == covered
    expected = np.zeros(shape, dtype=int)
    expected[region] = 1
    np.testing.assert_array_equal(count, expected)
