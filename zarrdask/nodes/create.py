"""Creating arrays and groups: user arguments -> validated metadata -> stored documents.

The metadata is validated (codec chain built against the chunk spec) before anything
is written, so a bad argument leaves the store untouched.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import DTypeLike

from ..metadata.dtypes import DataType, as_numpy_dtype, data_type_from_numpy, parse_dtype_v2
from .. import arguments
from ..errors import (
    ContainsNodeError,
    InvalidModeError,
    InvalidTypeError,
    MetadataError,
    Problem,
    ShapeMismatchError,
    UnexpectedKeywordError,
)
from ..keywords import ShapeLike, did_you_mean
from ..metadata.attribute_values import json_attributes
from ..metadata.n5 import N5_DOCUMENT, GroupMetadataN5, as_n5_array, is_n5_path
from ..metadata.grid import RectilinearChunkGrid, RegularChunkGrid, parse_chunk_key_encoding, raise_problems
from ..metadata.extension import NamedConfig, parse_named_config
from ..metadata.nodes import ArrayMetadata, GroupMetadata
from ..metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from ..metadata.v3 import ArrayMetadataV3, GroupMetadataV3
from ..door.resolve import resolve
from ..storage.base import Store, join_path, new_node_path, node_path
from .array import Array, ArrayOptions
from .units import array_options
from .array_keywords import DEFAULT_FILL, OPTION_NAMES, ArraySpec, array_config, split_array_keywords
from .codec_input import as_list, codec_json_v2, codec_json_v3
from .codec_parts import codec_json
from .pipelines import array_layout
from ..door.node_io import encode_node, read_nodes, write_node

__all__ = ["ArrayPlan", "INDEX_CODECS", "NewGroup", "OVERWRITE_HINT", "commit_array", "create_array", "create_legacy",
           "opened_read_only", "plan_array", "write_group"]

_AUTO_CHUNK_BYTES = 4 << 20
_AUTO_INNER_BYTES = 1 << 20  # inner chunks of a shard: the unit of partial reads
_ZSTD_V3 = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
_ZSTD_V2 = {"id": "zstd", "level": 0}  # no "checksum" member: TensorStore's v2 driver rejects it
#: the v2 compressor of arrays made through a group (``Group.create_array``, and so xarray's
#: ``to_zarr``): zarr-python's numcodecs.Blosc() there, where its top-level functions use zstd
GROUP_V2_COMPRESSOR = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
#: the shard index chain zarrdask writes (crc32c-checked, little-endian offsets and sizes)
INDEX_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
#: create_array's own keywords (for did-you-mean)
_CREATE_NAMES = ("name", "shape", "dtype", "data", "chunks", "shards", "filters", "compressors", "serializer",
                 "fill_value", "order", "zarr_format", "attributes", "chunk_key_encoding", "dimension_names",
                 "storage_options", "overwrite", "config", "write_data", "codecs", "path", "allow_reserved_names")
#: how to replace an existing node, for create_array / create_group
OVERWRITE_HINT = "pass overwrite=True to replace it"


def _shape(value: Any, name: str) -> tuple[int, ...]:
    return arguments.shape("", name, value)


def _attributes(value: Any) -> dict[str, Any]:
    return json_attributes(arguments.options("", "attributes", value, "{'units': 'K'}") or {})


def _auto_chunks(shape: tuple[int, ...], itemsize: int, limit: int = _AUTO_CHUNK_BYTES,
                 divide: bool = False) -> tuple[int, ...]:
    """Halve the largest dimension until a chunk holds at most ``limit`` bytes; with
    ``divide`` only even dimensions are halved, so the result divides ``shape``."""
    chunks = [max(1, s) for s in shape]
    while math.prod(chunks) * itemsize > limit:
        candidates = [i for i, c in enumerate(chunks) if c > 1 and (not divide or c % 2 == 0)]
        if not candidates:
            break
        i = max(candidates, key=lambda k: chunks[k])
        chunks[i] = (chunks[i] + 1) // 2
    return tuple(chunks)


def _auto_shards(shape: tuple[int, ...], chunks: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """``shards="auto"`` beside given chunks: a grid of whole chunks (a shard must be one),
    chosen over the chunk counts as auto chunks are over the shape (the largest count halved
    until a shard holds at most 4 MiB, at least one chunk). zarr-python 3.1 doubles every
    axis holding more than 8 chunks, whatever the bytes."""
    counts = tuple(-(-s // c) for s, c in zip(shape, chunks))
    per_shard = _auto_chunks(counts, math.prod(chunks) * itemsize)
    return tuple(n * c for n, c in zip(per_shard, chunks))


def _chunks(value: Any, shape: tuple[int, ...], itemsize: int, name: str = "chunks") -> tuple[int, ...]:
    """A chunk (or shard) shape as zarr-python reads one: None, ``True`` or "auto" chosen
    for the array, ``False`` the whole array, one int for every dimension, and -1 (or None)
    in a dimension the whole of it."""
    if value is None or value is True or (isinstance(value, str) and value == "auto"):
        return _auto_chunks(shape, itemsize)
    if value is False:
        return tuple(max(1, s) for s in shape)
    if not isinstance(value, (int, np.integer, Sequence)) or isinstance(value, (str, bytes)):
        raise InvalidTypeError(f"{name}= expects an int, a tuple of ints such as (100, 100), 'auto', True or "
                               f"False, got {type(value).__name__} {value!r}")
    chunks = (int(value),) * len(shape) if isinstance(value, (int, np.integer)) else tuple(value)
    if len(chunks) == len(shape):
        chunks = tuple(max(1, s) if c is None or (isinstance(c, (int, np.integer)) and not isinstance(c, bool)
                                                  and c == -1) else c for c, s in zip(chunks, shape))
    if len(chunks) != len(shape) or any(not isinstance(c, (int, np.integer)) or isinstance(c, bool) or c < 1
                                         for c in chunks):
        raise ShapeMismatchError(f"{name} must be {len(shape)} positive integers (-1: a whole dimension), "
                                 f"got {value!r}")
    return tuple(int(c) for c in chunks)


def _named(values: Sequence[Any], loc: str) -> tuple[NamedConfig, ...]:
    problems: list[Problem] = []
    parsed = [parse_named_config(v, (loc, i), problems) for i, v in enumerate(values)]
    raise_problems(problems)
    return tuple(p for p in parsed if p is not None)


def _key_encoding(value: Any, zarr_format: int) -> Any:
    if value is None:
        return parse_chunk_key_encoding(NamedConfig("default" if zarr_format == 3 else "v2"), (), [])
    if isinstance(value, str) and value in ("/", "."):
        value = {"name": "default" if zarr_format == 3 else "v2", "configuration": {"separator": value}}
    if isinstance(value, Mapping) and "separator" in value and "configuration" not in value:
        value = {"name": value.get("name", "default"), "configuration": {"separator": value["separator"]}}
    problems: list[Problem] = []
    named = parse_named_config(value, ("chunk_key_encoding",), problems)
    encoding = named and parse_chunk_key_encoding(named, ("chunk_key_encoding",), problems)
    raise_problems(problems)
    return encoding


def _v3_codecs(dtype: DataType, chunks: tuple[int, ...], shards: tuple[int | tuple[int, ...], ...] | None, codecs: Any,
               compressors: Any, filters: Any, serializer: Any) -> list[Any]:
    if codecs is not None:
        if shards is not None:
            raise MetadataError("pass either codecs= (the whole chain, with chunks= as its grid) or shards=, not both")
        return [codec_json_v3(c, ("codecs", i)) for i, c in enumerate(as_list(codecs))]
    if serializer == "auto":
        serializer = {"string": "vlen-utf8", "bytes": "vlen-bytes"}.get(
            dtype.family, {"name": "bytes", "configuration": {"endian": "little"}})
    if compressors == "auto":
        compressors = [_ZSTD_V3]
    chain = [codec_json_v3(c, ("filters", i)) for i, c in enumerate(as_list(filters))]
    chain.append(codec_json_v3(serializer, ("serializer",)))
    chain.extend(codec_json_v3(c, ("compressors", i)) for i, c in enumerate(as_list(compressors)))
    if shards is None:
        return chain
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunks), "codecs": chain, "index_codecs": INDEX_CODECS, "index_location": "end"}}]


def _prepare(store: Store, path: str, overwrite: bool, zarr_format: int, exists_hint: str) -> None:
    """Refuse (or clear) an existing node; create missing parent groups. ``exists_hint``:
    how the caller's function replaces an existing node."""
    parts = path.split("/") if path else []
    parents = ["/".join(parts[:i]) for i in range(len(parts))]
    found = read_nodes(store, [*parents, path])
    for parent, meta in zip(parents, found):
        if meta is not None and meta.node_type == "array":
            raise ContainsNodeError(f"cannot create {path!r}: its parent {parent or '<root>'!r} is an array")
    if found[-1] is not None:
        if not overwrite:
            raise ContainsNodeError(f"a{'n' if found[-1].node_type == 'array' else ''} {found[-1].node_type} "
                                    f"already exists at {path or '<root>'!r} in {store!r} ({exists_hint})")
        store.delete_prefix(path)
    for parent, meta in zip(parents, found):
        if meta is None:
            write_node(store, parent, _new_group(store, zarr_format, {}), created=True)


