"""The copies that read parts of a read out of the decoded-chunk cache into its output:
one per held chunk, or a held shard's part in slabs, spread over the threads when large."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ...plan.fetch_plan import ChunkPlacement, UnitRead
from ...runtime.executor import run_all

__all__ = ["Copy", "Hits", "held_copies", "place_copies"]


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
    if nbytes < _PARALLEL_HIT_BYTES:
        for hit in hits:
            _place(hit)
        return
    run_all(_place, hits, threads, min_parallel=2)


def _place(hit: Copy) -> None:
    hit.target[hit.placement.out_index] = hit.chunk[hit.placement.chunk_index]


class Hits:
    """The copies of one read out of cached chunks as they are found: made at once for a
    small read (gathering a record per chunk would cost more than its copy), gathered and
    spread over the threads by :meth:`finish` for a large one (``nbytes``: the read's
    result), as :func:`place_copies` does."""

    __slots__ = ("_threads", "_gathered")

    def __init__(self, threads: int | None, nbytes: int) -> None:
        self._threads = threads
        self._gathered: list[Copy] | None = [] if nbytes >= _PARALLEL_HIT_BYTES else None

    def add(self, target: np.ndarray, placement: ChunkPlacement, chunk: np.ndarray) -> None:
        if self._gathered is None:
            target[placement.out_index] = chunk[placement.chunk_index]
        else:
            self._gathered.append(Copy(target, placement, chunk))

    def finish(self) -> None:
        if self._gathered:
            run_all(_place, self._gathered, self._threads, min_parallel=2)


class _Segment(NamedTuple):
    """Along one axis, a part of a box in a held shard: chunks ``g0:g1``, rows ``c0:c1`` of
    each, landing at ``at`` in the unit's part."""

    g0: int
    g1: int
    c0: int
    c1: int
    at: int


def _segments(start: int, stop: int, size: int) -> list[_Segment]:
    """``start:stop`` of one axis cut into cut chunks and runs of whole chunks of ``size``."""
    segments = []
    at = 0
    while start < stop:
        g, r = divmod(start, size)
        if r == 0 and stop - start >= size:
            k = (stop - start) // size
            segments.append(_Segment(g, g + k, 0, size, at))
            step = k * size
        else:
            end = min(stop, (g + 1) * size)
            segments.append(_Segment(g, g + 1, r, end - g * size, at))
            step = end - start
        start += step
        at += step
    return segments


#: a copy between two arrays shaped alike: ``target[...] = source[...]``
_ALL = ChunkPlacement((), -1, Ellipsis, Ellipsis)


def held_copies(unit: UnitRead, target: np.ndarray, data: np.ndarray, inverse: Sequence[int]) -> list[Copy]:
    """The copies of ``unit``'s part out of its held shard ``data`` (``(*grid, *chunk)``:
    the grid in the array's axis order, each chunk in the sharding codec's; ``inverse[d]``
    is the chunk axis that is the array's axis ``d``). A box of unit-step slices is one
    copy per combination of segments (``_segments``), through views that pair each grid
    axis with its chunk axis, large ones in slabs for the threads; any other selection
    (``unit.index`` None, or strided) goes chunk by chunk."""
    n = len(inverse)
    index = unit.index
    if index is None or any(d.step != 1 for d in index):
        return [Copy(target, p, data[p.coords].transpose(inverse)) for p in unit.chunks]
    paired = data.transpose([a for d in range(n) for a in (d, n + inverse[d])])  # (g0, c0, g1, c1, ...)
    copies: list[Copy] = []
    for combo in itertools.product(*(_segments(d.start, d.stop, paired.shape[2 * k + 1])
                                     for k, d in enumerate(index))):
        source = paired[tuple(s for seg in combo for s in (slice(seg.g0, seg.g1), slice(seg.c0, seg.c1))) or ...]
        out = target[tuple(slice(seg.at, seg.at + (seg.g1 - seg.g0) * (seg.c1 - seg.c0)) for seg in combo)
                     or ...].view()  # (``...``: a 0-d array stays an array)
        out.shape = source.shape  # (splitting each axis in two: always a view)
        copies.extend(_slabs(out, source))
    return copies


def _slabs(out: np.ndarray, source: np.ndarray) -> list[Copy]:
    """One copy, or slabs of it along its first axis longer than 1 when it is large."""
    if out.nbytes < 2 * _HIT_SLAB_BYTES:
        return [Copy(out, _ALL, source)]
    axis = next((a for a, n in enumerate(out.shape) if n > 1), 0)
    length = out.shape[axis]
    pieces = min(length, -(-out.nbytes // _HIT_SLAB_BYTES))
    lead = (slice(None),) * axis
    bounds = [length * i // pieces for i in range(pieces + 1)]
    return [Copy(out[(*lead, slice(a, b))], _ALL, source[(*lead, slice(a, b))]) for a, b in zip(bounds, bounds[1:])]
