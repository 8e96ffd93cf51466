"""The array ``from_zarr`` returns: a dask array whose own ``compute()`` reads it whole.

``x.compute()`` and ``np.asarray(x)`` (which ``.values`` of an xarray DataArray over ``x``
calls) of the array ``from_zarr`` built run one task that reads the whole array straight
into its result, on whichever scheduler is in effect. Dask would read it block by block
and then copy every block into a second array of the same size (``concatenate3``), paying
for that memory twice; the one read fills a single output as ``Array[...]`` does. Everything
else is dask's: its blocks for every other graph (``x.sum()``, ``x[:10]``, ``persist``,
``dask.compute(x, y)``), and the arrays derived from it, pickled or copied are plain
dask arrays. Once an assignment (``x[i] = v``) has changed its graph, it computes as
dask does. (Measurements: benchmarks/README.md,
"What users time (issue 45): materialised reads, floors, the acceptance run, 2026-12-01".)
"""

from __future__ import annotations

import contextvars
from typing import Any

import dask.array as da
import numpy as np

from ..compat.dask import whole_expression
from ..nodes.block_reader import BlockReader

__all__ = ["ReadArray", "read_array"]

#: the array whose own compute() is running in this context
_COMPUTING: contextvars.ContextVar[Any] = contextvars.ContextVar("zarrdask_computing", default=None)


def _read_whole(reader: BlockReader) -> Any:
    return reader[...]


class ReadArray(da.Array):
    """``from_zarr``'s dask array (see the module docstring)."""

    _whole_name: str
    _reader: BlockReader

    @property
    def expr(self) -> Any:
        # dask.compute builds the graph from a collection's expression where it has one;
        # otherwise there is none, as on a plain dask array (hasattr() is False)
        expression = None
        if _COMPUTING.get() is self and self.name == self._whole_name:
            expression = whole_expression(_read_whole, self._reader, f"{self.name}-whole")
        if expression is None:
            raise AttributeError("expr")
        return expression

    def compute(self, **kwargs: Any) -> Any:
        """As dask's ``compute`` (the same keywords), reading the array in one task."""
        token = _COMPUTING.set(self)
        try:
            return super().compute(**kwargs)
        finally:
            _COMPUTING.reset(token)


def read_array(x: da.Array, reader: BlockReader, meta: np.ndarray) -> da.Array:
    """``x`` (the blocks of ``reader``'s whole array, its ``meta``) as a :class:`ReadArray`;
    ``x`` itself under dask's array query planning, whose collections are expressions already."""
    if da.array_expr_enabled():
        return x
    array = ReadArray(x.dask, x.name, x.chunks, meta=meta)
    array._whole_name = x.name
    array._reader = reader
    return array