def _new_group(store: Store, zarr_format: int, attributes: Mapping[str, Any]) -> GroupMetadata:
    """A new group's metadata: N5's in an N5 container (a location ending ``.n5``)."""
    if zarr_format == 2:
        return GroupMetadataV2(attributes=_attributes(attributes))
    return (GroupMetadataN5 if is_n5_path(store.url) else GroupMetadataV3)(attributes=_attributes(attributes))


def _zarr_format(value: Any) -> int:
    if value is None:
        return 3
    if value not in (2, 3):
        raise MetadataError([Problem(("zarr_format",), f"expected 2 or 3, got {value!r}")])
    return int(value)


@dataclass(frozen=True)
class ArrayPlan:
    """A validated array about to be created: nothing has been written yet."""

    store: Store
    path: str
    metadata: Any
    options: ArrayOptions
    data: np.ndarray | None


def plan_array(store: Store, path: str | None, spec: ArraySpec, zarr_format: Any, options: dict[str, Any],
               function: str) -> ArrayPlan:
    """Validate every argument of an array creation and build its metadata; writes nothing,
    so a bad argument leaves the store untouched. ``function`` names the caller in errors."""
    zarr_format = _zarr_format(zarr_format)
    path = new_node_path(path, zarr_format, spec.allow_reserved_names)
    opts = array_options(function, options)
    shape, dtype, data = spec.shape, spec.dtype, None
    if spec.data is not None:
        if shape is not None or dtype is not None:
            raise InvalidModeError(f"{function}(): pass data= or shape=/dtype=, not both (shape and dtype "
                                   "are taken from data)")
        data = np.asarray(spec.data)
        shape, dtype = data.shape, data.dtype
    if shape is None or dtype is None:
        raise InvalidModeError(f"{function}() needs shape= and dtype= (or data=) to create an array "
                               "(nothing was changed)")
    shape = _shape(shape, "shape")
    filters = None if isinstance(spec.filters, str) and spec.filters == "auto" else spec.filters
    given = spec.order or "C"
    if given not in ("C", "F"):
        raise InvalidModeError(f"{function}(): order must be 'C' or 'F', got {given!r}")
    order: Literal["C", "F"] = "F" if given == "F" else "C"
    if zarr_format == 3:
        if order == "F":
            raise InvalidModeError(
                f"{function}(): order='F' is a memory layout in zarr-python's Zarr v3 arrays; zarrdask returns "
                "C-ordered NumPy arrays (np.asfortranarray(a[...]) gives F order), and a transposed store is "
                "filters=[{'name': 'transpose', 'configuration': {'order': [...]}}]")
        fill = None if spec.fill_value is DEFAULT_FILL else spec.fill_value
        metadata: ArrayMetadata = _metadata_v3(shape, dtype, spec.chunks, spec.shards, fill, spec.compressors,
                                     filters, spec.serializer, spec.codecs, spec.dimension_names, spec.attributes,
                                     spec.chunk_key_encoding)
    else:
        if spec.shards is not None or spec.codecs is not None:
            raise MetadataError("Zarr v2 has no sharding and no v3 codec chain; use zarr_format=3")
        metadata = _metadata_v2(shape, dtype, spec.chunks, spec.fill_value, spec.compressors, filters,
                                spec.dimension_names, spec.attributes, spec.chunk_key_encoding, order)
    layout = array_layout(metadata, path, verify=opts.verify_checksums)  # the codec chain, checked before any write
    if zarr_format == 3:
        metadata = metadata.evolve(codecs=_named(codec_json(metadata, layout.pipeline), "codecs"))
    if isinstance(metadata, ArrayMetadataV3) and is_n5_path(store.url):  # an N5 container: the array as N5 holds it
        metadata = as_n5_array(metadata, join_path(path, N5_DOCUMENT))
        array_layout(metadata, path, verify=opts.verify_checksums)
    encode_node(path, metadata)  # validates the attributes before any write
    return ArrayPlan(store, path, metadata, opts, data if spec.write_data else None)


