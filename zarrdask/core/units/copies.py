"""The copies that read parts of a read out of the decoded-chunk cache into its output:
one per held chunk, or a held shard's part in slabs, spread over the threads when large."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ...plan.fetch_plan import ChunkPlacement, UnitRead
from ..executor import run_all

__all__ = ["Copy", "held_copies", "place_copies"]


class Copy(NamedTuple):
    """A part of a read found in the decoded-chunk cache: ``target[placement.out_index]
    = chunk[placement.chunk_index]``, ``chunk`` (a chunk or a held shard) in the array's
    axis order."""

    target: np.ndarray
    placement: ChunkPlacement
    chunk: np.ndarray


#: cached chunks copied out on several threads only for reads of this many bytes or more
_PARALLEL_HIT_BYTES = 2 << 20
#: a unit's part of a held shard is copied out in slabs of about this many bytes
_HIT_SLAB_BYTES = 4 << 20


def place_copies(hits: Sequence[Copy], threads: int | None, nbytes: int) -> None:
    """Copy each hit's part into its target; spread over the threads when the read's
    result (``nbytes``) is large."""
    def place(hit: Copy) -> None:
        hit.target[hit.placement.out_index] = hit.chunk[hit.placement.chunk_index]

    if nbytes < _PARALLEL_HIT_BYTES:
        for hit in hits:
            place(hit)
        return
    run_all(place, hits, threads, min_parallel=2)


def held_copies(unit: UnitRead, target: np.ndarray, shard: np.ndarray) -> list[Copy]:
    """The copies of ``unit``'s part out of its held shard: slabs along the first axis
    (for several threads) when the part is a box of slices, else one copy."""
    index = unit.index
    first = index[0] if isinstance(index, tuple) and index else None
    if (not isinstance(first, slice) or target.nbytes < 2 * _HIT_SLAB_BYTES or target.ndim == 0
            or not all(isinstance(d, slice) for d in index)):
        return [Copy(target, ChunkPlacement((), -1, Ellipsis, index), shard)]
    rows = range(*first.indices(shard.shape[0]))
    step = max(1, _HIT_SLAB_BYTES * len(rows) // target.nbytes)
    copies = []
    for a in range(0, len(rows), step):
        part = rows[a: a + step]
        copies.append(Copy(target[a: a + step], ChunkPlacement((), -1, Ellipsis, (
            slice(part.start, part.stop, part.step), *index[1:])), shard))
    return copies
