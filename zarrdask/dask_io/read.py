"""``from_zarr``: a lazy dask array with one read task per shard (or per chunk when unsharded).

The graph is built through the public ``da.from_array`` on a tiny picklable
:class:`~zarrdask.nodes.block_reader.BlockReader`, so it is a lazily materialised Blockwise layer (a million blocks
cost nothing until computed). With dask's array query planning on, ``from_array``
ignores ``name=``, so ``compat.dask.named_from_array`` builds the same from-array
expression under zarrdask's name instead (private dask API, kept there).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np
from dask.array.core import PerformanceWarning, normalize_chunks
from dask.base import tokenize
from dask.utils import parse_bytes

from .. import arguments
from ..compat.dask import named_from_array
from ..api.openers import array_at
from ..metadata.grid import largest_extent
from ..nodes.array import Array
from ..nodes.block_reader import BlockReader
from ..errors import ArrayNotFoundError, ShapeMismatchError, TooLargeError, warn
from ..plan import auto_read_chunks, cut_axes, default_read_chunks
from .dask_keywords import ReadKeywords, merged, read_keywords
from .sources import locate, node_path, not_an_array
from .transactions import check_shared
from .whole import read_array

if TYPE_CHECKING:
    from ..door import Resolved
    from ..storage import StoreLike

__all__ = ["from_zarr", "open_location", "open_source", "read_chunks"]

FUNCTION = "zarrdask.from_zarr"
_NAMED = ("url", "component", "storage_options", "chunks", "name", "inline_array", "path", "zarr_read_kwargs")


def from_zarr(
    url: StoreLike | Array | Any,
    component: str | None = None,
    storage_options: dict[str, Any] | None = None,
    chunks: Any = None,
    name: str | bool | None = None,
    inline_array: bool = True,
    *,
    path: str | None = None,
    zarr_read_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> da.Array:
    """A dask array over a Zarr array: one task per shard by default.

    Called as ``dask.array.from_zarr`` is (same positions and keywords), so a script
    changes only its import. ``url``: a path, URL, Store (zarrdask's or zarr-python's), a
    zarrdask ``Array``/``Group`` or a zarr-python ``Array``/``Group``. ``component`` (or
    zarrdask's ``path=``): the array's path in the store, or below a given group; a group
    where an array is expected is an error listing its arrays. ``storage_options``: for
    fsspec URLs (refused with an opened node, whose store is already open; dask ignores them there).
    ``chunks``: ``None`` = the storage units (shards, else chunks; dask: the chunks; one
    block per axis for an array that holds nothing); ``"auto"`` = runs of whole units of
    about ``array.chunk-size`` (128 MiB); anything ``dask.array.normalize_chunks`` accepts
    otherwise (a PerformanceWarning when the blocks cut through shards). ``name``: the
    graph's name (default ``zarrdask-read-<token>``; ``False`` for a random one).

    ``inline_array`` has dask's meaning, but defaults to True where dask's default is
    False: the reader in each task is a small picklable ``BlockReader`` (store, path,
    metadata; no open file), so inlining it costs nothing and each read task stands alone.
    ``False`` puts it once under its own key (``original-<name>``) that every read depends on.

    Extra keywords (dask passes them to ``zarr.open_array``), also accepted as a
    ``zarr_read_kwargs`` dict: ``zarr_format``, ``shape``, ``dtype`` (checked against the
    stored array), ``mode`` (``"r"``, ``"r+"`` or ``"a"``: the array is only read) and the
    :class:`~zarrdask.ArrayOptions` fields (``missing_chunks``, ``threads``, ...). Any
    other is an UnexpectedKeywordError naming it.

    The graph is a single Blockwise layer, one task per block::

        ("zarrdask-read-<token>", i, j) -> getter(BlockReader(array), (slice(...), slice(...)))

    The keys are the same with dask's ``array.query-planning`` on or off. Computed on its
    own (``x.compute()``, ``np.asarray(x)``), the array is read in one task straight into
    its result instead (``dask_io/whole.py``).
    """
    given = read_keywords(FUNCTION, merged(FUNCTION, kwargs, zarr_read_kwargs), _NAMED)
    node_at = node_path(FUNCTION, component=component, path=path)
    found = locate(FUNCTION, url, node_at, storage_options, mode=given.mode, zarr_format=given.expect.get("zarr_format"))
    array = open_location(FUNCTION, found, given)
    check_shared(FUNCTION, array.store)
    block_chunks = read_chunks(array, chunks)
    reader = BlockReader(array)
    name = name if isinstance(name, bool) or name is None else arguments.text(FUNCTION, "name", name)
    inline_array = arguments.flag(FUNCTION, "inline_array", inline_array)
    if name is None or name is True:
        # inline_array=False names another graph (query planning caches expressions by name)
        token = tokenize(reader, block_chunks) if inline_array else tokenize(reader, block_chunks, "original")
        name = f"zarrdask-read-{token}"
    elif name is False:
        name = f"zarrdask-read-{uuid.uuid4().hex}"
    # No annotation on the layer: Blockwise fusion then merges each read with its
    # consumers into one task (as dask's own from_zarr), so a cluster schedules one task
    # per shard, not two; the progress bar shows the fused task under its consumer's name.
    meta = np.empty((0,) * array.ndim, dtype=array.dtype)
    blocks = named_from_array(reader, block_chunks, name, lock=False, asarray=False, fancy=False,
                              inline_array=bool(inline_array), meta=meta)
    return read_array(blocks, reader, meta)


def open_source(
    source: StoreLike | Array | Any,
    *,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    mode: str = "r",
    function: str = FUNCTION,
) -> Array:
    """The zarrdask Array named by ``source`` (see :func:`from_zarr`; an Array passes through)."""
    return open_location(function, locate(function, source, path, storage_options, mode=mode), ReadKeywords(mode=mode))


def open_location(function: str, location: Resolved, given: ReadKeywords) -> Array:
    """The array at ``location`` (as the door found it) opened as ``given`` says; a group
    there is an error listing its arrays."""
    array = location.node
    if isinstance(array, Array):  # already open: kept as it is (its options, its store's mode)
        expect = dict(given.expect)
        fmt = expect.pop("zarr_format", None)
        if fmt is not None and fmt != array.metadata.zarr_format:
            raise ShapeMismatchError(
                f"{function}(): zarr_format={fmt} given, but array {array.name!r} is Zarr v{array.metadata.zarr_format}")
        array.check_expectations(**expect, function=function)
        return array.with_options(**given.options) if given.options else array
    expect = dict(given.expect)
    zarr_format = expect.pop("zarr_format", None)
    try:  # (named as the opener whose mode='a' creates an array, for the message of a missing one)
        return array_at("zarrdask.open_array", location, given.mode, zarr_format, expect, dict(given.options),
                        caller=function)
    except ArrayNotFoundError as exc:
        raise not_an_array(function, location, exc) from exc


def read_chunks(array: Array, chunks: Any = None) -> tuple[tuple[int, ...], ...]:
    """The dask block chunks for reading ``array`` (see :func:`from_zarr`): one block per
    axis when the array holds nothing (however many units its metadata lays over it)."""
    if 0 in array.shape and (chunks is None or isinstance(chunks, str) and chunks == "auto"):
        return tuple((n,) for n in array.shape)
    try:
        return _read_chunks(array, chunks)
    except MemoryError:  # (a tuple of block sizes per axis: one per unit unless chunks= says)
        counts = tuple(axis.count for axis in array.unit_grid)
        fewer = tuple(min(n, (axis.bounds(0)[1] or 1) * -(-axis.count // 10_000))
                      for n, axis in zip(array.shape, array.unit_grid))
        raise TooLargeError(f"{FUNCTION}(): the array at {array.path or '<root>'!r} (shape {array.shape}) has "
                            f"{counts} storage units along its axes; dask cannot hold one block size per unit"
                            f"{'' if chunks is None else f' (chunks={arguments.shown(chunks)})'}: pass chunks= "
                            f"with fewer, larger blocks, such as chunks={fewer}") from None


def _read_chunks(array: Array, chunks: Any) -> tuple[tuple[int, ...], ...]:
    grid = array.unit_grid
    if chunks is None:
        return default_read_chunks(array.shape, grid)
    if isinstance(chunks, str) and chunks == "auto":
        limit = parse_bytes(dask.config.get("array.chunk-size"))
        return auto_read_chunks(array.shape, grid, array.dtype.itemsize, limit)
    unit = tuple(largest_extent(axis) for axis in grid)
    try:
        block_chunks = normalize_chunks(chunks, array.shape, dtype=array.dtype, previous_chunks=unit)
    except (TypeError, ValueError, ZeroDivisionError) as exc:  # (dask's parser)
        raise ShapeMismatchError(f"{FUNCTION}(): chunks={chunks!r} is not a chunk shape for an array of shape "
                                 f"{array.shape} ({exc}); pass dask's forms: an int, a tuple such as "
                                 f"{unit}, 'auto', a size such as '64 MiB', or one tuple of block sizes per axis")
    if any(not isinstance(c, (int, np.integer)) or c <= 0 and n for axis, n in zip(block_chunks, array.shape)
           for c in axis):
        raise ShapeMismatchError(f"{FUNCTION}(): chunks={chunks!r} gives blocks {block_chunks}: expected positive "
                                 f"integers such as {unit}")
    cut = cut_axes(block_chunks, grid)
    if cut:
        kind = "shards" if array.shards is not None else "chunks"
        shown = repr(chunks)
        if len(shown) > 60:  # (the user's own value, unless it is a long list of block sizes)
            shown = f"(blocks of up to {tuple(max(c) for c in block_chunks)})"
        warn(f"chunks={shown} cut through the array's {kind} {unit} along axes {cut}: several tasks will fetch "
             f"the same {kind[:-1]}; use whole multiples of {unit}", PerformanceWarning)
    return block_chunks
