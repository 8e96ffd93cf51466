"""``from_zarr``: a lazy dask array with one read task per shard (or per chunk when unsharded).

The graph is built through the public ``da.from_array`` on a tiny picklable
:class:`~zarrdask.core.block_reader.BlockReader`, so it is a lazily materialised Blockwise layer (a million blocks
cost nothing until computed). With dask's array query planning on, ``from_array``
ignores ``name=``, so :func:`_from_array` builds the same ``FromArray`` expression
under zarrdask's name instead (see there).
"""

from __future__ import annotations

import functools
import uuid
import warnings
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np
from dask.array.core import PerformanceWarning, normalize_chunks
from dask.base import tokenize
from dask.utils import parse_bytes

from ..core.api import open_array
from ..core.array import Array
from ..core.block_reader import BlockReader
from ..errors import InvalidModeError
from ..plan import auto_read_chunks, cut_axes, default_read_chunks

if TYPE_CHECKING:
    from ..storage import StoreLike

__all__ = ["from_zarr", "open_source", "read_chunks"]

_NAMED_FROM_ARRAY = "_NamedFromArray"


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
    write grid (shards, else chunks); ``"auto"`` = whole multiples of it of about
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
    # Query planning ignores annotations but does not fuse the FromArray expression either.
    with dask.annotate(zarrdask="read"):
        return _from_array(reader, block_chunks, name, np.empty((0,) * array.ndim, dtype=array.dtype))


def _from_array(
    reader: BlockReader, chunks: tuple[tuple[int, ...], ...], name: str, meta: np.ndarray
) -> da.Array:
    """``da.from_array(reader, chunks, name=name, ...)``, keyed ``name`` in both dask modes.

    Legacy dask arrays honour ``name=``. With ``array.query-planning`` on, dask's
    ``from_array`` drops it and keys the blocks ``fromarray-<token>``, which hides the
    reads from progress bars; there we build dask's own ``FromArray`` expression (same
    lazily materialised ``graph_from_arraylike`` layer, one task per block) through a
    subclass that only changes its name. That is private dask API (checked on dask
    2026.8.0), so any failure falls back to the plain ``da.from_array``.
    """
    options = dict(lock=False, asarray=False, fancy=False, inline_array=True, meta=meta)
    if da.array_expr_enabled():
        try:
            from dask._collections import new_collection

            return new_collection(_named_from_array_class()(reader, chunks, key_name=name, **options))
        except Exception:  # pragma: no cover - another dask version
            pass
    return da.from_array(reader, chunks=chunks, name=name, **options)


@functools.cache
def _named_from_array_class() -> type:
    """dask's ``FromArray`` expression keyed by its ``key_name`` operand (dask 2026.8.0).

    Defined on first use, so legacy mode never imports ``dask.array._array_expr``, and
    reachable as ``zarrdask.dask_io.read._NamedFromArray`` (module ``__getattr__``) so a
    distributed scheduler or worker can unpickle the expression whatever its own mode.
    """
    from dask.array._array_expr._io import FromArray

    class _NamedFromArray(FromArray):
        _parameters = [*FromArray._parameters, "key_name"]
        _defaults = {**FromArray._defaults, "key_name": None}

        @functools.cached_property
        def _name(self) -> str:
            # The key name already tokenises the reader (store, path, metadata) and the
            # chunks; no dask rewrite substitutes FromArray operands in dask 2026.8.0.
            name = self.operand("key_name")
            return name if name is not None else f"{self._funcname}-{self.deterministic_token}"

        def __str__(self) -> str:
            return f"FromArray({self.operand('key_name')})"

    _NamedFromArray.__module__ = __name__
    _NamedFromArray.__qualname__ = _NAMED_FROM_ARRAY
    return _NamedFromArray


def __getattr__(attr: str) -> Any:
    if attr == _NAMED_FROM_ARRAY:
        return _named_from_array_class()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


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
    grid = tuple(array.write_grid)
    if chunks is None:
        return default_read_chunks(array.shape, grid)
    if isinstance(chunks, str) and chunks == "auto":
        limit = parse_bytes(dask.config.get("array.chunk-size"))
        return auto_read_chunks(array.shape, grid, array.dtype.itemsize, limit)
    block_chunks = normalize_chunks(chunks, array.shape, dtype=array.dtype, previous_chunks=grid)
    cut = cut_axes(block_chunks, grid)
    if cut:
        unit = "shards" if array.shards is not None else "chunks"
        warnings.warn(
            f"chunks {block_chunks} cut through the array's {unit} {grid} along axes {cut}: "
            f"several tasks will fetch the same {unit[:-1]}; use whole multiples of {grid}",
            PerformanceWarning,
            stacklevel=3,
        )
    return block_chunks
