"""The read planner for one selection of one array: which stored values a read fetches,
how, and where each decoded chunk goes.

Pure code (no I/O, no codecs). A :class:`StorageLayout` describes how an array is stored
(the storage unit, one key each; the chunk a read decodes; for shards, where a chunk sits in
the shard index and whether ranged reads are possible). :func:`plan_read` turns a
selection into a :class:`ReadPlan` of :class:`UnitRead` records, one per stored value
touched. A unit is fetched ``whole`` (one GET) when the selection covers it or when
bytes->bytes codecs after the sharding codec hide its layout; otherwise its index is
fetched and then only the byte ranges of the chunks it needs. The byte ranges themselves
depend on the index, which only the executor (``nodes/units/shards.py``) reads.

>>> from zarrdask.metadata.grid import RegularChunkGrid
>>> layout = StorageLayout(unit_grid=RegularChunkGrid((4,)).axes((10,)), chunk_shape=(2,),
...                        index_strides=lambda coords: (1,), sharded=True, ranged_reads=True,
...                        key=lambda c: f"c/{c[0]}")
>>> from zarrdask.indexing import basic_selection
>>> selection, _ = basic_selection((slice(3, 8),), (10,))
>>> plan = plan_read(selection, layout)
>>> [(u.key, u.whole, [c.coords for c in u.chunks]) for u in plan.units]
[('c/0', False, [(1,)]), ('c/1', True, [(0,), (1,)])]
>>> plan.summary()
ReadPlanSummary(units=2, whole_gets=1, ranged_units=1, chunks=3)
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from ..metadata.grid import AxisGrid, ceil_div
from ..indexing import Nested, OrthogonalSelection, Projection, Selection

__all__ = ["ChunkPlacement", "ReadPlan", "ReadPlanSummary", "StorageLayout", "UnitRead", "plan_read",
           "planned_chunks", "shard_placements"]


class ChunkPlacement(NamedTuple):
    """One decoded chunk's part of a read: ``target[out_index] = chunk[chunk_index]``, where
    ``target`` is the unit's part of the output. ``coords`` are the chunk's coordinates (in
    its shard when sharded) and ``position`` its entry in the shard index (0 unsharded)."""

    coords: tuple[int, ...]
    position: int
    out_index: Any
    chunk_index: Any


class UnitRead(NamedTuple):
    """One stored value a read touches. ``out_index`` is where the unit's part goes in the
    output (``target = out[out_index]``; a copy written back when that is not a view) and
    ``shape`` that part's shape. ``block``: the selection covers the whole shard, so its
    chunks (every one inside the array) may be decoded side by side and placed as one block.
    For shards, ``extent`` is the shard's extent inside the array and ``index`` the unit's
    part as slices of the shard when it is a box of slices (None otherwise): what a
    decoded-chunk cache holding whole shards copies out."""

    key: str
    coords: tuple[int, ...]
    out_index: Any
    shape: tuple[int, ...]
    whole: bool
    chunks: Sequence[ChunkPlacement]
    block: bool = False
    extent: tuple[int, ...] = ()
    index: Any = None


class ReadPlanSummary(NamedTuple):
    """What a read will do: stored values touched, fetched with one GET, fetched through
    their index (one index request each unless cached, then coalesced ranges), and chunks
    decoded."""

    units: int
    whole_gets: int
    ranged_units: int
    chunks: int


@dataclass(frozen=True, slots=True)
class ReadPlan:
    units: tuple[UnitRead, ...]

    def summary(self) -> ReadPlanSummary:
        whole = sum(u.whole for u in self.units)
        return ReadPlanSummary(len(self.units), whole, len(self.units) - whole,
                               sum(len(u.chunks) for u in self.units))

    def __repr__(self) -> str:
        from ..display.plans import read_plan_text

        return read_plan_text(self)

    def _repr_html_(self) -> str:
        from ..display.plans import read_plan_html

        return read_plan_html(self)


class StorageLayout(NamedTuple):
    """How an array is stored. ``unit_grid``: the grid of stored values (one key per shard
    or chunk) laid over the array; ``chunk_shape``: the region one decode of a shard's
    inner chunk yields, in the array's axis order (unused unsharded);
    ``index_strides(unit coords)``: a chunk's position in that shard's index is
    ``sum(coords * strides)`` (shards of a rectilinear grid differ); ``ranged_reads``: a partly selected shard can be read
    through its index; ``key``: the store key of a unit's coordinates."""

    unit_grid: tuple[AxisGrid, ...]
    chunk_shape: tuple[int, ...]
    index_strides: Callable[[tuple[int, ...]], tuple[int, ...]]
    sharded: bool
    ranged_reads: bool
    key: Callable[[tuple[int, ...]], str]


