"""The write planner: which task writes which storage units, from which source blocks.

Pure code (no Dask, no I/O). Input: the target array's shape, the source's dask block
chunks, the target's *unit grid* (its storage units: shards when sharded, else chunks)
and an optional region of the target that the source covers exactly. Output: a
:class:`WritePlan` whose tasks partition the unit-grid cells ("units", one storage key
each) touched by the region, so that **every unit is owned by exactly one task** and two
tasks can never race on a key.

The plan is separable: along each axis the region is cut into :class:`AxisGroup` runs of
cells, and the tasks are the Cartesian product of the per-axis groups. Along one axis a
group is either

* a maximal run of cells lying inside one source block (aligned blocks map one-to-one
  to tasks; a block covering several whole shards writes all of them), or
* one cell that straddles block boundaries; its task gathers the pieces of every source
  block that touches it (no global rechunk).

Hence a task's output buffer is at most one unit, or one source block when the block is
bigger, along every axis. Units only partly covered by the region are read-modify-written
by their owner task.

>>> plan = make_write_plan((100,), ((30, 30, 40),), (32,))
>>> for task in plan.tasks():
...     print(task.region[0], list(task.cells[0]), [p.block for p in task.pieces])
slice(0, 32, None) [0] [(0,), (1,)]
slice(32, 64, None) [1] [(1,), (2,)]
slice(64, 100, None) [2, 3] [(2,)]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import BoundsError, ChunkAlignmentError, SelectionError, ShapeMismatchError
from ..metadata.grid import AxisGrid, as_axes

__all__ = [
    "AxisGroup",
    "SourcePiece",
    "Span",
    "WritePlan",
    "WritePlanSummary",
    "WriteTask",
    "make_write_plan",
    "normalize_region",
]


class Span(NamedTuple):
    """``[start, stop)`` along one axis."""

    start: int
    stop: int


class AxisPiece(NamedTuple):
    """Along one axis: ``block_slice`` of block ``block`` goes to ``out_slice`` of the
    group's buffer (relative to the block, and to the group's start)."""

    block: int
    block_slice: slice
    out_slice: slice


@dataclass(frozen=True, slots=True)
class AxisGroup:
    """Along one axis: the cells ``cells`` owned by one slab of tasks, covering target
    coordinates ``[start, stop)``, and the source-block pieces that fill it.

    ``full`` is the sub-range of ``cells`` fully covered by the region along this axis
    (only the region's first and last cell can be partly covered)."""

    start: int
    stop: int
    cells: range
    full: range
    pieces: tuple[AxisPiece, ...]


@dataclass(frozen=True, slots=True)
class SourcePiece:
    """Part of one source block: ``block`` (dask block index), the slices of that block,
    and where they go in the owning task's region buffer."""

    block: tuple[int, ...]
    block_slices: tuple[slice, ...]
    out_slices: tuple[slice, ...]


@dataclass(frozen=True, slots=True)
class WriteTask:
    """One writer: owns the units ``itertools.product(*cells)`` and writes ``region``.

    The pieces tile ``region`` exactly. A unit is fully covered when its coordinate lies in
    ``full`` along every axis; otherwise the task read-modify-writes it.
    """

    index: tuple[int, ...]
    region: tuple[slice, ...]
    cells: tuple[range, ...]
    full: tuple[range, ...]
    pieces: tuple[SourcePiece, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in self.region)

    def units(self) -> Iterator[tuple[int, ...]]:
        """The units this task owns (each is one storage key)."""
        return itertools.product(*self.cells)

    def is_full(self, unit: Sequence[int]) -> bool:
        """Whether ``unit`` is entirely overwritten (no read-modify-write needed)."""
        return all(c in f for c, f in zip(unit, self.full))


@dataclass(frozen=True, slots=True)
class WritePlanSummary:
    """What a write will do. Units are shards when the target is sharded, else chunks;
    byte counts are uncompressed estimates."""

    write_tasks: int
    units_written: int
    full_writes: int
    read_modify_writes: int
    source_blocks: int
    max_blocks_per_task: int
    mean_blocks_per_task: float
    max_task_bytes: int
    bytes_written: int
    bytes_read: int
    aligned: bool

    def __repr__(self) -> str:
        from .plan_display import write_summary_text

        return write_summary_text(self)

    def _repr_html_(self) -> str:
        from .plan_display import write_summary_html

        return write_summary_html(self)


@dataclass(frozen=True, slots=True)
class WritePlan:
    """The tasks of one write: the Cartesian product of per-axis groups ``axes``.

    Tasks are generated on demand (:meth:`tasks`) so that a plan for a million units costs
    only the per-axis lists; :meth:`summary` is computed from those lists alone.
    """

    shape: tuple[int, ...]
    grid: tuple[AxisGrid, ...]  # the storage units (one key each) laid over the array
    region: tuple[slice, ...]
    source_chunks: tuple[tuple[int, ...], ...]
    axes: tuple[tuple[AxisGroup, ...], ...]

    @property
    def task_grid(self) -> tuple[int, ...]:
        """Number of groups along each axis (the shape of the task grid)."""
        return tuple(len(groups) for groups in self.axes)

    def __len__(self) -> int:
        return math.prod(self.task_grid)

    def tasks(self) -> Iterator[WriteTask]:
        """Every write task, in C order of the task grid."""
        for index in itertools.product(*(range(n) for n in self.task_grid)):
            yield self.task(index)

    def task(self, index: Sequence[int]) -> WriteTask:
        """The task at ``index`` of the task grid, built from the per-axis groups alone
        (a graph generates its tasks one by one this way, when it is materialised)."""
        return _make_task(tuple((i, groups[i]) for i, groups in zip(index, self.axes)))

    def summary(self, itemsize: int = 1) -> WritePlanSummary:
        """Counts and estimated bytes of this plan (``itemsize`` bytes per element)."""
        unit_extents = [_unit_extents(groups, axis) for groups, axis in zip(self.axes, self.grid)]
        total_volume = math.prod(sum(e for e, _ in ext) for ext in unit_extents)
        full_volume = math.prod(sum(e for e, full in ext if full) for ext in unit_extents)
        units = math.prod(len(ext) for ext in unit_extents)
        full_units = math.prod(sum(1 for _, full in ext if full) for ext in unit_extents)
        per_axis_pieces = [[len(g.pieces) for g in groups] for groups in self.axes]
        tasks = len(self)
        return WritePlanSummary(
            write_tasks=tasks,
            units_written=units,
            full_writes=full_units,
            read_modify_writes=units - full_units,
            source_blocks=math.prod(sum(1 for c in chunks if c) for chunks in self.source_chunks) if tasks else 0,
            max_blocks_per_task=math.prod(max(p, default=0) for p in per_axis_pieces),
            mean_blocks_per_task=math.prod(sum(p) / len(p) for p in per_axis_pieces) if tasks else 0.0,
            max_task_bytes=itemsize * math.prod(max((g.stop - g.start for g in groups), default=0) for groups in self.axes),
            bytes_written=itemsize * total_volume,
            bytes_read=itemsize * (total_volume - full_volume),
            aligned=tasks > 0 and all(_axis_aligned(groups, chunks) for groups, chunks in zip(self.axes, self.source_chunks)),
        )


def make_write_plan(
    shape: Sequence[int],
    source_chunks: Sequence[Sequence[int]],
    grid: Sequence[int | AxisGrid],
    region: Sequence[slice] | None = None,
) -> WritePlan:
    """Plan writing a source with dask ``source_chunks`` into ``region`` of an array whose
    storage units form ``grid`` (its axes, or a regular unit shape).

    ``source_chunks`` must tile the region exactly (its sums are the region's extents).
    Raises ShapeMismatchError / SelectionError / BoundsError for inconsistent inputs.
    """
    shape = tuple(int(n) for n in shape)
    chunks = tuple(tuple(int(c) for c in axis) for axis in source_chunks)
    if len(grid) != len(shape) or len(chunks) != len(shape):
        raise ShapeMismatchError(
            f"array of {len(shape)} dimensions, unit grid of {len(grid)}, source chunks of {len(chunks)}"
        )
    if any(isinstance(g, int) and g <= 0 for g in grid):
        raise ShapeMismatchError(f"unit grid {tuple(grid)} must be positive along every axis")
    axis_grids = as_axes(grid, shape)
    bounds = normalize_region(region, shape)
    for axis, ((start, stop), axis_chunks) in enumerate(zip(bounds, chunks)):
        if any(c < 0 for c in axis_chunks):
            raise ChunkAlignmentError(f"source chunks along axis {axis} are negative: {axis_chunks}")
        if sum(axis_chunks) != stop - start:
            raise ShapeMismatchError(
                f"source chunks along axis {axis} sum to {sum(axis_chunks)}, "
                f"but the region [{start}:{stop}] has extent {stop - start}"
            )
    axes = tuple(
        _plan_axis(axis, start, stop, axis_chunks) for axis, (start, stop), axis_chunks in zip(axis_grids, bounds, chunks)
    )
    return WritePlan(shape, axis_grids, tuple(slice(a, b) for a, b in bounds), chunks, axes)


def normalize_region(region: Sequence[slice] | None, shape: Sequence[int]) -> tuple[Span, ...]:
    """The :class:`Span` per axis of a region given as step-1 slices (``None`` = the whole
    array; missing trailing axes are whole; negative bounds count from the end)."""
    given: tuple[Any, ...] = () if region is None else tuple(region) if isinstance(region, (tuple, list)) else (region,)
    if len(given) > len(shape):
        raise SelectionError(f"region has {len(given)} dimensions, the array has {len(shape)}")
    given += (slice(None),) * (len(shape) - len(given))
    bounds: list[Span] = []
    for axis, (sel, size) in enumerate(zip(given, shape)):
        if not isinstance(sel, slice) or sel.step not in (None, 1):
            raise SelectionError(f"region along axis {axis} must be a slice with step 1, got {sel!r}")
        start = _bound(sel.start, 0, size)
        stop = _bound(sel.stop, size, size)
        if not 0 <= start <= stop <= size:
            raise BoundsError(f"region {sel!r} along axis {axis} is outside [0, {size}]")
        bounds.append(Span(start, stop))
    return tuple(bounds)


def _bound(value: int | None, default: int, size: int) -> int:
    if value is None:
        return default
    value = int(value)
    return value + size if value < 0 else value


def _plan_axis(axis: AxisGrid, start: int, stop: int, chunks: tuple[int, ...]) -> tuple[AxisGroup, ...]:
    """Cut ``[start, stop)`` of one axis into groups of units (see module doc)."""
    if start == stop:
        return ()
    offsets = list(itertools.accumulate(chunks, initial=start))
    blocks = [(b, offsets[b], offsets[b + 1]) for b in range(len(chunks)) if chunks[b]]
    first_cell, last_cell = axis.index_of(start), axis.index_of(stop - 1)
    end_cell = last_cell + 1
    full_lo = first_cell if axis.bounds(first_cell)[0] == start else first_cell + 1
    full_hi = end_cell if axis.bounds(last_cell)[1] == stop else last_cell
    groups = []
    cell, j = first_cell, 0
    while cell < end_cell:
        cell_lo, cell_hi = axis.bounds(cell)
        lo, hi = max(cell_lo, start), min(cell_hi, stop)
        while blocks[j][2] <= lo:
            j += 1
        if blocks[j][2] >= hi:  # the cell lies inside block j: take every cell inside it
            last = end_cell if blocks[j][2] == stop else axis.index_of(blocks[j][2])
            hi = min(axis.bounds(last - 1)[1], stop)
            touching = [blocks[j]]
        else:  # the cell straddles block boundaries: gather every block touching it
            last = cell + 1
            touching = list(itertools.takewhile(lambda blk: blk[1] < hi, blocks[j:]))
        pieces = tuple(
            AxisPiece(b, slice(max(lo, b0) - b0, min(hi, b1) - b0), slice(max(lo, b0) - lo, min(hi, b1) - lo))
            for b, b0, b1 in touching
        )
        cells = range(cell, last)
        full = range(max(cell, full_lo), max(cell, min(full_hi, last)))
        groups.append(AxisGroup(lo, hi, cells, full, pieces))
        cell = last
    return tuple(groups)


def _make_task(combo: tuple[tuple[int, AxisGroup], ...]) -> WriteTask:
    if not combo:  # a 0-d array: one task, one block
        return WriteTask((), (), (), (), (SourcePiece((), (), ()),))
    index, groups = zip(*combo)
    pieces = tuple(
        SourcePiece(*zip(*axis_pieces)) for axis_pieces in itertools.product(*(g.pieces for g in groups))
    )
    return WriteTask(
        index,
        tuple(slice(g.start, g.stop) for g in groups),
        tuple(g.cells for g in groups),
        tuple(g.full for g in groups),
        pieces,
    )


def _unit_extents(groups: tuple[AxisGroup, ...], axis: AxisGrid) -> list[tuple[int, bool]]:
    """(extent within the array, fully covered?) of every cell touched along one axis."""
    extents = []
    for g in groups:
        for c in g.cells:
            lo, hi = axis.bounds(c)
            extents.append((hi - lo, c in g.full))
    return extents


def _axis_aligned(groups: tuple[AxisGroup, ...], chunks: tuple[int, ...]) -> bool:
    """One group per non-empty block, each taking that whole block."""
    return sum(1 for c in chunks if c) == len(groups) and all(
        len(g.pieces) == 1 and g.pieces[0].block_slice.stop - g.pieces[0].block_slice.start == chunks[g.pieces[0].block]
        for g in groups
    )
