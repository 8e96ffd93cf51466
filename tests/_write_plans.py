"""What the write-plan tests share: dask-style chunk tuples, and a plain executor of a plan
that checks, as it assembles, that the pieces tile every task and no two tasks write one
element."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import strategies as st


@st.composite
def partitions(draw, extent: int, max_block: int = 25) -> tuple[int, ...]:
    """A dask-style chunk tuple summing to ``extent`` (sometimes with empty blocks)."""
    if extent == 0:
        return (0,)
    blocks = []
    left = extent
    while left:
        size = draw(st.integers(0 if blocks else 1, min(left, max_block)))
        blocks.append(size)
        left -= size
    return tuple(blocks)


def execute(plan, shape, chunks, region) -> tuple[np.ndarray, np.ndarray]:
    """Run ``plan`` on an ``arange`` source of the region's shape cut in ``chunks``: every
    task assembles its buffer from its pieces (asserting they neither overlap nor leave a
    hole, and that no task writes an element another wrote); returns (target, source),
    the target ``-1`` where nothing was written."""
    source = np.arange(math.prod(s.stop - s.start for s in region)).reshape([s.stop - s.start for s in region])
    offsets = [list(itertools.accumulate(c, initial=0)) for c in chunks]
    target = np.full(shape, -1)
    for task in plan.tasks():
        buffer = np.full(task.shape, -2)
        for piece in task.pieces:
            block = source[tuple(slice(o[b], o[b + 1]) for o, b in zip(offsets, piece.block))]
            assert all(s.stop <= n for s, n in zip(piece.block_slices, block.shape))
            assert (buffer[piece.out_slices] == -2).all(), "pieces overlap"
            buffer[piece.out_slices] = block[piece.block_slices]
        assert (buffer != -2).all(), "pieces leave a hole"
        assert (target[task.region] == -1).all(), "two tasks write one element"
        target[task.region] = buffer
    return target, source


def assert_reproduces(plan, shape, chunks, region) -> None:
    """The plan, executed, writes the source into the region and nothing outside it."""
    target, source = execute(plan, shape, chunks, region)
    np.testing.assert_array_equal(target[region], source)
    outside = np.ones(shape, dtype=bool)
    outside[region] = False
    assert (target[outside] == -1).all()
