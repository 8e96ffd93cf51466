"""Placing a shard's decoded inner chunks into the output a slab at a time.

A shard read whole, in C order (``stored_order.py`` reads whole shards that lie box by box
in their own order), has its inner chunks decoded side by side, each straight into its
slot of a stack of shape ``(*grid, *chunk)`` (in the sharding codec's axis order, slot
``k`` the chunk at index position ``k``). The stack is one strided view of that part of
the shard, so it reaches the output in one copy instead of one per chunk: the copy runs in
C with the GIL released, where per-chunk copies cost a Python step and a GIL hand-off each.
A shard is taken in slabs of at most :data:`SLAB_BYTES` (runs of chunks that share their
leading grid coordinates), so the memory held stays small whatever the shard's size, and
the slabs of one shard can go to different threads.

>>> import numpy as np
>>> shard = np.arange(6 * 4).reshape(6, 4)
>>> stack = shard.reshape(3, 2, 2, 2).transpose(0, 2, 1, 3).copy()  # grid (3, 2), chunks (2, 2)
>>> target = np.zeros((5, 3), dtype=shard.dtype)                   # the shard clipped at an edge
>>> place_block(stack, target, (0, 1))
>>> bool((target == shard[:5, :3]).all())
True
>>> [(s.lead, s.start, s.count) for s in slabs((3, 2), (2, 2), itemsize=8, limit=64)]
[((0,), 0, 2), ((1,), 2, 2), ((2,), 4, 2)]
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["SLAB_BYTES", "Slab", "place_block", "slabs"]

#: decoded bytes per slab: few copies per shard, little memory held (benchmarks/README.md)
SLAB_BYTES = 4 << 20


@dataclass(frozen=True, slots=True)
class Slab:
    """Chunks of a shard decoded and placed together: those whose first ``len(lead)`` grid
    coordinates (the sharding codec's axis order) are ``lead``, at index positions
    ``start`` to ``start + count``; ``shape`` is their stack's ``(*grid, *chunk)``."""

    lead: tuple[int, ...]
    start: int
    count: int
    shape: tuple[int, ...]

    def region(self, extent: Sequence[int], order: Sequence[int]) -> tuple[slice, ...] | None:
        """The slab's part of the shard's target (``extent``: the target's shape, array axis
        order; ``order[d]``: the codec axis that is array axis ``d``); None when the slab
        lies wholly past the array's edge."""
        n, fixed = len(extent), len(self.lead)
        region = []
        for d, e in enumerate(order):
            if e >= fixed:
                region.append(slice(0, extent[d]))
                continue
            size = self.shape[n + e]
            start = self.lead[e] * size
            if start >= extent[d]:
                return None
            region.append(slice(start, min(start + size, extent[d])))
        return tuple(region)


def slabs(grid: Sequence[int], chunk: Sequence[int], itemsize: int, limit: int = SLAB_BYTES) -> tuple[Slab, ...]:
    """A shard's slabs: the fewest leading grid axes fixed that bring a slab within
    ``limit`` bytes (all of them, one chunk a slab, when even that is bigger). Worked out
    once per shard layout (every shard of an array asks the same)."""
    return _slabs(tuple(grid), tuple(chunk), itemsize, limit)


@functools.lru_cache(maxsize=64)
def _slabs(grid: tuple[int, ...], chunk: tuple[int, ...], itemsize: int, limit: int) -> tuple[Slab, ...]:
    chunk_bytes = math.prod(chunk) * itemsize
    fixed = next((j for j in range(len(grid) + 1) if math.prod(grid[j:]) * chunk_bytes <= limit), len(grid))
    count = math.prod(grid[fixed:])
    shape = (1,) * fixed + grid[fixed:] + chunk
    return tuple(Slab(lead, i * count, count, shape)
                 for i, lead in enumerate(itertools.product(*map(range, grid[:fixed]))))


def place_block(stack: np.ndarray, target: np.ndarray, order: Sequence[int]) -> None:
    """Copy ``stack`` (``(*grid, *chunk)``, axes in the sharding codec's order) into
    ``target`` (its part of the output, in the array's axis order; clipped at the array's
    edge, so at most ``grid * chunk`` per axis). ``order[d]`` is the codec axis that is the
    array's axis ``d``. Chunks that lie wholly past ``target`` are not read.

    Each axis splits into a run of whole chunks and, at a clipped edge, the part of one
    more chunk: one copy per combination (one inside the array)."""
    blocks = stack.transpose(_interleaved(tuple(order)))  # (g0, c0, g1, c1, ...)
    sizes = blocks.shape[1::2]
    runs = []  # per axis: (first chunk, end chunk, width) of the whole chunks, then of a clipped one
    for extent, size in zip(target.shape, sizes):
        whole, rest = divmod(extent, size)
        axis = [(0, whole, size)] if whole else []
        if rest:
            axis.append((whole, whole + 1, rest))
        runs.append(axis)
    for combo in itertools.product(*runs):
        region: list[slice] = []
        parts: list[slice] = []
        for (g0, g1, width), size in zip(combo, sizes):
            region.append(slice(g0 * size, g0 * size + (g1 - g0) * width))
            parts += (slice(g0, g1), slice(0, width))
        source = blocks[tuple(parts)]
        target[tuple(region) or ...].reshape(source.shape, copy=False)[...] = source  # (``...``: 0-d stays a view)


@functools.lru_cache(maxsize=64)
def _interleaved(order: tuple[int, ...]) -> tuple[int, ...]:
    """The stack's axes in the order (g0, c0, g1, c1, ...) of the array's axes."""
    n = len(order)
    return tuple(a for d in range(n) for a in (order[d], n + order[d]))
