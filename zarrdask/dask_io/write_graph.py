"""The graph of a write plan: two lazy layers, whatever the size of the write.

``PlanWrites`` keys one ``zarrdask-write`` task per plan task and builds each one from
the plan's per-axis groups when dask asks for it; ``DoneTree`` gathers their (empty)
results in a tree of fan-in :data:`FAN_IN` up to one final key, so no task waits on a
million others. Both layers are described by a few small objects (the plan, the target
``Array``, names), so building the graph costs the per-axis plan, and the client ships
that compact form to a distributed scheduler, which materialises it.

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
from typing import Any

import dask.array as da
import numpy as np
from dask.delayed import Delayed, delayed
from dask.highlevelgraph import HighLevelGraph
from dask.task_spec import List, Task, TaskRef

from ..compat.dask import lazy_layer
from ..core.array import Array
from ..plan import WritePlan
from ..storage.transactional import changes, merge_changes
from .transactions import Writes, check_forkable

__all__ = ["DoneTree", "FAN_IN", "PlanWrites", "gathered", "write_graph", "write_region"]

FAN_IN = 64  # results gathered per task of the final tree


def write_graph(source: da.Array, target: Array, plan: WritePlan) -> Writes:
    """A ``Delayed`` writing ``plan`` into ``target`` from the blocks of ``source``::

        ("zarrdask-write-<id>", i, j)       -> write_region(target, region, layout, [(x, k, l), ...])
        ("zarrdask-write-done-<id>", 1, k)  -> changes merged, after FAN_IN write tasks (and so on up)
        "zarrdask-write-done-<id>"          -> changes merged, once everything is written

    (changes: None unless the target's store travelled to workers as a session's fork).
    """
    check_forkable(target)
    token = uuid.uuid4().hex
    writes = PlanWrites(f"zarrdask-write-{token}", source.name, target, plan)
    done = DoneTree(f"zarrdask-write-done-{token}", writes)
    graph = HighLevelGraph.from_collections(writes.name, lazy_layer(writes), dependencies=[source])
    graph = HighLevelGraph(
        {**graph.layers, done.name: lazy_layer(done)},
        {**graph.dependencies, done.name: {writes.name}},
    )
    return Writes(done.name, graph, target.store)


def gathered(tasks: list[Delayed], into: Any) -> Writes:
    """One ``Writes`` into the store ``into`` of write ``tasks`` made by hand (each
    computing to its fork's changes, or None): their results merged up a tree of fan-in
    :data:`FAN_IN`."""
    level = tasks
    while len(level) > FAN_IN:
        level = [delayed(merge_changes)(level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
    top = delayed(merge_changes)(level)
    return Writes(top.key, top.dask, into)


class PlanWrites:
    """The write tasks of ``plan``, keyed ``(name, *task_index)``, generated on demand."""

    def __init__(self, name: str, source_name: str, target: Array, plan: WritePlan) -> None:
        self.name = name
        self.source_name = source_name
        self.target = target
        self.plan = plan
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
        task = self.plan.task(key[1:])  # type: ignore[index]
        layout = tuple(tuple((p.block_slice, p.out_slice) for p in pieces) for pieces in task.axis_pieces)
        indices = itertools.product(*(tuple(p.block for p in pieces) for pieces in task.axis_pieces))
        blocks = List(*(TaskRef((self.source_name, *block)) for block in indices))
        return Task(key, write_region, self.target, task.region, layout, blocks)


class DoneTree:
    """Tasks ``(name, level, k)`` each waiting on up to :data:`FAN_IN` tasks of the level
    below (level 0: the writes), topped by the task ``name``."""

    def __init__(self, name: str, writes: PlanWrites) -> None:
        self.name = name
        self.writes = writes
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
        else:
            _, level, k = key  # type: ignore[misc]
            below = self._below(level, k)
        return Task(key, merge_changes, List(*(TaskRef(k) for k in below)))


def write_region(
    target: Array,
    region: tuple[slice, ...],
    layout: tuple[tuple[tuple[slice, slice], ...], ...],
    blocks: list[np.ndarray],
) -> Any:
    """One write task: assemble ``region`` from the pieces of ``blocks`` and store it;
    returns the changes to merge back when the target's store is a session's fork.

    ``layout`` holds, per axis, (the slice of the block, where it goes in the region) for
    each block touched along that axis; ``blocks`` are the Cartesian product of those, in
    C order (a grouped task of many blocks is described by its per-axis lists alone).
    The target encodes whole shards, and read-modify-writes those the region only partly
    covers, inside this call; this task is their only writer.
    """
    if len(blocks) == 1:  # the pieces tile the region, so one piece is all of it
        data = np.asarray(blocks[0])[tuple(pieces[0][0] for pieces in layout)]
    else:
        data = np.empty([s.stop - s.start for s in region], dtype=np.asarray(blocks[0]).dtype)
        for pieces, block in zip(itertools.product(*layout), blocks):
            data[tuple(out for _, out in pieces)] = np.asarray(block)[tuple(part for part, _ in pieces)]
    target[region] = data
    return changes(target.store)
