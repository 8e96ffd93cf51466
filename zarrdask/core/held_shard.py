"""A shard held in the decoded-chunk cache: one array, the shard in the array's axis order
clipped at the array's edge, that its inner chunks are decoded into as reads need them.

Held this way, any part of a shard whose chunks are all in is one copy out of one array
(a box copy, rows as long as the shard's), where chunks held one by one cost a copy per
chunk with rows as short as a chunk's. Each inner chunk has a state: absent, being decoded
(claimed by one read, which alone writes its region), or in. A read claims the absent
chunks it needs, decodes them into their regions, and settles them: in, unless a write
through zarrdask came after the read's fetch began (then absent again; the write has
dropped the shard from the pool anyway). A read that needs a chunk another read is
decoding waits for it after settling its own claims, so two reads never wait on each
other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np

from ..plan.fetch_plan import ChunkPlacement
from .output import held_array

__all__ = ["HeldShard"]

_ABSENT, _DECODING, _IN = 0, 1, 2


class HeldShard:
    """The array a shard's inner chunks are decoded into (``data``, writable only by the read
    that claimed a region) and each chunk's state, by its position in the shard index."""

    __slots__ = ("data", "nbytes", "_state", "_in", "_inside", "_cond")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, positions: int, inside: int) -> None:
        """``positions``: the shard index's entries; ``inside``: the chunks inside the array."""
        self.data = held_array(shape, dtype)
        self.nbytes = self.data.nbytes + positions
        self._state = bytearray(positions)
        self._in = 0
        self._inside = inside
        self._cond = threading.Condition(threading.Lock())

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
