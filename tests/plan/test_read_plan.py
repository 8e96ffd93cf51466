"""The pure read planner: shard-aligned default blocks and "auto" multiples."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from _util import IrregularAxis

from zarrdask.plan import auto_read_chunks, cut_axes, default_read_chunks


def test_default_blocks_are_the_storage_units():
    assert default_read_chunks((100, 64, 0), (32, 64, 8)) == ((32, 32, 32, 4), (64,), (0,))


def test_auto_grows_every_axis_by_the_same_factor():
    assert auto_read_chunks((4096, 4096), (64, 64), itemsize=4, limit_bytes=4 * 256 * 256) == (
        (256,) * 16,
        (256,) * 16,
    )


def test_auto_spends_the_budget_of_a_short_axis_on_the_others():
    chunks = auto_read_chunks((10, 10_000, 10_000), (10, 100, 100), itemsize=1, limit_bytes=10 * 1000 * 1000)
    assert chunks[0] == (10,) and chunks[1][0] == 1000 and chunks[2][0] == 1000


def test_auto_keeps_one_cell_when_a_cell_exceeds_the_budget():
    assert auto_read_chunks((1000,), (500,), itemsize=8, limit_bytes=1000) == ((500, 500),)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 300)), min_size=1, max_size=4),
    st.sampled_from([1, 2, 4, 8]),
    st.integers(1, 10**7),
)
def test_auto_blocks_are_whole_cells_within_budget(axes, itemsize, limit):
    shape = tuple(n for n, _ in axes)
    grid = tuple(g for _, g in axes)
    chunks = auto_read_chunks(shape, grid, itemsize, limit)
    assert tuple(sum(c) for c in chunks) == shape
    assert cut_axes(chunks, grid) == ()
    block = math.prod(c[0] for c in chunks) * itemsize
    assert block <= max(limit, itemsize * math.prod(grid))


def test_cut_axes_names_the_axes_that_split_a_cell():
    assert cut_axes(((32, 32, 36), (10, 10)), (32, 20)) == (1,)
    assert cut_axes(((64, 36), (20,)), (32, 20)) == ()



@settings(derandomize=True, deadline=None, max_examples=300, database=None)
@given(st.data())
def test_cut_axes_is_a_block_boundary_inside_a_unit(data):
    """``cut_axes`` against its definition: an axis is cut where a boundary between blocks is
    not one of the grid's lines (regular and irregular axes)."""
    chunks, grid, lines = [], [], []
    for _ in range(data.draw(st.integers(1, 3))):
        blocks = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=5)))
        n = sum(blocks)
        if data.draw(st.booleans()):
            step = data.draw(st.integers(1, 7))
            grid.append(step)
            lines.append({*range(0, n, step), n})
        else:
            inner = data.draw(st.sets(st.integers(1, n - 1))) if n > 1 else set()
            edges = (0, *sorted(inner), n)
            grid.append(IrregularAxis(edges))
            lines.append(set(edges))
        chunks.append(blocks)
    expected = tuple(d for d, (blocks, line) in enumerate(zip(chunks, lines))
                     if any(e not in line for e in itertools.accumulate(blocks[:-1])))
    assert cut_axes(tuple(chunks), tuple(grid)) == expected
