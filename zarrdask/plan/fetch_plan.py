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
from ..indexing import NestedParts, OrthogonalSelection, Projection, Selection

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
    if isinstance(selection, OrthogonalSelection):
        nested = selection.nested_parts(layout.unit_grid, layout.chunk_shape, units)
        return ReadPlan(() if nested is None else tuple(_orthogonal_units(nested, layout)))
    return ReadPlan(tuple(_projected_unit(p, inner(), layout)
                          for p, inner in selection.project_nested(layout.unit_grid, layout.chunk_shape, units)))


def planned_chunks(selection: Selection, layout: StorageLayout) -> int:
    """The chunks ``plan_read(selection, layout)`` decodes in all (its summary's ``chunks``),
    counted a dimension at a time: no unit is planned (an array may have billions)."""
    return selection.count_nested(layout.unit_grid, layout.chunk_shape if layout.sharded else None)


#: the fields of the one chunk of a 0-d array (its parts: none)
_NO_PARTS = ((), (), (), (), ())


def _orthogonal_units(nested: NestedParts, layout: StorageLayout) -> Iterator[UnitRead]:
    """The shards an orthogonal selection touches (``nested``: its parts on the shards and
    on their inner chunks), each with the inner chunks it needs. A box of slices is built
    from its parts' fields directly: a shard it covers (``block``) is read as a whole, and
    shards of one extent and index strides selected by the same slices need the same chunks
    in the same places (a slab across many shards), so those are made once."""
    per_dim, chunk_shape, ranged = nested.per_dim, layout.chunk_shape, layout.ranged_reads
    seen: dict[tuple[object, ...], Sequence[ChunkPlacement]] | None = \
        {} if any([len(parts) > 1 for parts in per_dim]) else None
    for idx in nested.combos:
        if not nested.basic:
            yield _projected_unit(nested.projection(idx), nested.projections(idx), layout)
            continue
        combo = [per_dim[d][i] for d, i in enumerate(idx)]
        coords, local, outs, fulls, extent = zip(*combo) if combo else _NO_PARTS
        full = False not in fulls
        strides = layout.index_strides(coords)
        chunks: Sequence[ChunkPlacement]
        if full:
            chunks = shard_placements(extent, chunk_shape, strides)
        elif seen is None:
            chunks = _box_placements(nested, idx, strides)
        else:
            key = (extent, strides, *[(d.start, d.stop, d.step) for d in local])
            found = seen.get(key)
            if found is None:
                found = seen[key] = _box_placements(nested, idx, strides)
            chunks = found
        yield UnitRead(layout.key(coords), coords, outs, tuple([o.stop - o.start for o in outs]),
                       whole=full or not ranged, chunks=chunks, block=full, extent=extent, index=local)


def _projected_unit(p: Projection, inner: list[Projection], layout: StorageLayout) -> UnitRead:
    """The shard of projection ``p`` (a part of points or integer arrays), its inner chunks
    projected as ``inner``."""
    strides = layout.index_strides(p.coords)
    return UnitRead(layout.key(p.coords), p.coords, p.out_index, p.shape, whole=p.full or not layout.ranged_reads,
                    extent=p.extent, chunks=[ChunkPlacement(q.coords, _position(q.coords, strides), q.out_index,
                                                            q.chunk_index) for q in inner])


def _box_placements(nested: NestedParts, idx: tuple[int, ...], strides: Sequence[int]) -> list[ChunkPlacement]:
    """The inner chunks of the shard at ``idx`` of a box of slices, from their parts'
    fields (a ``DimPart`` per dimension): slices of slices, so a chunk's index is its
    part's slices."""
    return [ChunkPlacement(coords, _position(coords, strides), out, local)
            for coords, local, out, _, _ in (zip(*inner) for inner in itertools.product(*nested.inside(idx)))]


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
