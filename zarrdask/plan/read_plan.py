"""The read planner: the dask block grid of a read, aligned to the write grid.

Pure code (no Dask, no I/O). A read task that covers whole shards fetches each shard's
index once and its inner chunks with coalesced ranges; a block that cuts a shard makes
two tasks fetch the same index. So the default block is one unit of the write grid (the
shard when sharded, else the chunk), and ``"auto"`` blocks are whole multiples of it.

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

__all__ = ["auto_read_chunks", "cut_axes", "default_read_chunks"]

#: Default target size of an ``"auto"`` read block (dask's ``array.chunk-size``).
AUTO_BLOCK_BYTES = 128 * 2**20


def default_read_chunks(shape: Sequence[int], write_grid: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """One dask block per write-grid cell (shard or chunk)."""
    return tuple(_regular(n, g) for n, g in zip(shape, write_grid))


def auto_read_chunks(
    shape: Sequence[int],
    write_grid: Sequence[int],
    itemsize: int,
    limit_bytes: int = AUTO_BLOCK_BYTES,
) -> tuple[tuple[int, ...], ...]:
    """Blocks of about ``limit_bytes`` that are whole multiples of the write grid.

    Every axis is grown by the same factor (keeping the cell's aspect ratio) until the
    budget is used or the axis spans the whole array; a cell bigger than the budget stays
    one block.
    """
    cells = [max(1, -(-n // g)) for n, g in zip(shape, write_grid)]
    budget = max(1, limit_bytes // max(1, itemsize * math.prod(write_grid)))
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
    return tuple(_regular(n, g * f) for n, g, f in zip(shape, write_grid, factors))


def cut_axes(chunks: Sequence[Sequence[int]], write_grid: Sequence[int]) -> tuple[int, ...]:
    """The axes along which some block boundary falls inside a write-grid cell."""
    return tuple(
        axis
        for axis, (axis_chunks, g) in enumerate(zip(chunks, write_grid))
        if any(edge % g for edge in itertools.accumulate(axis_chunks[:-1]))
    )


def _regular(size: int, step: int) -> tuple[int, ...]:
    """``size`` cut into ``step``-sized blocks, the last one shorter (dask chunk form)."""
    if size == 0:
        return (0,)
    whole, rest = divmod(size, step)
    return (step,) * whole + ((rest,) if rest else ())


def _int_root(value: int, k: int) -> int:
    """The largest integer ``r >= 1`` with ``r**k <= value``."""
    root = max(1, int(round(value ** (1.0 / k))))
    while root > 1 and root**k > value:
        root -= 1
    while (root + 1) ** k <= value:
        root += 1
    return root
