"""The data half of a Dataset write: in-memory data now, dask data as one graph.

Stands where xarray's ``ArrayWriter`` (which hands dask data to ``da.store``) stands:
dask variables go through zarrdask's shard-safe Dask writer, so dask chunks that
cut through shards are gathered per shard and never race.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from dask.delayed import Delayed

from zarrdask.compat.xarray import is_chunked_array
from zarrdask.nodes.array import Array
from zarrdask.dask_io.dask_keywords import task_bytes
from zarrdask.dask_io.transactions import combined, run_writes
from zarrdask.dask_io.write import planned, write_into
from zarrdask.storage.records import WriteRecord

__all__ = ["ArrayWrites"]


def _concrete_region(region: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """Slices with explicit start and stop (``slice(3, None)`` -> ``slice(3, n)``)."""
    return tuple(slice(*s.indices(n)[:2]) for s, n in zip(region, shape, strict=True))


class ArrayWrites:
    """Write sources into zarrdask arrays: numpy at once, dask batched into one graph."""

    __slots__ = ("_pending", "_staging", "_task_bytes", "regions", "units", "nbytes")

    def __init__(self, task_size: int | str | None = None, staging: bool | None = None) -> None:
        self._pending: list[tuple[Any, Array, tuple[slice, ...]]] = []  # dask writes: graphs made by sync()
        self.regions: dict[str, list[list[int]]] = {}  # array path -> the region written (the call's record)
        self.units = self.nbytes = 0  # what they plan: storage units touched, bytes before encoding
        self._task_bytes = task_bytes("to_zarr", task_size)  # to_zarr's grouping of whole shards into write tasks
        self._staging = staging  # to_zarr's: where the pieces of cut shards wait

    def add(self, source: Any, target: Array, region: tuple[slice, ...]) -> None:
        """Write ``source`` into ``target[region]`` (now, or later if it is dask)."""
        region = _concrete_region(region, target.shape)
        self.regions[target.path] = [[s.start, s.stop] for s in region]
        units, nbytes = planned(target, region)
        self.units += units
        self.nbytes += nbytes
        if is_chunked_array(source):
            target = target.with_options(threads=1)
            target.units.check_region(region)  # (refused before the writer sends anything)
            self._pending.append((source, target, region))
        else:
            target[region] = np.asarray(source)

    def sync(self, *, compute: bool = True, progress: bool = False, record: WriteRecord | None = None,
             **compute_kwargs: Any) -> Delayed | None:
        """Run the dask writes (``compute=True``, with ``dask.compute`` keywords, or with
        a progress bar) or return them as one ``Delayed`` (computing to the changes to merge
        into a transactional store's session, see :mod:`zarrdask.dask_io.transactions`).
        ``record``: the deferred call's record, stored by the graphs before their first
        write (the writer deletes it after the last); None: the writer keeps it."""
        pending = [write_into(source, target, region, task_bytes=self._task_bytes, staging=self._staging,
                              shared=record) for source, target, region in self._pending]
        self._pending = []
        if not compute:
            return combined(pending)
        if pending:
            run_writes(pending, progress, **compute_kwargs)
        return None