def commit_array(plan: ArrayPlan, overwrite: bool, exists_hint: str) -> Array:
    """Write a planned array (replacing an existing node only with ``overwrite``) and its data."""
    _prepare(plan.store, plan.path, overwrite, plan.metadata.zarr_format, exists_hint)
    write_node(plan.store, plan.path, plan.metadata, created=True)
    array = Array(plan.store, plan.path, plan.metadata, plan.options)
    array.cache_clear()  # (decoded chunks of an array that was there before, held by any open)
    if plan.data is not None and plan.data.size:
        array[...] = plan.data
    return array


def create_array(store: Any, *, name: str | None = None, shape: ShapeLike | None = None, dtype: DTypeLike | None = None,
                 data: Any = None,
                 chunks: Any = "auto", shards: Any = None, filters: Any = "auto", compressors: Any = "auto",
                 serializer: Any = "auto", fill_value: Any = DEFAULT_FILL, order: Literal["C", "F"] | None = None,
                 zarr_format: Literal[2, 3] | None = 3, attributes: Mapping[str, Any] | None = None,
                 chunk_key_encoding: Any = None, dimension_names: Sequence[str | None] | None = None,
                 storage_options: dict[str, Any] | None = None, overwrite: bool = False,
                 config: Any = None, write_data: bool = True, codecs: Any = None, path: str | None = None,
                 allow_reserved_names: bool = False, **options: Any) -> Array:
    """Create an array and write its metadata (and ``data``); returns it opened for writing.

    The keywords are zarr-python 3's ``zarr.create_array``'s: ``name`` (or ``path``) places
    it in the store; ``data`` gives the values, and with them shape and dtype. ``chunks``
    is the read chunk shape; with ``shards`` the chunks are packed into shards (the write
    unit). ``codecs`` gives the whole v3 chain instead of ``filters`` / ``serializer`` /
    ``compressors`` (then ``chunks`` is the chain's grid); codecs may be names, dicts,
    numcodecs or zarr.codecs objects. ``config``: zarr-python's ArrayConfig (or dict) of
    ``order`` and ``write_empty_chunks``. Keyword ``options`` are :class:`ArrayOptions`
    (``write_empty_chunks``, ``threads``, ...). Zarr v3 reserves node names starting with
    ``__``; ``allow_reserved_names=True`` creates one anyway (xarray names an unnamed
    variable ``__values__``). Everything is validated before anything is written or deleted.
    """
    function = "zarrdask.create_array"
    for key in options:
        if key not in OPTION_NAMES:
            raise UnexpectedKeywordError(f"{function}() got an unexpected keyword argument {key!r}"
                                         f"{did_you_mean(key, [*OPTION_NAMES, *_CREATE_NAMES])}")
    name, path = arguments.text(function, "name", name), arguments.text(function, "path", path)
    if name is not None and path is not None and node_path(name) != node_path(path):
        raise InvalidModeError(f"{function}(): name={name!r} and path={path!r} disagree; pass one of them")
    order = array_config(function, config, order, options)
    spec = ArraySpec(shape=shape, dtype=dtype, data=data, chunks=chunks, shards=shards, filters=filters,
                     compressors=compressors, serializer=serializer, codecs=codecs, fill_value=fill_value,
                     order=order, attributes=attributes, chunk_key_encoding=chunk_key_encoding,
                     dimension_names=dimension_names, write_data=write_data,
                     allow_reserved_names=allow_reserved_names)
    found = resolve(function, store, path=path if path is not None else name, mode="a",
                    storage_options=storage_options, read=False)
    plan = plan_array(found.store, found.path, spec, zarr_format, options, function)
    return commit_array(plan, overwrite, OVERWRITE_HINT)


