"""The Array: a Zarr array (v2 or v3) in a store, read and written with numpy selections."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..codecs.protocol import ChunkPipeline
from ..errors import (
    warn,
    MetadataError,
    NodeMismatchError,
    Problem,
    ReadOnlyError,
    ShapeMismatchError,
    TooLargeError,
    UnknownExtensionError,
    WriteConflictError,
)
from ..keywords import ShapeLike, missing_name
from ..metadata.dtypes.casting import held_values
from ..metadata.grid import AxisGrid, chunks_outside
from ..metadata.nodes import ArrayMetadata
from ..metadata.nczarr import nczarr_names
from ..indexing import Selection, basic_selection, indexing_kind, orthogonal_selection, point_selection
from ..storage.base import Store, join_path
from ..storage.transformers import get_storage_transformer
from ..runtime.cache import CacheInfo, array_cache, array_statistics, forget, pool_key
from .units import ArrayOptions, StorageStatistics, StoredUnits, UnitShape, array_options, fill_item, open_units
from .codec_parts import chunk_counts, codec_json, codec_parts
from .node import Node
from ..door.node_io import change_node
from ..runtime.output import format_bytes, output_array
from .pipelines import array_layout
from .selection_methods import SelectionMethods, point_values
from ..display.describe import NodeInfo, array_info
from ..display.html import array_html

__all__ = ["Array", "ArrayOptions"]


def _apply_storage_transformers(store: Store, metadata: Any) -> Store:
    """Wrap the store in each storage transformer, outermost first (spec order)."""
    for i, named in enumerate(metadata.storage_transformers):
        factory = get_storage_transformer(named.name)
        if factory is None:
            if not named.must_understand:
                warn(f"ignoring unknown storage transformer {named.name!r} (must_understand: false)")
                continue
            raise UnknownExtensionError(
                [Problem(("storage_transformers", i, "name"), f"unknown storage transformer {named.name!r}")])
        store = factory(dict(named.configuration), store)
    return store


_DEFAULT_OPTIONS = ArrayOptions()  # immutable, so shared
_DELETE_BATCH = 10_000  # the chunks a resize deletes per request batch (their keys held at once)


#: zarr-python Array members zarrdask has no namesake for, and what to use instead
_ARRAY_INSTEAD = {
    "async_array": "zarrdask has no async API; reads and writes run their I/O concurrently inside each call "
                   "(zarrdask.from_zarr(a) gives a lazy dask array)",
    "config": "a.options holds how the array reads and writes; a.with_options(...) changes them",
    "with_config": "use a.with_options(...) (write_empty_chunks=, threads=, ...); order is fixed at creation",
    "store_path": "use a.store and a.path",
    "create": "use zarrdask.create_array(store, ...)",
    "open": "use zarrdask.open_array(store, path=...)",
    "from_dict": "use zarrdask.create_array(store, ...) with the metadata's fields as keywords",
}


class Array(SelectionMethods, Node[ArrayMetadata]):
    """A Zarr array. ``a[sel]`` reads, ``a[sel] = v`` writes; ``oindex``/``vindex``/``blocks``
    for orthogonal, coordinate and block selections, and zarr-python's named selection
    methods (``get_orthogonal_selection``, ...). Open with :func:`zarrdask.open_array`."""

    def __init__(self, store: Store, path: str, metadata: ArrayMetadata, options: ArrayOptions | None = None) -> None:
        self._store = store
        self._path = path.strip("/")
        self._metadata = metadata
        self._options = options or _DEFAULT_OPTIONS
        self._setup()

    def _metadata_changed(self) -> None:
        self._setup()

    def _setup(self) -> None:
        meta = self._metadata
        layout = array_layout(meta, self._path, verify=self._options.verify_checksums)
        grid, spec, pipelines = layout.grid, layout.spec, layout.pipelines
        self._pipeline: ChunkPipeline = layout.pipeline
        try:
            chunk_store = _apply_storage_transformers(self._store, meta)
        except MetadataError as exc:
            if exc.key is not None:
                raise
            raise type(exc)(exc.problems, key=join_path(self._path, "zarr.json")) from None
        prefix = meta.chunk_prefix(self._path)
        pool = pool_key(chunk_store, prefix)
        decoded = array_cache(pool, meta.to_json, self._options.cache_bytes, chunk_store)
        if pool is None and self._options.cache_bytes:  # (said once: the arrays a resize or append makes read uncached)
            self._options = dataclasses.replace(self._options, cache_bytes=0)
        source = open_units(chunk_store, prefix, meta.chunk_key_encoding, pipelines, spec, self._options, grid,
                            pool_key=pool, decoded=decoded)
        self._source: StoredUnits = source
        self._pool, self._decoded = pool, decoded
        self._chunks = self._source.read_shape
        self._shards = self._source.shards

    # -- description ---------------------------------------------------------------
    @property
    def options(self) -> ArrayOptions:
        return self._options

    @property
    def units(self) -> StoredUnits:
        """The array's stored units (chunks or shards): how the planners, the Dask layer and
        the tools reach what is stored."""
        return self._source

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._metadata.shape)

    @shape.setter
    def shape(self, value: Sequence[int]) -> None:
        """``a.shape = new`` resizes (as zarr-python)."""
        self.resize(value)

    @property
    def dtype(self) -> np.dtype:
        return self._metadata.data_type.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def order(self) -> str:
        """The memory order of chunks: a v2 array's ``order``; "C" for v3 (results are C order)."""
        return self._metadata.order if self._metadata.zarr_format == 2 else "C"

    @property
    def chunks(self) -> UnitShape:
        """The read chunk shape: inner chunks when sharded."""
        return self._chunks

    @property
    def shards(self) -> UnitShape | None:
        """The shard (write) shape, or None when unsharded."""
        return self._shards

    @property
    def unit_grid(self) -> tuple[AxisGrid, ...]:
        """The storage units (one key each: shards when sharded, else chunks) laid over the
        array, one :class:`~zarrdask.metadata.grid.AxisGrid` per dimension."""
        return self._source.grid

    @property
    def fill_value(self) -> Any:
        return self._metadata.fill_value

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        """The axes' names: v3 ``dimension_names``, v2 ``_ARRAY_DIMENSIONS``, else the names
        NCZarr (netCDF-C) keeps in its ``_nczarr_array`` attribute or (4.8) in ``.zarray``'s
        ``_NCZARR_ARRAY``; None when there are none."""
        meta = self._metadata
        names = meta.dimension_names
        return names if names is not None else nczarr_names(meta)

    @property
    def codecs(self) -> list[dict[str, Any]]:
        """The codec chain as JSON (v3), or the v2 filters/compressor."""
        return codec_json(self._metadata, self._pipeline)

    @property
    def info(self) -> NodeInfo:
        """The metadata as a table (``print(a.info)``); :meth:`info_complete` adds what is stored."""
        return array_info(self)

    def info_complete(self) -> NodeInfo:
        """:attr:`info` plus chunks and shards stored and the compression ratio (lists the keys)."""
        return array_info(self, storage=True)

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """Chunks per dimension (inner chunks when sharded), as zarr-python."""
        return chunk_counts(self.unit_grid, self.chunks)

    @property
    def nchunks(self) -> int:
        """Chunks in the array (inner chunks when sharded), stored or not."""
        return math.prod(self.cdata_shape)

    @property
    def filters(self) -> tuple[dict[str, Any], ...]:
        """The array->array codecs (v3 JSON; inside the shards when sharded), or the v2
        filters (numcodecs configs); each can be passed back to ``create_array(filters=)``."""
        return codec_parts(self._metadata, self._pipeline).filters

    @property
    def serializer(self) -> dict[str, Any] | None:
        """The array->bytes codec as v3 JSON (inside the shards when sharded); None for v2."""
        return codec_parts(self._metadata, self._pipeline).serializer

    @property
    def compressors(self) -> tuple[dict[str, Any], ...]:
        """The bytes->bytes codecs as v3 JSON (inside the shards when sharded), or the v2
        compressor's numcodecs config; can be passed back to ``create_array(compressors=)``."""
        return codec_parts(self._metadata, self._pipeline).compressors

    @property
    def compressor(self) -> dict[str, Any] | None:
        """A Zarr v2 array's compressor (numcodecs config) or None, as zarr-python's
        ``compressor``; v3 arrays have :attr:`compressors` (a chain) instead."""
        if self._metadata.zarr_format != 2:
            raise NodeMismatchError(f"array {self.name!r} is Zarr v3, whose bytes codecs are a chain: use "
                                    f"a.compressors (here {self.compressors})")
        compressors = self.compressors
        return compressors[0] if compressors else None

    def __getattr__(self, name: str) -> Any:
        raise missing_name("zarrdask.Array", name, _ARRAY_INSTEAD,
                           f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def nchunks_initialized(self) -> int:
        """Chunks stored (inner chunks when sharded: the shard indexes are read)."""
        return self.storage_statistics().chunks_stored

    @property
    def nshards(self) -> int | None:
        """Shards in the array, stored or not, or None when unsharded (the count beside
        ``nshards_initialized``, as ``nchunks`` is beside ``nchunks_initialized``)."""
        return math.prod(axis.count for axis in self.unit_grid) if self._shards is not None else None

    @property
    def nshards_initialized(self) -> int | None:
        """Shards stored, or None when unsharded."""
        return len(self._source.stored_keys()) if self._shards is not None else None

    def storage_statistics(self, region: Any = Ellipsis) -> StorageStatistics:
        """Is ``region`` fully stored, or not stored at all? Reads no chunk data."""
        selection, _ = basic_selection(region, self.shape)
        return self._source.statistics(selection)

    def _repr_html_(self) -> str:
        return array_html(self)

    def cache_info(self) -> CacheInfo:
        """The decoded-chunk cache's statistics for this array (hits, misses, evictions,
        chunks and bytes held, over every open of it in this process) and the pool's size
        and limit. ``budget`` 0: this open reads without the cache (``cache_bytes=``)."""
        return array_statistics(self._pool, 0 if self._decoded is None else self._decoded.budget)

    def cache_clear(self) -> None:
        """Forget every decoded chunk of this array held in this process (by any open of
        it): needed after another process changed the array, which this process cannot see."""
        forget(self._pool)

    def nbytes_stored(self) -> int:
        """Bytes the array occupies in the store (metadata and chunks)."""
        return sum(size for _, size in self._store.list_sizes(self._path))

    def __repr__(self) -> str:
        shards = f" shards={self.shards}" if self.shards is not None else ""
        return (f"<zarrdask.Array {self.store.url} {self.name!r} shape={self.shape} dtype={self.dtype} chunks={self.chunks}{shards} "
                f"v{self.zarr_format}>")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    # -- options, pickling, tokens ----------------------------------------------------
    def with_options(self, **changes: Any) -> Array:
        """A view of the same array with other runtime options (see :class:`ArrayOptions`)."""
        options = array_options("Array.with_options", changes, self._options)
        return Array(self._store, self._path, self._metadata, options)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Array, (self._store, self._path, self._metadata, self._options))

    def __dask_tokenize__(self) -> object:
        digest = hashlib.sha1(json.dumps(self._metadata.to_json(), sort_keys=True, default=str).encode()).hexdigest()
        return ("zarrdask.Array", self._store.url, self._path, digest)

    # -- reads ---------------------------------------------------------------------------
    def _read(self, selection: Selection, out_shape: tuple[int, ...]) -> npt.NDArray[Any]:
        out = output_array(selection.shape, self.dtype)
        try:
            self._source.read(selection, out)
        except MemoryError as exc:
            raise self._too_large(exc, selection.shape) from None
        out = out.reshape(out_shape)
        return out[()] if out_shape == () else out  # (a numpy scalar for a 0-d result)

    def __getitem__(self, selection: Any) -> npt.NDArray[Any]:
        """The selected values as a new numpy array (a numpy scalar for a single element, as
        numpy and zarr-python give)."""
        kind = indexing_kind(selection, self.ndim)
        if kind == "points":
            return self.vindex[selection]
        if kind == "orthogonal":
            return self.oindex[selection]
        sel, shape = basic_selection(selection, self.shape)
        return self._read(sel, shape)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.asarray(self[...])
        return out if dtype is None else out.astype(dtype)

    @property
    def oindex(self) -> _OIndex:
        return _OIndex(self)

    @property
    def vindex(self) -> _VIndex:
        return _VIndex(self)

    # -- writes --------------------------------------------------------------------------
    def _why_read_only(self) -> str:
        """Why writes are refused: an old format zarrdask never writes, or a read-only store
        (the array cannot tell whether mode='r' or the store itself made it so)."""
        source = self._metadata.source_format
        if source is not None and not self._metadata.writable:
            return (f"array {self.name!r} is {source}, which zarrdask reads but never writes; `zarrdask migrate` "
                    "(or zarrdask.migrate) converts it to Zarr v3.1, which can be written")
        return (f"array {self.name!r} is read-only: its store {self.store.url} is (opened with mode='r', the default "
                "of zarrdask.open and open_array, or made read-only, as LocalStore(..., read_only=True)); to write, "
                "open a writable store with mode='r+'")

    def _write(self, selection: Selection, value: Any) -> None:
        if self.read_only:
            raise ReadOnlyError(self._why_read_only())
        target_shape = selection.shape
        values = held_values(value, self.dtype, self._metadata.item_family)  # (else InvalidValueError)
        if values.shape != target_shape:
            try:
                values = np.broadcast_to(values, target_shape)
            except ValueError:
                if values.size != math.prod(target_shape):
                    raise ShapeMismatchError(
                        f"cannot write values of shape {values.shape} into a selection of shape {target_shape}"
                    ) from None
                values = values.reshape(target_shape)
        lock = self._options.lock
        try:
            if lock is None:
                self._source.write(selection, values)
            else:
                with _held(lock):
                    self._source.write(selection, values)
        except MemoryError as exc:
            raise self._too_large(exc, selection.shape, write=True) from None

    def _too_large(self, exc: MemoryError, shape: tuple[int, ...], write: bool = False) -> TooLargeError:
        """A read (or write) of ``shape`` values that ran out of memory: the result, one of
        its chunks as the metadata sizes them, or the plan over their count."""
        if isinstance(exc, TooLargeError):
            return exc
        unit = self._source.spec
        nbytes = math.prod(shape) * self.dtype.itemsize
        verb, way = ("write", "into") if write else ("read", "from")
        why = f" ({exc})" if str(exc) else ""
        return TooLargeError(f"array {self.name!r}: {verb.rstrip('e')}ing {shape} values, {format_bytes(nbytes)}, "
                             f"{way} chunks of shape {unit.shape}, {format_bytes(unit.nbytes)} each as the metadata "
                             f"sizes them, ran out of memory{why}; {verb} a smaller selection")

    def __setitem__(self, selection: Any, value: Any) -> None:
        kind = indexing_kind(selection, self.ndim)
        if kind == "points":
            self.vindex[selection] = value
            return
        if kind == "orthogonal":
            self.oindex[selection] = value
            return
        sel, _ = basic_selection(selection, self.shape)
        self._write(sel, value)

    def resize(self, *shape: ShapeLike, from_shape: ShapeLike | None = None) -> None:
        """Change the shape. Chunks wholly outside the new shape are deleted, and the parts of
        edge chunks beyond it are reset to the fill value (so growing again shows no stale data).
        ``from_shape`` (zarrdask's): change it only if the shape as stored is still that one,
        else raise :class:`WriteConflictError` and change nothing, so writers that each grow
        the array to put their rows past its end never take the same rows."""
        new = self._shape_argument("resize", shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list))
                                   else shape)
        expected = None if from_shape is None else self._shape_argument("resize's from_shape", from_shape)
        if self.read_only:
            raise ReadOnlyError(self._why_read_only())
        # (the edge resets and deletes go by the shape as stored now: another writer may have grown it)
        stored = Array(self._store, self._path, change_node(self._store, self._path, self._metadata,
                                                            lambda m: None)[0], self._options)
        if expected is not None and stored.shape != expected:
            raise self._shape_conflict(stored.shape, expected)
        old, old_grid = stored.shape, stored.unit_grid
        for d, (n_new, axis) in enumerate(zip(new, old_grid)):
            if not 0 < n_new < axis.size:
                continue
            edge_end = axis.bounds(axis.index_of(n_new - 1))[1]  # the end of the unit cut by the new edge
            if edge_end > n_new:
                region = tuple(slice(n_new, edge_end) if i == d else slice(0, n) for i, n in enumerate(old))
                stored[region] = fill_item(self._metadata.chunk_fill)

        def change(now: ArrayMetadata) -> ArrayMetadata:
            if expected is not None and now.shape != expected:
                raise self._shape_conflict(now.shape, expected)
            return now.evolve(shape=new)

        self._change_metadata(change)
        stale = chunks_outside(old_grid, self.unit_grid)
        while batch := list(itertools.islice(stale, _DELETE_BATCH)):
            self._source.delete(batch)

    def _shape_argument(self, what: str, shape: Any) -> tuple[int, ...]:
        found = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if len(found) != self.ndim or any(not isinstance(s, (int, np.integer)) or s < 0 for s in found):
            raise ShapeMismatchError(f"{what} needs {self.ndim} non-negative integers, got {found}")
        return tuple(int(s) for s in found)

    def _shape_conflict(self, stored: tuple[int, ...], expected: tuple[int, ...]) -> WriteConflictError:
        return WriteConflictError(
            f"array {self.name!r}: its shape as stored is {stored}, not from_shape={expected} (another writer "
            f"resized it since, or it never had that shape); nothing was changed. To resize from the shape it has "
            f"now, pass from_shape={stored} once what changed is accounted for")

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow along ``axis`` and write ``data`` into the new part; returns the new shape.
        The array grows from its length as stored when it grows (one guarded change of its
        metadata): processes appending to one array at once each get a part of their own."""
        # (before the array grows: a value it cannot hold is refused)
        data = held_values(data, self.dtype, self._metadata.item_family)
        if not isinstance(axis, (int, np.integer)) or not -self.ndim <= axis < self.ndim:
            raise ShapeMismatchError(f"cannot append along axis {axis!r} of a {self.ndim}-d array: pass an integer "
                                     f"axis from {-self.ndim} to {self.ndim - 1}")
        axis = int(axis) % self.ndim
        if data.ndim != self.ndim or any(s != d for i, (s, d) in enumerate(zip(self.shape, data.shape)) if i != axis):
            raise ShapeMismatchError(f"cannot append data of shape {data.shape} to shape {self.shape} along {axis}")
        n = data.shape[axis]
        before, after = self._change_metadata(
            lambda m: m.evolve(shape=tuple(s + n if i == axis else s for i, s in enumerate(m.shape))))
        old = before.shape[axis]
        self[tuple(slice(old, old + n) if i == axis else slice(None) for i in range(self.ndim))] = data
        return after.shape

    def check_expectations(self, shape: Sequence[int] | None = None, dtype: Any = None,
                           chunks: Sequence[int] | None = None, *, function: str = "zarrdask.open_array",
                           replaceable: bool = False) -> None:
        """Raise ShapeMismatchError if the stored array differs from what ``function``'s caller
        passed (``replaceable``: the call has a ``mode='w'`` that would replace it); the
        message names each keyword given, what is stored, and what to do instead."""
        given, stored, fixes = [], [], []
        if shape is not None and tuple(shape) != self.shape:
            given.append(f"shape={tuple(shape)}")
            stored.append(f"shape {self.shape}")
            fixes.append(f"to change its shape, open it and call .resize({tuple(shape)})")
        if dtype is not None and np.dtype(dtype) != self.dtype:
            given.append(f"dtype={str(np.dtype(dtype))!r}")
            stored.append(f"dtype {str(self.dtype)!r}")
        if chunks is not None and tuple(chunks) not in (self.chunks, self.shards):
            given.append(f"chunks={tuple(chunks)}")
            stored.append(f"chunks {self.chunks}" + (f" in shards {self.shards}" if self.shards else ""))
        if not given:
            return
        names = ", ".join(g.split("=")[0] + "=" for g in given)
        fixes.insert(0, f"to open it as stored, leave {names} out")
        if replaceable:
            fixes.append("mode='w' replaces it (its data is deleted)")
        where = repr(self._path or "<root>")
        raise ShapeMismatchError(f"{function}(): the array at {where} in {self._store!r} has {', '.join(stored)}, "
                                 f"not the {', '.join(given)} given; " + "; ".join(fixes))


@contextlib.contextmanager
def _held(lock: Any) -> Iterator[None]:
    """Hold ``lock`` (anything with ``acquire()``/``release()``) for the block."""
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


class _OIndex:
    """``a.oindex[...]``: orthogonal selection (int/bool arrays index each axis independently)."""

    def __init__(self, array: Array) -> None:
        self._array = array

    def __getitem__(self, selection: Any) -> npt.NDArray[Any]:
        sel, shape = orthogonal_selection(selection, self._array.shape)
        return self._array._read(sel, shape)

    def __setitem__(self, selection: Any, value: Any) -> None:
        sel, shape = orthogonal_selection(selection, self._array.shape)
        self._array._write(sel, value)


class _VIndex:
    """``a.vindex[...]``: coordinate (point) selection, or a boolean mask of the array's shape."""

    def __init__(self, array: Array) -> None:
        self._array = array

    def __getitem__(self, selection: Any) -> npt.NDArray[Any]:
        sel, shape = point_selection(selection, self._array.shape)
        return self._array._read(sel, shape)

    def __setitem__(self, selection: Any, value: Any) -> None:
        sel, shape = point_selection(selection, self._array.shape)
        array = self._array
        array._write(sel, point_values(value, array.dtype, array._metadata.item_family, shape, sel))

