"""``BlockReader``: the small picklable object a task scheduler's tasks read blocks through.

Dask's ``from_array`` (``from_zarr``) and xarray's lazy arrays (``chunks=...``) hand one
to every task and call ``reader[slices]`` there. How that read uses threads is the
executor's single policy (``runtime/executor.py``): serial on a worker thread, zarrdask's
pool on the main thread (dask's synchronous scheduler).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .array import Array

__all__ = ["BlockReader"]


class BlockReader:
    """Reads blocks of ``array`` for tasks. Pickles as the Array does (store, path,
    metadata; no I/O) and deliberately has no ``copy`` (dask's ``from_array`` would call it)."""

    __slots__ = ("array",)

    def __init__(self, array: Array) -> None:
        self.array = array

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
        return self.array[key]

    def __reduce__(self) -> tuple[Any, ...]:
        return (BlockReader, (self.array,))

    def __dask_tokenize__(self) -> object:
        from dask.base import tokenize

        return ("zarrdask.BlockReader", tokenize(self.array))
