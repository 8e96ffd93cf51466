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

With a target ``task_bytes`` the groups are regrouped along each axis into runs of whole
units of at most ``cap`` elements, every axis grown by the same factor over the largest
unit (the balance of :func:`~zarrdask.plan.read_plan.auto_read_chunks`): a group longer
than its cap is split between units, and consecutive groups are merged while they fit.
A task then covers at most ``task_bytes``, unless the units themselves are bigger (then
each task is one unit); a merged task gathers the pieces of every block it touches.

>>> plan = make_write_plan((100,), ((30, 30, 40),), (32,))
>>> for task in plan.tasks():
...     print(task.region[0], list(task.cells[0]), [p.block for p in task.pieces])
slice(0, 32, None) [0] [(0,), (1,)]
slice(32, 64, None) [1] [(1,), (2,)]
slice(64, 100, None) [2, 3] [(2,)]

Ten blocks of one unit each, grouped to tasks of at most 32 bytes (three units):

>>> grouped = make_write_plan((100,), ((10,) * 10,), (10,), task_bytes=32, itemsize=1)
>>> [(t.region[0].start, t.region[0].stop, len(t.pieces)) for t in grouped.tasks()]
[(0, 30, 3), (30, 60, 3), (60, 90, 3), (90, 100, 1)]
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import BoundsError, ChunkAlignmentError, InvalidValueError, SelectionError, ShapeMismatchError
from ..metadata.grid import AxisGrid, as_axes
from .read_plan import auto_read_chunks

__all__ = [
    "AxisGroup",
    "CUT_BYTES",
    "Pieces",
    "SourcePiece",
    "Span",
    "WritePlan",
    "WritePlanSummary",
    "WriteTask",
    "make_write_plan",
    "normalize_region",
]


CUT_BYTES = 16 * 2**20  # misaligned blocks are cut into piece tasks when the largest block is this big


class Pieces(NamedTuple):
    """How a write hands the blocks that cut its units to its write tasks: cut into piece
    tasks (``cut``: a misaligned write whose largest block holds at least ``CUT_BYTES``,
    or a staged one), and those pieces waiting in the target's store (``staged``) rather
    than in worker memory, where ``waiting_bytes`` (one row of write tasks across the
    region: what waits for the next block row) would."""

    cut: bool
    staged: bool
    waiting_bytes: int


