"""``from_zarr``: a lazy dask array with one read task per shard (or per chunk when unsharded).

The graph is built through the public ``da.from_array`` on a tiny picklable
:class:`~zarrdask.core.block_reader.BlockReader`, so it is a lazily materialised Blockwise layer (a million blocks
cost nothing until computed). With dask's array query planning on, ``from_array``
ignores ``name=``, so ``compat.dask.named_from_array`` builds the same from-array
expression under zarrdask's name instead (private dask API, kept there).
"""

from __future__ import annotations

import uuid
import warnings
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np
from dask.array.core import PerformanceWarning, normalize_chunks
from dask.base import tokenize
from dask.utils import parse_bytes

from ..compat.dask import named_from_array
from ..core.api import open_array
from ..core.array import Array
from ..core.block_reader import BlockReader
from ..errors import InvalidModeError
from ..plan import auto_read_chunks, cut_axes, default_read_chunks

if TYPE_CHECKING:
    from ..storage import StoreLike

__all__ = ["from_zarr", "open_source", "read_chunks"]

def from_zarr(
    source: StoreLike | Array,
    *,
    path: str | None = None,
    chunks: Any = None,
    storage_options: dict[str, Any] | None = None,
    name: str | bool | None = None,
) -> da.Array:
    """A dask array over a Zarr array: one task per shard by default.

    ``source`` is a path, URL, Store or zarrdask ``Array``. ``chunks``: ``None`` = the
    storage units (shards, else chunks); ``"auto"`` = runs of whole units of about
    ``array.chunk-size`` (128 MiB); anything ``dask.array.normalize_chunks`` accepts
    otherwise (a PerformanceWarning when the blocks cut through shards). ``name``: the
    graph's name (default ``zarrdask-read-<token>``; ``False`` for a random one).

    The graph is a single Blockwise layer, one task per block::

        ("zarrdask-read-<token>", i, j) -> getter(BlockReader(array), (slice(...), slice(...)))

    The keys are the same with dask's ``array.query-planning`` on or off.
    """
    array = open_source(source, path=path, storage_options=storage_options)
    block_chunks = read_chunks(array, chunks)
    reader = BlockReader(array)
    if name is None or name is True:
        name = f"zarrdask-read-{tokenize(reader, block_chunks)}"
    elif name is False:
        name = f"zarrdask-read-{uuid.uuid4().hex}"
    # The annotation keeps the read layer out of Blockwise fusion, so progress bars and the
    # dashboard still show the reads (dask's low-level fusion then merges each read with a
    # single consumer into one task named "zarrdask-read-<op>": still one task per shard).
    # Query planning ignores annotations but does not fuse the from-array expression either.
    with dask.annotate(zarrdask="read"):
        return named_from_array(reader, block_chunks, name, lock=False, asarray=False, fancy=False,
                                inline_array=True, meta=np.empty((0,) * array.ndim, dtype=array.dtype))


def open_source(
    source: StoreLike | Array,
    *,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    mode: str = "r",
) -> Array:
    """The zarrdask Array named by ``source`` (an Array passes through)."""
    if isinstance(source, Array):
        if path is not None or storage_options:
            raise InvalidModeError("path= and storage_options= do not apply to an already opened Array")
        return source
    return open_array(source, path=path, mode=mode, storage_options=storage_options)


def read_chunks(array: Array, chunks: Any = None) -> tuple[tuple[int, ...], ...]:
    """The dask block chunks for reading ``array`` (see :func:`from_zarr`)."""
    grid = array.unit_grid
    if chunks is None:
        return default_read_chunks(array.shape, grid)
    if isinstance(chunks, str) and chunks == "auto":
        limit = parse_bytes(dask.config.get("array.chunk-size"))
        return auto_read_chunks(array.shape, grid, array.dtype.itemsize, limit)
    unit = tuple(max(axis.extents()) for axis in grid)
    block_chunks = normalize_chunks(chunks, array.shape, dtype=array.dtype, previous_chunks=unit)
    cut = cut_axes(block_chunks, grid)
    if cut:
        kind = "shards" if array.shards is not None else "chunks"
        warnings.warn(
            f"chunks {block_chunks} cut through the array's {kind} {unit} along axes {cut}: "
            f"several tasks will fetch the same {kind[:-1]}; use whole multiples of {unit}",
            PerformanceWarning,
            stacklevel=3,
        )
    return block_chunks
