"""``BlockReader``: how a task scheduler's tasks read blocks of an Array.

Dask's ``from_array`` (``from_zarr``) and xarray's lazy arrays (``chunks=...``) both
hand each task a small picklable object and call ``reader[slices]`` in the task. How
that read should use threads depends on where it runs:

* on a scheduler's worker thread (dask's threaded scheduler, a distributed worker), the
  scheduler already runs one task per core, so the task decodes serially: handing its
  chunks to zarrdask's pool as well only adds hand-offs (512 MiB benchmark read,
  ``.sum()``: 0.55 s -> 0.50 s; xarray ``mean("time")``: 0.75 s -> 0.67 s; medians);
* on the main thread (dask's synchronous scheduler, a direct call), it decodes on
  zarrdask's pool, so every core works (synchronous ``.sum()``: 0.90 s -> 0.59 s).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .array import Array

__all__ = ["BlockReader"]


class BlockReader:
    """Reads blocks of ``array`` for tasks (see the module docstring).

    Pickles as the Array does (store, path, metadata; no I/O) and deliberately has no
    ``copy`` (dask's ``from_array`` would call it).
    """

    __slots__ = ("_serial", "array")

    def __init__(self, array: Array) -> None:
        self.array = array if array.options.threads is None else array.with_options(threads=None)
        self._serial: Array | None = None  # made on first use off the main thread

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.array.ndim

    def __getitem__(self, key: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return self.array[key]
        serial = self._serial
        if serial is None:  # (two threads may both make one: harmless)
            serial = self._serial = self.array.with_options(threads=1)
        return serial[key]

    def __reduce__(self) -> tuple[Any, ...]:
        return (BlockReader, (self.array,))

    def __dask_tokenize__(self) -> object:
        from dask.base import tokenize

        return ("zarrdask.BlockReader", tokenize(self.array))