class Span(NamedTuple):
    """``[start, stop)`` along one axis: a region's step-1 slice, printed as that slice, so
    messages show regions as users write them."""

    start: int
    stop: int

    def __repr__(self) -> str:
        return f"slice({self.start}, {self.stop})"


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

    Its source pieces are the Cartesian product of ``axis_pieces`` (per axis, the parts of
    the blocks along that axis, in order); they tile ``region`` exactly. A unit is fully
    covered when its coordinate lies in ``full`` along every axis; otherwise the task
    read-modify-writes it.
    """

    index: tuple[int, ...]
    region: tuple[slice, ...]
    cells: tuple[range, ...]
    full: tuple[range, ...]
    axis_pieces: tuple[tuple[AxisPiece, ...], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in self.region)

    @property
    def pieces(self) -> tuple[SourcePiece, ...]:
        """The source pieces, in C order of the per-axis pieces (one per block touched)."""
        if not self.axis_pieces:  # a 0-d array: one block
            return (SourcePiece((), (), ()),)
        return tuple(SourcePiece(*zip(*combo)) for combo in itertools.product(*self.axis_pieces))

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
    max_units_per_task: int
    median_units_per_task: int  # the lower median over tasks
    task_bytes: int | None  # the target size of a task (None: one task per owned run of units)
    pieces: Pieces  # how cut blocks reach the write tasks

    def __repr__(self) -> str:
        from ..display.plans import write_summary_text

        return write_summary_text(self)

    def _repr_html_(self) -> str:
        from ..display.plans import write_summary_html

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
    task_bytes: int | None = None  # the target the groups were merged to, if any

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

    @property
    def _largest_task_elements(self) -> int:
        """The elements of the largest write task's region (each axis's longest group)."""
        return math.prod(max((g.stop - g.start for g in groups), default=0) for groups in self.axes)

    @property
    def aligned(self) -> bool:
        """No source block boundary falls inside a unit (no task gathers pieces of a cut block)."""
        return len(self) > 0 and all(_axis_aligned(groups, axis) for groups, axis in zip(self.axes, self.grid))

    def pieces(self, itemsize: int, staging: bool | None = None, *, can_stage: bool = True,
               cut_bytes: int = CUT_BYTES) -> Pieces:
        """How this write's cut blocks reach their write tasks (``itemsize`` bytes per
        element). ``staging``: True stages (cutting blocks of any size), False never, None
        stages where ``waiting_bytes`` would outweigh one thread's work, 2 x (largest block
        + largest task buffer); ``can_stage``: False where the target cannot hold the
        pieces (object dtypes, transactional sessions)."""
        largest_block = itemsize * math.prod(max(c, default=0) for c in self.source_chunks)
        task = itemsize * self._largest_task_elements
        first = max((g.stop - g.start for g in self.axes[0]), default=0) if self.axes else 0
        waiting = itemsize * first * math.prod(s.stop - s.start for s in self.region[1:])
        if self.aligned or not len(self):
            return Pieces(False, False, 0)
        if staging is None:
            staging = can_stage and largest_block >= cut_bytes and waiting > 2 * (largest_block + task)
        staged = bool(staging) and can_stage
        return Pieces(staged or largest_block >= cut_bytes, staged, waiting)

    def summary(self, itemsize: int = 1, staging: bool | None = None, *, can_stage: bool = True) -> WritePlanSummary:
        """Counts and estimated bytes of this plan (``itemsize`` bytes per element), and how
        its cut blocks reach the write tasks (:meth:`pieces`, for ``staging``)."""
        unit_extents = [_unit_extents(groups, axis) for groups, axis in zip(self.axes, self.grid)]
        total_volume = math.prod(sum(e for e, _ in ext) for ext in unit_extents)
        full_volume = math.prod(sum(e for e, full in ext if full) for ext in unit_extents)
        units = math.prod(len(ext) for ext in unit_extents)
        full_units = math.prod(sum(1 for _, full in ext if full) for ext in unit_extents)
        per_axis_pieces = [[len(g.pieces) for g in groups] for groups in self.axes]
        per_axis_units = [Counter(len(g.cells) for g in groups) for groups in self.axes]
        tasks = len(self)
        return WritePlanSummary(
            write_tasks=tasks,
            units_written=units,
            full_writes=full_units,
            read_modify_writes=units - full_units,
            source_blocks=math.prod(sum(1 for c in chunks if c) for chunks in self.source_chunks) if tasks else 0,
            max_blocks_per_task=math.prod(max(p, default=0) for p in per_axis_pieces),
            mean_blocks_per_task=math.prod(sum(p) / len(p) for p in per_axis_pieces) if tasks else 0.0,
            max_task_bytes=itemsize * self._largest_task_elements,
            bytes_written=itemsize * total_volume,
            bytes_read=itemsize * (total_volume - full_volume),
            aligned=self.aligned,
            max_units_per_task=math.prod(max(c, default=0) for c in per_axis_units),
            median_units_per_task=_lower_median_product(per_axis_units) if tasks else 0,
            task_bytes=self.task_bytes,
            pieces=self.pieces(itemsize, staging, can_stage=can_stage),
        )


def make_write_plan(
    shape: Sequence[int],
    source_chunks: Sequence[Sequence[int]],
    grid: Sequence[int | AxisGrid],
    region: Sequence[slice] | None = None,
    *,
    task_bytes: int | None = None,
    itemsize: int = 1,
) -> WritePlan:
    """Plan writing a source with dask ``source_chunks`` into ``region`` of an array whose
    storage units form ``grid`` (its axes, or a regular unit shape).

    ``source_chunks`` must tile the region exactly (its sums are the region's extents).
    ``task_bytes``: group units into tasks of at most that many bytes (``itemsize`` bytes
    per element; see the module doc); None keeps one task per owned run of units.
    Raises ShapeMismatchError / SelectionError / BoundsError for inconsistent inputs,
    InvalidValueError for a task_bytes or itemsize that is not positive.
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
    if task_bytes is not None and (task_bytes <= 0 or itemsize <= 0):
        raise InvalidValueError(f"task_bytes={task_bytes} and itemsize={itemsize} must be positive integers")
    caps = _task_caps(axis_grids, bounds, task_bytes, itemsize) if task_bytes is not None else (None,) * len(shape)
    axes = tuple(
        _plan_axis(axis, start, stop, axis_chunks, cap)
        for axis, (start, stop), axis_chunks, cap in zip(axis_grids, bounds, chunks, caps)
    )
    return WritePlan(shape, axis_grids, tuple(slice(a, b) for a, b in bounds), chunks, axes, task_bytes)


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
        start = _bound(sel.start, 0, size, axis, sel)
        stop = _bound(sel.stop, size, size, axis, sel)
        if not 0 <= start <= stop <= size:
            raise BoundsError(f"region {sel!r} along axis {axis} is outside [0, {size}]")
        bounds.append(Span(start, stop))
    return tuple(bounds)


def _bound(value: Any, default: int, size: int, axis: int, sel: slice) -> int:
    """A slice bound of a region as an index (an int or numpy integer, never a float or
    text turned into one: that would write somewhere else)."""
    if value is None:
        return default
    try:
        if isinstance(value, bool):
            raise TypeError
        index: int = operator.index(value)
    except TypeError:
        raise SelectionError(f"region along axis {axis} must be a slice of integers, got {sel!r}: "
                             f"give its bounds as ints, e.g. slice(0, {size})") from None
    return index + size if index < 0 else index


def _plan_axis(axis: AxisGrid, start: int, stop: int, chunks: tuple[int, ...], cap: int | None) -> tuple[AxisGroup, ...]:
    """Cut ``[start, stop)`` of one axis into groups of units (see module doc); with a
    ``cap`` (elements), regrouped into runs of at most ``cap``."""
    if start == stop:
        return ()
    offsets = list(itertools.accumulate(chunks, initial=start))
    blocks = [_Block(b, offsets[b], offsets[b + 1]) for b in range(len(chunks)) if chunks[b]]
    ends = [blk.stop for blk in blocks]
    first_cell, end_cell = axis.index_of(start), axis.index_of(stop - 1) + 1
    full = range(
        first_cell if axis.bounds(first_cell)[0] == start else first_cell + 1,
        end_cell if axis.bounds(end_cell - 1)[1] == stop else end_cell - 1,
    )
    runs: list[range] = []
    cell = first_cell
    while cell < end_cell:
        lo, hi = max(axis.bounds(cell)[0], start), min(axis.bounds(cell)[1], stop)
        block = blocks[bisect.bisect_right(ends, lo)]
        if block.stop >= hi:  # the cell lies inside the block: take every cell inside it
            last = end_cell if block.stop == stop else axis.index_of(block.stop)
        else:  # the cell straddles block boundaries: its own group
            last = cell + 1
        runs.append(range(cell, last))
        cell = last
    if cap is not None:
        runs = _regroup(runs, axis, start, stop, cap)
    return tuple(_group(run, axis, start, stop, blocks, ends, full) for run in runs)


class _Block(NamedTuple):
    """A non-empty source block along one axis: its number and target coordinates."""

    number: int
    start: int
    stop: int


def _clipped(axis: AxisGrid, cells: range, start: int, stop: int) -> Span:
    """The target coordinates of ``cells`` within ``[start, stop)``."""
    return Span(max(axis.bounds(cells.start)[0], start), min(axis.bounds(cells.stop - 1)[1], stop))


def _group(run: range, axis: AxisGrid, start: int, stop: int, blocks: list[_Block], ends: list[int],
           full: range) -> AxisGroup:
    """The group of the cells ``run``, with one piece per source block touching it."""
    lo, hi = _clipped(axis, run, start, stop)
    pieces = []
    for block in itertools.islice(blocks, bisect.bisect_right(ends, lo), None):
        if block.start >= hi:
            break
        a, b = max(lo, block.start), min(hi, block.stop)
        pieces.append(AxisPiece(block.number, slice(a - block.start, b - block.start), slice(a - lo, b - lo)))
    owned_full = range(max(run.start, full.start), max(run.start, min(full.stop, run.stop)))
    return AxisGroup(lo, hi, run, owned_full, tuple(pieces))


def _regroup(runs: list[range], axis: AxisGrid, start: int, stop: int, cap: int) -> list[range]:
    """``runs`` split between units where longer than ``cap`` elements, then consecutive
    ones merged while they fit in ``cap`` (``cap == 0``: every unit alone)."""
    parts: list[tuple[range, int]] = []
    for run in runs:
        lo, hi = _clipped(axis, run, start, stop)
        if hi - lo <= cap:
            parts.append((run, hi - lo))
            continue
        first, size = run.start, 0
        for cell in run:
            extent = min(axis.bounds(cell)[1], stop) - max(axis.bounds(cell)[0], start)
            if size + extent > cap and cell > first:
                parts.append((range(first, cell), size))
                first, size = cell, 0
            size += extent
        parts.append((range(first, run.stop), size))
    merged: list[range] = []
    size = 0
    for part, extent in parts:
        if merged and size + extent <= cap:
            merged[-1] = range(merged[-1].start, part.stop)
            size += extent
        else:
            merged.append(part)
            size = extent
    return merged


def _task_caps(axes: tuple[AxisGrid, ...], bounds: tuple[Span, ...], task_bytes: int, itemsize: int) -> tuple[int, ...]:
    """Per axis, the most elements a task may span so that it holds at most ``task_bytes``:
    the largest unit (within the region) times a factor balanced over the axes (0 when
    one unit is already bigger: no grouping)."""
    counts, largest = [], []
    for axis, (start, stop) in zip(axes, bounds):
        if start == stop:
            return (0,) * len(axes)
        cells = range(axis.index_of(start), axis.index_of(stop - 1) + 1)
        counts.append(len(cells))
        largest.append(max(min(axis.bounds(c)[1], stop) - max(axis.bounds(c)[0], start) for c in cells))
    if itemsize * math.prod(stop - start for start, stop in bounds) <= task_bytes:  # all in one task
        return tuple(stop - start for start, stop in bounds)
    if itemsize * math.prod(largest) > task_bytes:
        return (0,) * len(axes)
    runs = auto_read_chunks([n * u for n, u in zip(counts, largest)], largest, itemsize, task_bytes)
    return tuple(axis_runs[0] for axis_runs in runs)


def _make_task(combo: tuple[tuple[int, AxisGroup], ...]) -> WriteTask:
    if not combo:  # a 0-d array: one task, one block
        return WriteTask((), (), (), (), ())
    index, groups = zip(*combo)
    return WriteTask(
        index,
        tuple(slice(g.start, g.stop) for g in groups),
        tuple(g.cells for g in groups),
        tuple(g.full for g in groups),
        tuple(g.pieces for g in groups),
    )


def _lower_median_product(per_axis: list[Counter[int]]) -> int:
    """The lower median, over the Cartesian product of per-axis values (with their
    multiplicities), of the product of the values: computed on the distinct values."""
    dist: Counter[int] = Counter({1: 1})
    for counts in per_axis:
        product: Counter[int] = Counter()
        for a, m in dist.items():
            for b, n in counts.items():
                product[a * b] += m * n
        dist = product
    rank = (sum(dist.values()) - 1) // 2
    for value in sorted(dist):
        rank -= dist[value]
        if rank < 0:
            return value
    return 0


def _unit_extents(groups: tuple[AxisGroup, ...], axis: AxisGrid) -> list[tuple[int, bool]]:
    """(extent within the array, fully covered?) of every cell touched along one axis."""
    extents = []
    for g in groups:
        for c in g.cells:
            lo, hi = axis.bounds(c)
            extents.append((hi - lo, c in g.full))
    return extents


def _axis_aligned(groups: tuple[AxisGroup, ...], axis: AxisGrid) -> bool:
    """No source block boundary falls inside a unit (with one group per owned run of
    units: one group per non-empty block, each taking that whole block)."""
    for g in groups:
        for piece in g.pieces[:-1]:
            edge = g.start + piece.out_slice.stop
            if axis.bounds(axis.index_of(edge))[0] != edge:
                return False
    return True
