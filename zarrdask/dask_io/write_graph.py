"""The graph of a write plan: lazy layers, whatever the size of the write.

``PlanWrites`` keys one ``zarrdask-write`` task per plan task and builds each one from
the plan's per-axis groups when dask asks for it; ``DoneTree`` gathers their (empty)
results in a tree of fan-in :data:`FAN_IN` up to one final key, so no task waits on a
million others. The layers are described by a few small objects (the plan, the target
``Array``, names), so building the graph costs the per-axis plan, and the client ships
that compact form to a distributed scheduler, which materialises it.

When dask blocks and storage units are misaligned (a block edge inside a shard), a
block is cut between several write tasks. When blocks are big (the largest at least
:data:`CUT_BYTES`), ``PlanPieces`` adds one small
``zarrdask-piece`` task per (cut block, write task) that copies that piece out, and the
write task reads the piece instead of the whole block: the block is freed as soon as its
pieces are cut (not when its last writer runs), and a writer on another worker receives
the piece, not the block. Those two layers carry scheduler priorities above the source's
default (pieces :data:`PIECE_PRIORITY`, writes :data:`PRIORITY`, or the caller's
``dask.annotate(priority=...)`` for both), so on a distributed cluster a ready piece runs
before a write, and either before another source block is made.
Aligned writes (every block edge on a unit edge) get no piece tasks and no priority, and
neither do writes of smaller blocks: a piece task costs about as much to schedule on a
cluster (~2 ms) as encoding half a MiB, while a small block held a little longer costs
little memory (measured in benchmarks/README.md).

Even so, a shard row that straddles two block rows waits for both, so pieces of one
block row wait in memory for the next: about one shard row of the array's cross-section,
whatever the blocks. With staging (:mod:`.staging`) the pieces wait in the target's store
instead: ``BlockStages`` makes one stage task per source block (a blockwise layer, fused
with a blockwise source so the task that computes a block stages it), and each write task
reads what the stage tasks of its blocks staged for it. Worker memory then holds the
blocks and shards in flight, not that front, for one more write and read of the pieces.

With a :class:`~zarrdask.storage.records.WriteRecord` (``to_zarr``'s own calls) a
``zarrdask-record`` task writes it into the target's store and every write task waits for
it, so it is stored when the graph is computed, before any data; the done tree's top task
deletes it after the last write. A graph killed or failed in between leaves it, for
``verify`` and ``open`` to report (:mod:`zarrdask.storage.records`).

Into a transactional store (an Icechunk session) each write task returns the changes of
the fork it wrote through and the tree merges them on the way up, so the final key
computes to them (see :mod:`.transactions`); elsewhere every result is None.
:func:`gathered` does the same for write tasks made by hand (``copy``'s byte-for-byte ones).
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Hashable, Iterator
from typing import Any, NamedTuple

import dask
import dask.array as da
import numpy as np
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.task_spec import List, Task, TaskRef

from ..compat.dask import block_layer, fuse_blockwise, lazy_layer
from ..nodes.array import Array
from ..errors import InvalidModeError
from ..metadata.grid import AxisGrid
from ..plan import CUT_BYTES, WritePlan
from ..plan.write_plan import AxisGroup
from ..storage.base import Store
from ..storage.records import WriteRecord, clear_record, write_record
from ..storage.transactional import changes, merge_changes
from .staging import (STAGING_DIR, BlockPieces, StagedPiece, Staging, Written, finish_staging, read_into,
                      stage_block, staging_refusal)
from .transactions import Writes, check_forkable, combined

__all__ = ["AxisCuts", "BlockStages", "CUT_BYTES", "DoneTree", "FAN_IN", "PIECE_PRIORITY", "PRIORITY", "PlanPieces",
           "PlanWrites", "Recorded", "axis_cuts", "cut_piece", "finish_write", "gathered", "then_cleared", "write_graph", "write_region"]

FAN_IN = 64  # results gathered per task of the final tree
PRIORITY = 1  # writes of a misaligned write: above the default (0) of the source's tasks
PIECE_PRIORITY = 2  # its pieces: above the writes, so a cut block is freed before another shard is written


def write_graph(source: da.Array, target: Array, plan: WritePlan, cut_bytes: int | None = None,
                staging: bool | None = None, record: WriteRecord | None = None,
                shared: WriteRecord | None = None) -> Writes:
    """A ``Delayed`` writing ``plan`` into ``target`` from the blocks of ``source``::

        ("zarrdask-write-<id>", i, j)       -> write_region(target, region, layout, [(x, k, l), ...])
        ("zarrdask-write-done-<id>", 1, k)  -> changes merged, after FAN_IN write tasks (and so on up)
        "zarrdask-write-done-<id>"          -> changes merged, once everything is written

    and, when blocks are cut between write tasks (misaligned) and the largest block holds
    at least ``cut_bytes`` (default :data:`CUT_BYTES`), the write tasks read
    ``("zarrdask-piece-<id>", i, j, k, l) -> cut_piece((x, k, l), slices)`` for those
    blocks instead (changes: None unless the target's store travelled to workers as a
    session's fork). ``staging``: whether those pieces go through the target's store (see
    the module's docstring; decided by :meth:`WritePlan.pieces`): True also cuts blocks of
    any size; None (the default) stages when the pieces waiting for the next block row
    would hold more than one thread's work. ``record``: the call's record, stored by a
    ``("zarrdask-record-<id>")`` task every write task waits for and deleted by the top task.
    ``shared``: the record of a call made of several such graphs: stored the same way, by a
    task named after the record (the same in each graph), and left for the caller to delete.
    """
    check_forkable(target)
    token = uuid.uuid4().hex
    refusal = staging_refusal(source.dtype, target.store)
    if staging and refusal:
        raise InvalidModeError(f"to_zarr(): staging=True {refusal}; pass staging=False (or leave it out)")
    pieces_of = plan.pieces(source.dtype.itemsize, staging, can_stage=refusal is None,
                            cut_bytes=CUT_BYTES if cut_bytes is None else cut_bytes)
    cuts = tuple(axis_cuts(groups, grid, chunks, region, cut=pieces_of.cut)
                 for groups, grid, chunks, region in zip(plan.axes, plan.grid, plan.source_chunks, plan.region))
    pieces = PlanPieces(f"zarrdask-piece-{token}", source.name, plan, () if pieces_of.staged else cuts)
    stages = None
    if pieces_of.staged:
        stages = BlockStages(f"zarrdask-stage-{token}", plan,
                             Staging(target.store, "/".join(p for p in (target.path, STAGING_DIR, token) if p)))
    recorded = None if record is None else Recorded(f"zarrdask-record-{token}", target.store, record)
    first = recorded if shared is None else Recorded(f"zarrdask-record-{shared.id}", target.store, shared)
    writes = PlanWrites(f"zarrdask-write-{token}", source.name, target, plan, pieces, stages,
                        None if first is None else first.name)
    done = DoneTree(f"zarrdask-write-done-{token}", writes, None if stages is None else stages.staging, recorded)
    write_layer = lazy_layer(writes)
    caller = dask.get_annotations()  # the caller's own priority wins
    if stages is not None:  # one stage task per block, fused with a blockwise source
        stage_layer = block_layer(stage_block, stages.name, source, stages, stages.staging)
        write_layer.annotations = {"priority": PRIORITY, **caller}
        graph = HighLevelGraph.from_collections(stages.name, stage_layer, dependencies=[source])
        graph = HighLevelGraph({**graph.layers, writes.name: write_layer},
                               {**graph.dependencies, writes.name: {stages.name}})  # (the source only through it)
        return _with_done(graph, writes, done, target, first, fuse=True)
    if not len(pieces):  # aligned (or small blocks): the write tasks read whole blocks
        graph = HighLevelGraph.from_collections(writes.name, write_layer, dependencies=[source])
        return _with_done(graph, writes, done, target, first)
    piece_layer = lazy_layer(pieces)
    piece_layer.annotations = {"priority": PIECE_PRIORITY, **caller}
    write_layer.annotations = {"priority": PRIORITY, **caller}
    graph = HighLevelGraph.from_collections(pieces.name, piece_layer, dependencies=[source])
    graph = HighLevelGraph(
        {**graph.layers, writes.name: write_layer},
        {**graph.dependencies, writes.name: {pieces.name, *graph.dependencies[pieces.name]}},
    )
    return _with_done(graph, writes, done, target, first)


def _with_done(graph: HighLevelGraph, writes: PlanWrites, done: DoneTree, target: Array,
               first: Recorded | None, fuse: bool = False) -> Writes:
    """``graph`` (up to the write tasks) topped by the done tree's layer, and below them
    the task storing the record ``first`` when there is one, as a ``Writes``; with
    ``fuse``, its blockwise layers fused (a stage layer into a blockwise source)."""
    layers, dependencies = {**graph.layers, done.name: lazy_layer(done)}, {**graph.dependencies, done.name: {writes.name}}
    if first is not None:
        name = first.name
        layers[name] = MaterializedLayer({name: Task(name, write_record, first.store, first.record)})
        dependencies[name] = set()
        dependencies[writes.name] = {*dependencies[writes.name], name}
    graph = HighLevelGraph(layers, dependencies)
    if fuse:
        graph = fuse_blockwise(graph, [done.name])
    return Writes(done.name, graph, target.store)


def gathered(tasks: list[Delayed], into: Any) -> Writes:
    """One ``Writes`` into the store ``into`` of write ``tasks`` made by hand (each
    computing to its fork's changes, or None): their results merged up a tree of fan-in
    :data:`FAN_IN`."""
    level = tasks
    while len(level) > FAN_IN:
        level = [combined(level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
    top = combined(level)
    return Writes(top.key, top.dask, into)


def then_cleared(graph: Delayed, store: Store, record: WriteRecord) -> Delayed:
    """``graph`` (a write computing to its changes) topped by a task that deletes the
    call's ``record`` from ``store`` once it is computed, and computes to the same."""
    name = f"zarrdask-record-done-{uuid.uuid4().hex}"
    layer = {name: Task(name, _cleared, TaskRef(graph.key), store, record)}
    return Delayed(name, HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=[graph]))


def _cleared(result: Any, store: Store, record: WriteRecord) -> Any:
    clear_record(store, record)
    return result


class AxisCuts(NamedTuple):
    """Along one axis, for each group of the plan and each of its pieces: whether that
    piece's block has an edge inside a unit (``misaligned``; the region's own edges do not
    count) and whether the piece is less than the whole block (``partial``)."""

    misaligned: tuple[tuple[bool, ...], ...]
    partial: tuple[tuple[bool, ...], ...]


def axis_cuts(groups: tuple[AxisGroup, ...], grid: AxisGrid, chunks: tuple[int, ...], region: slice,
              cut: bool = True) -> AxisCuts:
    """The :class:`AxisCuts` of one axis of a plan (its groups, unit grid, source chunks
    and region); with ``cut=False`` no block counts as misaligned (no piece tasks)."""
    edges = list(itertools.accumulate(chunks, initial=region.start))
    inside = [cut and e not in (region.start, region.stop) and grid.bounds(grid.index_of(e))[0] != e for e in edges]
    misaligned = tuple(tuple(inside[p.block] or inside[p.block + 1] for p in g.pieces) for g in groups)
    partial = tuple(tuple(p.block_slice.stop - p.block_slice.start != chunks[p.block] for p in g.pieces)
                    for g in groups)
    return AxisCuts(misaligned, partial)


class PlanPieces:
    """The piece tasks of ``plan``: one per (write task, block) where the block is
    misaligned (along some axis) and the task takes only part of it (along some axis),
    keyed ``(name, *task_index, *block_index)``, generated on demand (none without ``cuts``)."""

    def __init__(self, name: str, source_name: str, plan: WritePlan, cuts: tuple[AxisCuts, ...]) -> None:
        self.name = name
        self.source_name = source_name
        self.plan = plan
        self.cuts = cuts

    def needed(self, flags: tuple[tuple[bool, bool], ...]) -> bool:
        """Whether a piece with per-axis (misaligned, partial) ``flags`` gets a task."""
        return any(m for m, _ in flags) and any(p for _, p in flags)

    def _axis_entries(self, axis: int) -> list[tuple[int, int, bool, bool]]:
        """(group, block, misaligned, partial) of every piece along ``axis``."""
        cut = self.cuts[axis]
        return [(g, piece.block, m, p)
                for g, group in enumerate(self.plan.axes[axis])
                for piece, m, p in zip(group.pieces, cut.misaligned[g], cut.partial[g])]

    def __len__(self) -> int:
        if not self.cuts:
            return 0
        counts = [[0, 0, 0, 0] for _ in self.cuts]  # all, aligned, whole, aligned and whole
        for axis, row in enumerate(counts):
            for _, _, m, p in self._axis_entries(axis):
                row[0] += 1
                row[1] += not m
                row[2] += not p
                row[3] += not m and not p
        total, aligned, whole, both = (math.prod(row[i] for row in counts) for i in range(4))
        return total - aligned - whole + both

    def __contains__(self, key: object) -> bool:
        ndim = len(self.cuts)
        if not (type(key) is tuple and ndim and len(key) == 2 * ndim + 1 and key[0] == self.name
                and all(type(i) is int for i in key[1:])):
            return False
        flags = []
        for axis, (g, b) in enumerate(zip(key[1:ndim + 1], key[ndim + 1:])):
            groups = self.plan.axes[axis]
            if not 0 <= g < len(groups):
                return False
            at = [n for n, piece in enumerate(groups[g].pieces) if piece.block == b]
            if not at:
                return False
            flags.append((self.cuts[axis].misaligned[g][at[0]], self.cuts[axis].partial[g][at[0]]))
        return self.needed(tuple(flags))

    def keys(self) -> Iterator[Hashable]:
        for combo in itertools.product(*(self._axis_entries(axis) for axis in range(len(self.cuts)))):
            if self.needed(tuple((m, p) for _, _, m, p in combo)):
                yield (self.name, *(g for g, *_ in combo), *(b for _, b, *_ in combo))

    def task(self, key: Hashable) -> Task:
        ndim = len(self.cuts)
        index, blocks = key[1:ndim + 1], key[ndim + 1:]  # type: ignore[index]
        slices = tuple(next(p.block_slice for p in self.plan.axes[axis][g].pieces if p.block == b)
                       for axis, (g, b) in enumerate(zip(index, blocks)))
        return Task(key, cut_piece, TaskRef((self.source_name, *blocks)), slices)


class BlockStages:
    """The stage tasks of a staged write, one per source block (``name``): what each
    block's stage task stages (:meth:`block_arg`, generated per block), into ``staging``."""

    def __init__(self, name: str, plan: WritePlan, staging: Staging) -> None:
        self.name = name
        self.staging = staging
        self.by_block: tuple[dict[int, list[tuple[int, slice]]], ...] = tuple(
            _pieces_by_block(groups) for groups in plan.axes)

    def block_arg(self, index: tuple[int, ...]) -> BlockPieces:
        """The block at ``index`` and, for every write task that takes part of it, that
        task's index and the slices of the block it takes."""
        per_axis = [self.by_block[axis].get(b, []) for axis, b in enumerate(index)]
        return index, [(tuple(g for g, _ in combo), tuple(s for _, s in combo))
                       for combo in itertools.product(*per_axis)]


def _pieces_by_block(groups: tuple[AxisGroup, ...]) -> dict[int, list[tuple[int, slice]]]:
    """Along one axis: per source block, the groups that take part of it and which part."""
    out: dict[int, list[tuple[int, slice]]] = {}
    for g, group in enumerate(groups):
        for piece in group.pieces:
            out.setdefault(piece.block, []).append((g, piece.block_slice))
    return out


class PlanWrites:
    """The write tasks of ``plan``, keyed ``(name, *task_index)``, generated on demand;
    each reads the blocks it needs, or their pieces where ``pieces`` has a task for them,
    or with ``stages`` what each block's stage task staged for it."""

    def __init__(self, name: str, source_name: str, target: Array, plan: WritePlan, pieces: PlanPieces,
                 stages: BlockStages | None = None, after: str | None = None) -> None:
        self.name = name
        self.after = after  # the key of the task each write waits for (the record's), if any
        self.source_name = source_name
        self.target = target
        self.plan = plan
        self.pieces = pieces
        self.stages = stages
        self.grid = plan.task_grid

    def __len__(self) -> int:
        return len(self.plan)

    def __contains__(self, key: object) -> bool:
        return (
            type(key) is tuple
            and len(key) == len(self.grid) + 1
            and key[0] == self.name
            and all(type(i) is int and 0 <= i < n for i, n in zip(key[1:], self.grid))
        )

    def keys(self) -> Iterator[Hashable]:
        return ((self.name, *index) for index in itertools.product(*(range(n) for n in self.grid)))

    def key_at(self, flat: int) -> tuple:
        """The key of the ``flat``-th task in C order."""
        return (self.name, *(int(i) for i in np.unravel_index(flat, self.grid))) if self.grid else (self.name,)

    def task(self, key: Hashable) -> Task:
        index = key[1:]  # type: ignore[index]
        task = self.plan.task(index)
        layout = tuple(tuple((p.block_slice, p.out_slice) for p in pieces) for pieces in task.axis_pieces)
        if self.stages is not None:
            inputs = [TaskRef((self.stages.name, *p.block)) for p in task.pieces]
            return Task(key, write_region, self.target, task.region, layout, List(*inputs), self.stages.staging,
                        tuple(index), self._after())
        per_axis = [
            [(p.block, cut.misaligned[g][n], cut.partial[g][n]) for n, p in enumerate(pieces)]
            for g, pieces, cut in zip(index, task.axis_pieces, self.pieces.cuts)
        ]
        inputs = []
        for combo in itertools.product(*per_axis):
            blocks = tuple(b for b, _, _ in combo)
            if self.pieces.needed(tuple((m, p) for _, m, p in combo)):
                inputs.append(TaskRef((self.pieces.name, *index, *blocks)))
            else:
                inputs.append(TaskRef((self.source_name, *blocks)))
        return Task(key, write_region, self.target, task.region, layout, List(*inputs), None, (), self._after())

    def _after(self) -> TaskRef | None:
        return None if self.after is None else TaskRef(self.after)


class Recorded(NamedTuple):
    """The record of a write (stored by the task ``name`` into ``store``, see the module's
    docstring)."""

    name: str
    store: Store
    record: WriteRecord


class DoneTree:
    """Tasks ``(name, level, k)`` each waiting on up to :data:`FAN_IN` tasks of the level
    below (level 0: the writes), topped by the task ``name`` (which also removes
    ``staging``'s prefix, then deletes ``recorded``'s record, when given)."""

    def __init__(self, name: str, writes: PlanWrites, staging: Staging | None = None,
                 recorded: Recorded | None = None) -> None:
        self.name = name
        self.writes = writes
        self.staging = staging
        self.recorded = recorded
        sizes = [len(writes)]
        while sizes[-1] > FAN_IN:
            sizes.append(math.ceil(sizes[-1] / FAN_IN))
        self.sizes = tuple(sizes)  # tasks per level; the top task gathers the last level

    def __len__(self) -> int:
        return sum(self.sizes[1:]) + 1

    def __contains__(self, key: object) -> bool:
        if key == self.name:
            return True
        return (
            type(key) is tuple and len(key) == 3 and key[0] == self.name
            and type(key[1]) is int and 1 <= key[1] < len(self.sizes)
            and type(key[2]) is int and 0 <= key[2] < self.sizes[key[1]]
        )

    def keys(self) -> Iterator[Hashable]:
        for level in range(1, len(self.sizes)):
            for k in range(self.sizes[level]):
                yield (self.name, level, k)
        yield self.name

    def _below(self, level: int, k: int) -> list[Hashable]:
        """The keys of level ``level - 1`` that task ``k`` of ``level`` waits on."""
        lo, hi = k * FAN_IN, min((k + 1) * FAN_IN, self.sizes[level - 1])
        if level == 1:
            return [self.writes.key_at(i) for i in range(lo, hi)]
        return [(self.name, level - 1, i) for i in range(lo, hi)]

    def task(self, key: Hashable) -> Task:
        if key == self.name:
            top = len(self.sizes)
            below = self._below(top, 0) if self.sizes[-1] else []
            if self.recorded is not None:
                return Task(key, finish_write, List(*(TaskRef(k) for k in below)), self.staging, self.recorded)
            if self.staging is not None:
                return Task(key, finish_staging, self.staging, List(*(TaskRef(k) for k in below)))
        else:
            _, level, k = key  # type: ignore[misc]
            below = self._below(level, k)
        return Task(key, merge_changes, List(*(TaskRef(k) for k in below)))


def finish_write(results: list[Any], staging: Staging | None, recorded: Recorded) -> Any:
    """The done tree's top task of a recorded write: the changes merged, the staging prefix
    removed, and last the write's record deleted (the write is complete)."""
    merged = merge_changes(results) if staging is None else finish_staging(staging, results)
    clear_record(recorded.store, recorded.record)
    return merged


def cut_piece(block: np.ndarray, slices: tuple[slice, ...]) -> np.ndarray:
    """One piece task: a copy of ``slices`` of ``block`` (a copy, so the block can be
    freed once all its pieces are cut)."""
    return np.array(np.asarray(block)[slices])


def write_region(
    target: Array,
    region: tuple[slice, ...],
    layout: tuple[tuple[tuple[slice, slice], ...], ...],
    blocks: list[Any],
    staging: Staging | None = None,
    index: tuple[int, ...] = (),
    after: Any = None,
) -> Any:
    """One write task: assemble ``region`` from the pieces of ``blocks`` and store it;
    returns the changes to merge back when the target's store is a session's fork.

    ``layout`` holds, per axis, (the slice of the block, where it goes in the region) for
    each block touched along that axis; ``blocks`` are the Cartesian product of those, in
    C order (a grouped task of many blocks is described by its per-axis lists alone). An
    input already of its piece's shape is that piece (cut by :func:`cut_piece`, or a
    block the task takes whole) and is used as it is. With ``staging``, each input is what
    a block's stage task (:func:`~.staging.stage_block`) staged, by write task: this
    task's (at ``index``) pieces are read from the store band by band into the region,
    and once it is written the task is marked done and its pieces deleted. ``after``:
    the result of the task this one waits for (the stored record), unused.
    The target encodes whole shards, and read-modify-writes those the region only partly
    covers, inside this call; this task is their only writer.
    """
    def part(block: Any, pieces: tuple[tuple[slice, slice], ...]) -> np.ndarray:
        block = np.asarray(block)
        if block.shape == tuple(out.stop - out.start for _, out in pieces):
            return block
        return block[tuple(cut for cut, _ in pieces)]

    if staging is not None:  # each input is what a block's stage task staged, per write task
        blocks = [b[index] for b in blocks]
    staged = [key for b in blocks if isinstance(b, StagedPiece) for key, _ in b.bands()]
    if len(blocks) == 1 and not staged:  # the pieces tile the region, so one piece is all of it
        data = part(blocks[0], tuple(pieces[0] for pieces in layout))
    else:
        first = blocks[0]
        data = np.empty([s.stop - s.start for s in region],
                        dtype=first.dtype if isinstance(first, StagedPiece) else np.asarray(first).dtype)
        try:
            for pieces, block in zip(itertools.product(*layout), blocks):
                where = data[tuple(out for _, out in pieces)]
                if isinstance(block, StagedPiece):
                    assert staging is not None
                    read_into(where, block, staging, index)
                else:
                    where[...] = part(block, pieces)
        except Written:
            return changes(target.store)
    target[region] = data
    if staging is not None:
        staging.store.set(staging.done_key(index), b"")
        staging.store.delete_many(staged)
    return changes(target.store)