def create_legacy(function: str, store: Any, path: str | None, keywords: Mapping[str, Any], *,
                  overwrite: bool = False, zarr_format: Any = None, storage_options: dict[str, Any] | None = None,
                  exists_hint: str = OVERWRITE_HINT, data: Any = None) -> Array:
    """An array made from ``zarr.create``'s keywords (``shape``, ``chunks`` as zarr-python
    reads them, ``compressor``, ``chunk_shape``, ``dimension_separator``, ``config``, and
    :func:`create_array`'s own; float64 unless ``dtype`` is given, as ``zarr.create``),
    refused and checked as ``open`` checks them; a node at ``path`` is replaced only with
    ``overwrite``. Validated in full before anything is written. ``data`` (of the given
    shape) is written through the new array. ``function`` names the user's call in
    errors, ``exists_hint`` how to replace a node that is there. ``read_only=True`` (as in
    ``zarr.create``) returns the new array opened read-only."""
    keywords = dict(keywords)
    read_only = bool(keywords.pop("read_only", False))
    if keywords.get("dtype") is None:
        keywords["dtype"] = "float64"
    spec, options = split_array_keywords(function, keywords)
    found = resolve(function, store, path=path, mode="a", storage_options=storage_options, read=False)
    plan = plan_array(found.store, found.path, ArraySpec(**spec), zarr_format, options, function)
    array = commit_array(plan, overwrite, exists_hint)
    if data is not None and array.size:
        array[...] = data
    return opened_read_only(array) if read_only else array


