"""The read planner: the dask block grid of a read, aligned to the array's storage units.

Pure code (no Dask, no I/O). A read task that covers whole shards fetches each shard's
index once and its inner chunks with coalesced ranges; a block that cuts a shard makes
two tasks fetch the same index. So the default block is one storage unit (the shard when
sharded, else the chunk), and ``"auto"`` blocks are runs of whole units. Grids are given
by their axes (``zarrdask.metadata.grid.AxisGrid``) or as a regular unit shape.

>>> default_read_chunks((100, 50), (32, 50))
((32, 32, 32, 4), (50,))
>>> auto_read_chunks((1000, 1000), (100, 100), itemsize=8, limit_bytes=400_000)
((200, 200, 200, 200, 200), (200, 200, 200, 200, 200))
>>> cut_axes(((30, 30, 40), (50,)), (32, 50))
(0,)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Union

from ..metadata.grid import AxisGrid, as_axes, largest_extent

__all__ = ["auto_read_chunks", "cut_axes", "default_read_chunks"]

#: Default target size of an ``"auto"`` read block (dask's ``array.chunk-size``).
AUTO_BLOCK_BYTES = 128 * 2**20

Grid = Sequence[Union[int, AxisGrid]]


def default_read_chunks(shape: Sequence[int], grid: Grid) -> tuple[tuple[int, ...], ...]:
    """One dask block per storage unit (shard or chunk)."""
    return tuple(axis.extents() for axis in as_axes(grid, shape))


def auto_read_chunks(
    shape: Sequence[int],
    grid: Grid,
    itemsize: int,
    limit_bytes: int = AUTO_BLOCK_BYTES,
) -> tuple[tuple[int, ...], ...]:
    """Blocks of about ``limit_bytes`` that are runs of whole storage units.

    Every axis is grown by the same factor (keeping the unit's aspect ratio) until the
    budget is used or the axis spans the whole array; a unit bigger than the budget stays
    one block.
    """
    axes = as_axes(grid, shape)
    cells = [max(1, a.count) for a in axes]
    unit = [largest_extent(a) for a in axes]
    budget = max(1, limit_bytes // max(1, itemsize * math.prod(unit)))
    factors = [1] * len(cells)
    growing = [d for d, c in enumerate(cells) if c > 1]
    while growing:
        fixed = math.prod(factors[d] for d in range(len(cells)) if d not in growing)
        factor = _int_root(budget // fixed, len(growing))
        capped = [d for d in growing if cells[d] <= factor]
        if not capped:
            for d in growing:
                factors[d] = factor
            break
        for d in capped:
            factors[d] = cells[d]
        growing = [d for d in growing if d not in capped]
    return tuple(_runs(a.extents(), f) for a, f in zip(axes, factors))


def cut_axes(chunks: Sequence[Sequence[int]], grid: Grid) -> tuple[int, ...]:
    """The axes along which some block boundary falls inside a storage unit."""
    shape = [sum(c) for c in chunks]
    cut = []
    for axis, (axis_chunks, g) in enumerate(zip(chunks, as_axes(grid, shape))):
        # (each block boundary against the unit holding it: a look per block, none per unit)
        if any(g.bounds(g.index_of(e))[0] != e for e in itertools.accumulate(axis_chunks[:-1]) if 0 < e < g.size):
            cut.append(axis)
    return tuple(cut)


def _runs(extents: tuple[int, ...], factor: int) -> tuple[int, ...]:
    """Consecutive extents summed ``factor`` at a time (dask chunk form)."""
    return tuple(sum(extents[i: i + factor]) for i in range(0, len(extents), factor))


def _int_root(value: int, k: int) -> int:
    """The largest integer ``r >= 1`` with ``r**k <= value``."""
    root = max(1, int(round(value ** (1.0 / k))))
    while root > 1 and root**k > value:
        root -= 1
    while (root + 1) ** k <= value:
        root += 1
    return root
