"""A shard held in the decoded-chunk cache: its inner chunks side by side in one array,
each decoded straight into its slot as reads need it.

The array is ``(*grid, *chunk)``: the shard's inner chunks inside the array along each
array axis, then one decoded inner chunk (the sharding codec's axis order), so a chunk is
decoded into its slot with no copy, and any box of the shard is copied out through views
that pair each grid axis with its chunk axis: one copy per run of whole chunks and per cut
chunk along each axis, not one per chunk. Each inner chunk has a state: absent, being
decoded (claimed by one read, which alone writes its slot), or in. A read claims the
absent chunks it needs, decodes them, and settles them: in, unless a write through zarrdask
came after the read's fetch began (then absent again; the write has dropped the shard from
the pool anyway). A read that needs a chunk another read is decoding waits for it after
settling its own claims, so two reads never wait on each other.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence

import numpy as np

from ..plan.fetch_plan import ChunkPlacement
from .output import held_array

__all__ = ["HeldShard"]

_ABSENT, _DECODING, _IN = 0, 1, 2


class HeldShard:
    """The array a shard's inner chunks are decoded into (``data``; ``slots`` the same as a
    stack of chunks; a slot written only by the read that claimed it) and each chunk's
    state, by its position in the shard index."""

    __slots__ = ("data", "slots", "strides", "nbytes", "_state", "_in", "_inside", "_cond")

    def __init__(self, grid: tuple[int, ...], chunk: tuple[int, ...], dtype: np.dtype, positions: int,
                 inside: int) -> None:
        """``grid``: the inner chunks inside the array along each of its axes; ``chunk``: an
        inner chunk's decoded shape; ``positions``: the shard index's entries; ``inside``:
        the chunks inside the array (``prod(grid)``)."""
        self.data = held_array((*grid, *chunk), dtype)
        self.slots = self.data.reshape(-1, *chunk)  # (a view: one slot per chunk, C order over the grid)
        self.strides = tuple(math.prod(grid[d + 1:]) for d in range(len(grid)))  # (a chunk's slot: coords . strides)
        self.nbytes = self.data.nbytes + positions
        self._state = bytearray(positions)
        self._in = 0
        self._inside = inside
        self._cond = threading.Condition(threading.Lock())

    def slot(self, coords: Sequence[int]) -> int:
        """The slot of the inner chunk at ``coords`` (its coordinates in the shard)."""
        return sum(c * n for c, n in zip(coords, self.strides))

    def claim(self, chunks: Sequence[ChunkPlacement]) -> tuple[list[int], list[int]]:
        """The positions of ``chunks`` now claimed by the caller (they were absent), and those
        another read is decoding; the caller must :meth:`settle` what it claimed."""
        if self._in == self._inside:  # (every chunk in: a read of a held shard takes no lock)
            return [], []
        mine: list[int] = []
        busy: list[int] = []
        with self._cond:
            state = self._state
            for chunk in chunks:
                p = chunk.position
                s = state[p]
                if s == _ABSENT:
                    state[p] = _DECODING
                    mine.append(p)
                elif s == _DECODING:
                    busy.append(p)
        return mine, busy

    def settle(self, positions: Iterable[int], kept: bool) -> None:
        """Claimed chunks decoded into place (``kept``) or given up (absent again)."""
        with self._cond:
            state = self._state
            for p in positions:
                state[p] = _IN if kept else _ABSENT
                self._in += kept
            self._cond.notify_all()

    def wait(self, positions: Sequence[int]) -> bool:
        """Wait until no read decodes any of ``positions``; whether some were given up (absent:
        the caller claims them again)."""
        with self._cond:
            state = self._state
            self._cond.wait_for(lambda: all(state[p] != _DECODING for p in positions))
            return any(state[p] == _ABSENT for p in positions)