def opened_read_only(array: Array) -> Array:
    """``array`` again, through a read-only view of its store."""
    return Array(resolve("zarrdask.open", array, mode="r").store, array.path, array.metadata, array.options)


def _metadata_v3(shape: tuple[int, ...], dtype: Any, chunks: Any, shards: Any, fill_value: Any, compressors: Any,
                 filters: Any, serializer: Any, codecs: Any, dimension_names: Any, attributes: Any,
                 chunk_key_encoding: Any) -> ArrayMetadataV3:
    dt = dtype if isinstance(dtype, DataType) else data_type_from_numpy(dtype)
    itemsize = dt.dtype.itemsize if dt.dtype.kind != "O" else 16
    if _is_extents(shards) or (shards is None and _is_extents(chunks)):
        return _rectilinear_v3(shape, dt, chunks, shards, fill_value, compressors, filters, serializer, codecs,
                               dimension_names, attributes, chunk_key_encoding)
    shard_shape = None if shards is None else _chunks(shards, shape, itemsize, "shards")
    if shard_shape is not None and chunks in (None, "auto"):
        inner = _auto_chunks(shard_shape, itemsize, _AUTO_INNER_BYTES, divide=True)
    else:
        inner = _chunks(chunks, shape, itemsize)
        if shards is True or (isinstance(shards, str) and shards == "auto"):
            shard_shape = _auto_shards(shape, inner, itemsize)
    if shard_shape is not None and any(s % c for s, c in zip(shard_shape, inner)):
        raise ShapeMismatchError(f"shards {shard_shape} must be whole multiples of chunks {inner}")
    chain = _v3_codecs(dt, inner, shard_shape, codecs, compressors, filters, serializer)
    _check_dimension_names(dimension_names, shape)
    return ArrayMetadataV3(
        shape=shape, data_type=dt, chunk_grid=RegularChunkGrid(shard_shape or inner),
        chunk_key_encoding=_key_encoding(chunk_key_encoding, 3), fill_value=dt.cast_fill(fill_value),
        codecs=_named(chain, "codecs"), attributes=_attributes(attributes),
        dimension_names=tuple(dimension_names) if dimension_names is not None else None,
    )


def _is_extents(value: Any) -> bool:
    """Chunks given dask-style: per dimension, the extent of every chunk."""
    return isinstance(value, (tuple, list)) and len(value) > 0 and all(isinstance(v, (tuple, list)) for v in value)


def _rectilinear_v3(shape: tuple[int, ...], dt: DataType, chunks: Any, shards: Any, fill_value: Any,
                    compressors: Any, filters: Any, serializer: Any, codecs: Any, dimension_names: Any,
                    attributes: Any, chunk_key_encoding: Any) -> ArrayMetadataV3:
    """A ``rectilinear`` grid of the given extents: the chunks themselves, or with ``shards``
    given as extents, shards of regular inner ``chunks`` (which must divide every shard)."""
    units = shards if shards is not None else chunks
    extents = tuple(tuple(int(e) for e in axis) for axis in units)
    name = "shards" if shards is not None else "chunks"
    if len(extents) != len(shape) or any(sum(axis) < n or any(e < 1 for e in axis) for axis, n in zip(extents, shape)):
        raise ShapeMismatchError(f"{name} must give {len(shape)} lists of positive extents covering shape {shape}, "
                                 f"got {units!r}")
    inner = None
    if shards is not None:
        inner = _chunks(chunks, shape, 1) if chunks not in (None, "auto") else tuple(min(axis) for axis in extents)
        bad = [(d, e) for d, (axis, c) in enumerate(zip(extents, inner)) for e in axis if e % c]
        if bad:
            raise ShapeMismatchError(f"inner chunks {inner} must divide every shard extent; dimension {bad[0][0]} "
                                     f"has a shard of {bad[0][1]}")
    chain = _v3_codecs(dt, inner or (1,) * len(shape), inner and extents, codecs, compressors, filters, serializer)
    _check_dimension_names(dimension_names, shape)
    return ArrayMetadataV3(
        shape=shape, data_type=dt, chunk_grid=RectilinearChunkGrid.from_extents(extents),
        chunk_key_encoding=_key_encoding(chunk_key_encoding, 3), fill_value=dt.cast_fill(fill_value),
        codecs=_named(chain, "codecs"), attributes=_attributes(attributes),
        dimension_names=tuple(dimension_names) if dimension_names is not None else None,
    )


