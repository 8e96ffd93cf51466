"""The order a shard's inner chunks lie in its bytes, when a run of them is a box of the shard.

Writers lay a shard's inner chunks out in their own order: zarrdask and TensorStore in C
order of the inner grid, zarr-python in Morton order. When that order renumbers the grid
digit by digit (each digit of a chunk's rank in the file is one mixed-radix digit of one of
its grid coordinates: C and F order, any axis order, Morton order on power-of-two grids), the
chunks at ranks ``[s * count, (s + 1) * count)`` fill a strided box of the shard. Such a run
is decoded in file order with one call (zstd frames lying back to back) into a stack, and
the stack reaches the output with one strided copy, as ``block_placement.py`` places a
C-ordered slab. C-ordered shards go that module's way; orders that do not go box by box are
read in C order there too, each chunk decoded alone.

>>> import numpy as np
>>> ranks = np.array([0, 2, 1, 3])             # a 2x2 grid stored column by column
>>> order = StoredOrder.of(ranks, (2, 2))
>>> [(d.axis, d.radix, d.stride) for d in order.digits]
[(0, 2, 1), (1, 2, 1)]
>>> shard = np.arange(16).reshape(4, 4)      # chunks (2, 2)
>>> stack = np.stack([shard[i * 2:(i + 1) * 2, j * 2:(j + 1) * 2] for j in (0, 1) for i in (0, 1)])
>>> target = np.zeros_like(shard)
>>> for run in order.runs(chunk_bytes=4 * 8, limit=64):
...     order.place(stack[run.first:run.first + run.count], target, run, (0, 1))
>>> bool((target == shard).all())
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["RUN_BYTES", "Digit", "Run", "StoredOrder"]

#: decoded bytes per run at most (a shard of 16 MiB is one run). A run is placed with one
#: strided copy, which costs more per byte the more of the shard a run spreads over: a
#: Morton run of 4 MiB writes 1 KiB pieces all over a 16 MiB shard (1.40 against 1.11 ms a
#: shard); and the frames' headers are walked once per run (benchmarks/HISTORY.md, session 27)
RUN_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class Digit:
    """One digit of a chunk's rank in the file: the grid coordinate on ``axis`` (the
    sharding codec's axis order) moves by ``stride`` chunks per unit of it, ``radix`` values."""

    axis: int
    radix: int
    stride: int


@dataclass(frozen=True, slots=True)
class Run:
    """Chunks at file ranks ``first`` to ``first + count``: the lowest digits free, the
    others fixed at ``fixed`` (their values, from the lowest fixed digit up)."""

    first: int
    count: int
    fixed: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StoredOrder:
    """A digit-by-digit renumbering of a shard's inner grid (``digits``: least significant
    first) and ``ranks``, the C-order position of the chunk at each rank in the file."""

    digits: tuple[Digit, ...]
    ranks: np.ndarray

    @staticmethod
    def of(ranks: np.ndarray, grid: Sequence[int]) -> StoredOrder | None:
        """The order whose rank ``k`` is C position ``ranks[k]``, or None when it is no
        digit-by-digit renumbering of ``grid`` (then the chunks are read in C order)."""
        digits = _digits(ranks.tobytes(), tuple(grid))
        return None if digits is None else StoredOrder(digits, ranks)

    def runs(self, chunk_bytes: int, limit: int) -> list[Run]:
        """The file's ranks in runs of the most low digits that stay within ``limit``
        decoded bytes (one chunk a run when even one digit is more)."""
        free, count = 0, 1
        while free < len(self.digits) and count * self.digits[free].radix * chunk_bytes <= limit:
            count *= self.digits[free].radix
            free += 1
        radices = [d.radix for d in self.digits[free:]]
        return [Run(s * count, count, _mixed(s, radices)) for s in range(len(self.ranks) // count)]

    def place(self, stack: np.ndarray, target: np.ndarray, run: Run, order: Sequence[int]) -> None:
        """Copy ``stack`` (``(run.count, *chunk)``, the run's chunks in file order, axes in
        the sharding codec's order) into ``target``: the whole shard's part of the output,
        unclipped, in the array's axis order (``order[d]``: the codec axis that is array axis d)."""
        ndim = len(order)
        chunk = stack.shape[1:]
        free = len(self.digits) - len(run.fixed)
        target_shape: list[int] = []
        index: list[int | slice] = []
        source_axes: list[int] = []
        for d in range(ndim):
            axis = order[d]
            for j in sorted((j for j, g in enumerate(self.digits) if g.axis == axis),
                            key=lambda j: -self.digits[j].stride):  # (most significant first)
                target_shape.append(self.digits[j].radix)
                if j < free:
                    index.append(slice(None))
                    source_axes.append(free - 1 - j)
                else:
                    index.append(run.fixed[j - free])
            target_shape.append(chunk[axis])
            index.append(slice(None))
            source_axes.append(free + axis)
        source = stack.reshape(*(g.radix for g in reversed(self.digits[:free])), *chunk)
        view = target.reshape(target_shape, copy=False)[tuple(index)]
        np.copyto(view, source.transpose(source_axes))


def _mixed(value: int, radices: Sequence[int]) -> tuple[int, ...]:
    """``value``'s digits in the mixed radix ``radices`` (least significant first)."""
    out = []
    for radix in radices:
        value, digit = divmod(value, radix)
        out.append(digit)
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _digits(ranks: bytes, grid: tuple[int, ...]) -> tuple[Digit, ...] | None:
    """The digits of the order (see :meth:`StoredOrder.of`), found from the ranks where
    each digit first steps, then checked against every rank; cached by the order itself
    (a writer lays out every shard of an array alike)."""
    positions = np.frombuffer(ranks, dtype=np.intp)
    n = len(positions)
    if n != math.prod(grid) or n < 2:
        return None
    coords = np.stack(np.unravel_index(positions, grid), axis=1)
    if coords[0].any():
        return None
    digits: list[Digit] = []
    step = 1
    while step < n:
        moved = np.flatnonzero(coords[step])
        if len(moved) != 1:
            return None
        axis = int(moved[0])
        stride = int(coords[step, axis])
        radix = 2
        while radix * step < n and coords[radix * step, axis] == radix * stride and \
                np.count_nonzero(coords[radix * step]) == 1:
            radix += 1
        if n % (radix * step):
            return None
        digits.append(Digit(axis, radix, stride))
        step *= radix
    for axis, size in enumerate(grid):  # (each axis's digits nest: strides 1, r1, r1 r2, ... up to its size)
        expected = 1
        for g in sorted((g for g in digits if g.axis == axis), key=lambda g: g.stride):
            if g.stride != expected:
                return None
            expected *= g.radix
        if expected != size:
            return None
    predicted = np.zeros_like(coords)
    rank = np.arange(n)
    step = 1
    for g in digits:
        predicted[:, g.axis] += (rank // step % g.radix) * g.stride
        step *= g.radix
    return tuple(digits) if np.array_equal(predicted, coords) else None