def plan_read(selection: Selection, layout: StorageLayout, units: Collection[tuple[int, ...]] | None = None
              ) -> ReadPlan:
    """The plan of reading ``selection`` (see the module docstring); ``units``: of the
    units it touches, only those at these coordinates (the stored ones, say)."""
    if not layout.sharded:
        return ReadPlan(tuple(
            UnitRead(layout.key(p.coords), p.coords, None, p.shape, whole=True,
                     chunks=(ChunkPlacement(p.coords, 0, p.out_index, p.chunk_index),))
            for p in selection.project(layout.unit_grid, units)))
    planned = []
    seen: dict[tuple[object, ...], Sequence[ChunkPlacement]] = {}
    # (basic slices: every shard's part, in the shard and in the output, is a box of slices)
    slices = isinstance(selection, OrthogonalSelection) and selection.is_basic
    for p, inner in selection.project_nested(layout.unit_grid, layout.chunk_shape, units):
        block = slices and p.full
        planned.append(UnitRead(layout.key(p.coords), p.coords, p.out_index, p.shape,
                                whole=p.full or not layout.ranged_reads,
                                chunks=_placements(p, inner, layout, block, slices, seen), block=block,
                                extent=p.extent, index=p.local if slices else None))
    return ReadPlan(tuple(planned))


def planned_chunks(selection: Selection, layout: StorageLayout) -> int:
    """The chunks ``plan_read(selection, layout)`` decodes in all (its summary's ``chunks``),
    counted a dimension at a time: no unit is planned (an array may have billions)."""
    return selection.count_nested(layout.unit_grid, layout.chunk_shape if layout.sharded else None)


def _placements(p: Projection, inner: Nested, layout: StorageLayout, block: bool, slices: bool,
                seen: dict[tuple[object, ...], Sequence[ChunkPlacement]]) -> Sequence[ChunkPlacement]:
    """The inner chunks a shard's projection needs (``inner``: its part projected onto
    them; ``slices``: a part of slices). Shards of one extent and index strides selected
    by the same slices need the same chunks in the same places (a slab across many
    shards): ``seen`` keeps them by those."""
    strides = layout.index_strides(p.coords)
    if block:
        return shard_placements(p.extent, layout.chunk_shape, strides)
    if not slices:
        return [ChunkPlacement(q.coords, _position(q.coords, strides), q.out_index, q.chunk_index) for q in inner()]
    key = (p.extent, strides, *((d.start, d.stop, d.step) for d in p.local))
    found = seen.get(key)
    if found is None:
        combos = inner.combos()
        found = seen[key] = ([_placement(zip(*combo), strides) for combo in combos] if combos is not None else
                             [ChunkPlacement(q.coords, _position(q.coords, strides), q.out_index, q.local)
                              for q in inner()])
    return found


def _placement(fields: Iterator[tuple[Any, ...]], strides: Sequence[int]) -> ChunkPlacement:
    """An inner chunk's placement from its parts' fields (``DimPart``'s, a dimension each):
    slices of slices, so its index is its part's slices."""
    coords, local, out, _, _ = fields
    return ChunkPlacement(coords, sum(map(operator.mul, coords, strides)), out, local)


def _position(coords: Sequence[int], strides: Sequence[int]) -> int:
    return sum(map(operator.mul, coords, strides))


def index_strides(grid: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """Index strides of the array's axes. A shard index is C-ordered over the sharding
    codec's inner grid ``grid``, whose axis ``k`` is the array's axis ``perm[k]``
    (transpose codecs before the sharding codec permute it)."""
    strides = [0] * len(grid)
    step = 1
    for k in reversed(range(len(grid))):
        strides[perm[k]] = step
        step *= grid[k]
    return tuple(strides)


@lru_cache(maxsize=64)
def shard_placements(shard_shape: tuple[int, ...], inner_shape: tuple[int, ...], strides: tuple[int, ...]
                 ) -> tuple[ChunkPlacement, ...]:
    """Every inner chunk of a shard read whole (``shard_shape`` clipped to the array): its
    region of the shard, and the part of the chunk that is in bounds."""
    layout = []
    for coords in itertools.product(*(range(ceil_div(s, c)) for s, c in zip(shard_shape, inner_shape))):
        region = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, inner_shape, shard_shape))
        clipped = any(r.stop - r.start < c for r, c in zip(region, inner_shape))
        inner = tuple(slice(0, r.stop - r.start) for r in region) if clipped else ...
        layout.append(ChunkPlacement(coords, _position(coords, strides), region, inner))
    return tuple(layout)


def is_view(index: Any) -> bool:
    """True when indexing with ``index`` gives a view (basic slices only)."""
    return isinstance(index, tuple) and all(isinstance(s, slice) for s in index)