def _check_dimension_names(names: Any, shape: tuple[int, ...]) -> None:
    if names is None:
        return
    if isinstance(names, str) or not isinstance(names, Sequence) or not all(n is None or isinstance(n, str)
                                                                           for n in names):
        raise MetadataError([Problem(("dimension_names",), f"expected a list of strings or None, got {names!r}")])
    if len(names) != len(shape):
        raise ShapeMismatchError(f"dimension_names needs {len(shape)} entries, got {len(names)}")


def _metadata_v2(shape: tuple[int, ...], dtype: Any, chunks: Any, fill_value: Any, compressors: Any, filters: Any,
                 dimension_names: Any, attributes: Any, chunk_key_encoding: Any, order: Literal["C", "F"]) -> ArrayMetadataV2:
    np_dtype = np.dtype(object) if dtype in (str, bytes, "string") else as_numpy_dtype(dtype, ("dtype",))
    dt = parse_dtype_v2(np_dtype.str if np_dtype.fields is None else [list(f) for f in np_dtype.descr])
    filter_list = [codec_json_v2(f, ("filters", i)) for i, f in enumerate(as_list(filters))]
    if np_dtype.kind == "O" and not filter_list:
        filter_list = [{"id": "vlen-bytes" if dtype is bytes else "vlen-utf8"}]
    compressor_list = [_ZSTD_V2] if compressors == "auto" else [codec_json_v2(c, ("compressors", i)) for i, c in enumerate(as_list(compressors))]
    if len(compressor_list) > 1:
        raise MetadataError("Zarr v2 stores at most one compressor")
    attrs = _attributes(attributes)
    _check_dimension_names(dimension_names, shape)
    if dimension_names is not None:
        attrs["_ARRAY_DIMENSIONS"] = list(dimension_names)
    sep = _key_encoding(chunk_key_encoding, 2).separator
    itemsize = np_dtype.itemsize if np_dtype.kind != "O" else 16
    metadata = ArrayMetadataV2(
        shape=shape, chunk_shape=_chunks(chunks, shape, itemsize), data_type=dt, fill_value=None, order=order,
        compressor=compressor_list[0] if compressor_list else None, filters=tuple(filter_list) or None,
        dimension_separator=sep, attributes=attrs,
    )
    if fill_value is DEFAULT_FILL:  # zarr-python 3's: the data type's zero, an empty item of text or bytes
        return metadata.evolve(fill_value=metadata.chunk_fill)  # (null for an object codec of any objects)
    return metadata if fill_value is None else metadata.evolve(fill_value=metadata.cast_fill(fill_value))  # (v2: null = no fill)


class NewGroup(NamedTuple):
    """A group just written: its normalised path and its metadata."""

    path: str
    metadata: GroupMetadata


def write_group(store: Store, path: str | None, zarr_format: Any, *, overwrite: bool,
                attributes: Mapping[str, Any] | None, allow_reserved_names: bool, exists_hint: str) -> NewGroup:
    """Write a group's metadata (and any missing parents) in an opened store; ``exists_hint``:
    how the caller replaces a node."""
    zarr_format = _zarr_format(zarr_format)
    path = new_node_path(path, zarr_format, allow_reserved_names)
    meta = _new_group(store, zarr_format, attributes or {})
    encode_node(path, meta)
    _prepare(store, path, overwrite, zarr_format, exists_hint)
    write_node(store, path, meta, created=True)
    return NewGroup(path, meta)

