"""The metadata ``copy`` gives one array: the source's own, changed only where asked.

A v3 target keeps the source's ``zarr.json`` (codec chain with levels and checksums,
sharding index codecs and location, chunk key encoding, fill value, dimension names,
attributes, extra fields) and replaces only the chunk grid and the codecs that the
``chunks``, ``shards`` and ``compressors`` options change. A v2 source becomes v3 the way
:func:`zarrdask.migrate` converts it (same chunk bytes under the same keys), an N5 dataset
becomes plain v3 (:func:`~zarrdask.metadata.n5.plain_v3_document`: every block
rewritten); a v3 source
becomes v2 where its chain has a v2 form (``transpose`` -> ``order: F``, numcodecs
filters, the ``bytes`` endianness -> the dtype's byte order, one compressor), else the
error says what cannot be kept and what to pass. Sharded arrays become v2 only when
``chunks`` is given (each inner chunk becomes one file).

Shards and chunks: shards must be multiples of the chunks. Chunks given without shards
on a sharded source keep its shards when they divide them, else the error says which
shards to pass (or ``shards=None`` for none); shards given without chunks keep the
source's chunks (inner chunks when sharded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..codecs.registry import get_codec_class
from ..nodes.array import Array
from ..nodes.codec_input import codec_json_v2, codec_json_v3
from ..nodes.create import INDEX_CODECS
from ..metadata.dtypes import fill_to_json_v2, parse_dtype_v2
from ..errors import InvalidModeError, MetadataError, Problem, ShapeMismatchError
from ..metadata.n5 import ArrayMetadataN5, plain_v3_document
from ..metadata.v2 import OBJECT_CODEC_ITEMS, ArrayMetadataV2
from ..metadata.v3 import parse_v3
from ..storage.base import join_path
from .copy_shapes import KEEP, check_multiples, fit_shards, resolve
from .migrate_v2 import array_document

__all__ = ["Options", "target_metadata", "same_bytes"]


@dataclass(frozen=True)
class Options:
    """What the user asked to change (``KEEP``: the source's)."""

    chunks: Any = KEEP
    shards: Any = KEEP
    compressors: Any = KEEP
    zarr_format: int | None = None
    single: bool = True  # the copy is one array: a spec that does not fit it is an error


def _name(codec: Any) -> str:
    return codec if isinstance(codec, str) else codec["name"]


def _kind(codec: Any) -> str:
    cls = get_codec_class(_name(codec))
    if cls is None:
        raise MetadataError(f"codec {_name(codec)!r} is not available in this installation")
    return cls.kind


class ChainParts(NamedTuple):
    """A v3 codec chain cut by kind: array->array codecs, [the array->bytes codec], bytes->bytes codecs."""

    array_array: list[Any]
    array_bytes: list[Any]
    bytes_bytes: list[Any]


class Shapes(NamedTuple):
    """A target's chunk shape and shard shape (None: unsharded, or irregular chunks)."""

    chunks: tuple[int, ...] | None
    shards: tuple[int, ...] | None


class Layout(NamedTuple):
    """What decides whether stored units can be copied byte for byte."""

    chunk_grid: Any
    codecs: Any
    chunk_key_encoding: Any
    data_type: Any
    fill_value: Any


def _split(chain: list[Any]) -> ChainParts:
    """A chain as (array->array codecs, [the array->bytes codec], bytes->bytes codecs)."""
    kinds = [_kind(c) for c in chain]
    i = kinds.index("array->bytes")
    return ChainParts(chain[:i], chain[i:i + 1], chain[i + 1:])


def _compressor(codec: Any, i: int) -> dict[str, Any]:
    """A user's compressor (name, v3 or numcodecs JSON, codec object) as its full v3 JSON."""
    j = codec_json_v3(codec, ("compressors", i))
    name = _name(j)
    built = get_codec_class(name).from_config(j.get("configuration") or {}, ("compressors", i))
    if built.kind != "bytes->bytes":
        raise MetadataError([Problem(("compressors", i), f"{name!r} is an {built.kind} codec, not a compressor "
                                                         "(bytes->bytes, e.g. 'zstd', 'blosc', 'gzip', 'crc32c')")])
    return built.to_json()


def _compressors(value: Any) -> list[Any]:
    if value is None:
        return []
    return [_compressor(c, i) for i, c in enumerate(value if isinstance(value, (list, tuple)) else [value])]


def _text(sizes: Any) -> str:
    return ",".join(str(s) for s in sizes)


def _shapes(path: str, array: Array, options: Options, cur_chunks: tuple[int, ...] | None,
            cur_shards: tuple[int, ...] | None) -> Shapes:
    """The target's (chunks, shards) from the options and the source's."""
    shape, names, single = array.shape, array.dimension_names, options.single
    chunks = cur_chunks
    if options.chunks not in (KEEP, None):
        given = resolve("chunks", options.chunks, path, shape, names, cur_chunks, single=single)
        if given is not None:
            chunks = tuple(max(n, 1) if s == -1 else s for s, n in zip(given, shape))
    if options.shards is None:
        return Shapes(chunks, None)
    if options.shards == KEEP:
        if cur_shards is not None and chunks != cur_chunks and any(s % c for s, c in zip(cur_shards, chunks)):
            below = tuple(max(c, s // c * c) for s, c in zip(cur_shards, chunks))
            above = tuple(-(-s // c) * c for s, c in zip(cur_shards, chunks))
            raise ShapeMismatchError(
                f"array {path!r}: chunks {_text(chunks)} do not divide its shards {_text(cur_shards)}: pass shards "
                f"too ({_text(below)} or {_text(above)}), or shards=None (--shards none) for no sharding")
        return Shapes(chunks, cur_shards)
    base = cur_shards if cur_shards is not None else chunks
    given = resolve("shards", options.shards, path, shape, names, base, single=single)
    if given is None:
        return Shapes(chunks, cur_shards)
    if chunks is None:
        raise ShapeMismatchError(f"array {path!r} has irregular chunks: pass chunks with shards")
    shards = fit_shards(given, chunks, shape)
    check_multiples(path, shards, chunks, "" if options.chunks not in (KEEP, None) else " (the source's)")
    return Shapes(chunks, shards)


def _v3_document(path: str, array: Array, doc: dict[str, Any], options: Options) -> dict[str, Any]:
    """The source's v3 document with the chunk grid and codecs the options change."""
    if (options.chunks, options.shards, options.compressors) == (KEEP, KEEP, KEEP):
        return doc
    codecs = list(doc["codecs"])
    grid = doc["chunk_grid"]
    regular = grid["name"] == "regular"
    outer = tuple(grid["configuration"]["chunk_shape"]) if regular else None
    at = next((i for i, c in enumerate(codecs) if _name(c) == "sharding_indexed"), None)
    if at is None:
        before, sharding, after, inner = [], None, [], codecs
        cur_chunks, cur_shards = outer, None
    else:
        before, sharding, after = codecs[:at], codecs[at], codecs[at + 1:]
        inner = list(sharding["configuration"]["codecs"])
        cur_chunks, cur_shards = tuple(sharding["configuration"]["chunk_shape"]), outer
    chunks, shards = _shapes(path, array, options, cur_chunks, cur_shards)
    if options.compressors != KEEP:
        aa, ab, _ = _split(inner)
        inner = aa + ab + _compressors(options.compressors)
    if shards is not None:
        config = dict(sharding["configuration"]) if sharding is not None else {
            "index_codecs": INDEX_CODECS, "index_location": "end"}
        config.update(chunk_shape=list(chunks), codecs=inner)
        chain = before + [{"name": "sharding_indexed", "configuration": config}] + after
        unit = shards
    else:
        chain, unit = before + inner + after, chunks
    new = dict(doc, codecs=chain)
    if unit != outer and unit is not None:
        new["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": list(unit)}}
    return new


def _v2_from_v2(path: str, array: Array, options: Options) -> ArrayMetadataV2:
    meta = array.metadata
    if options.shards not in (KEEP, None):
        raise ShapeMismatchError(f"array {path!r}: Zarr v2 has no shards; pass zarr_format=3 (--zarr-format 3)")
    chunks, _ = _shapes(path, array, Options(options.chunks, None, KEEP, 2, single=options.single), meta.chunk_shape, None)
    compressor = meta.compressor
    if options.compressors != KEEP:
        given = [codec_json_v2(c, ("compressors", i)) for i, c in enumerate(_compressors(options.compressors))]
        if len(given) > 1:
            raise InvalidModeError(f"array {path!r}: Zarr v2 keeps one compressor, got {len(given)}; pass one")
        compressor = given[0] if given else None
    return meta.evolve(chunk_shape=chunks, compressor=compressor).as_plain()


def _v2_from_v3(path: str, array: Array, options: Options) -> ArrayMetadataV2:
    """A v3 array's v2 metadata, where every part of its chain has a v2 form."""
    if options.shards not in (KEEP, None):
        raise ShapeMismatchError(f"array {path!r}: Zarr v2 has no shards; pass zarr_format=3 (--zarr-format 3)")
    doc = _source_document(array, "")
    codecs = list(doc["codecs"])
    at = next((i for i, c in enumerate(codecs) if _name(c) == "sharding_indexed"), None)
    if at is not None:
        inner_shape = codecs[at]["configuration"]["chunk_shape"]
        if options.chunks in (KEEP, None):
            raise ShapeMismatchError(
                f"array {path!r}: Zarr v2 has no shards and this array is sharded (shards "
                f"{_text(array.shards)}, chunks {_text(inner_shape)}); pass chunks (e.g. {_text(inner_shape)}: one "
                f"file per chunk) to copy it to v2")
        if codecs[at + 1:]:
            raise InvalidModeError(f"array {path!r}: codecs after sharding ({[_name(c) for c in codecs[at + 1:]]}) "
                                "have no Zarr v2 form")
        codecs = codecs[:at] + list(codecs[at]["configuration"]["codecs"])
    cur = tuple(doc["chunk_grid"]["configuration"]["chunk_shape"]) if doc["chunk_grid"]["name"] == "regular" else None
    chunks, _ = _shapes(path, array, Options(options.chunks, None, KEEP, 2, single=options.single),
                        cur if at is None else tuple(inner_shape), None)
    if chunks is None:
        raise ShapeMismatchError(f"array {path!r} has irregular chunks, which Zarr v2 cannot hold: pass chunks")
    aa, ab, bb = _split(codecs)
    order, filters = "C", []
    for c in aa:
        name, config = _name(c), ({} if isinstance(c, str) else dict(c.get("configuration") or {}))
        if name == "transpose" and config.get("order") == list(reversed(range(array.ndim))):
            order = "F"
        elif name.startswith("numcodecs."):
            filters.append({"id": name.removeprefix("numcodecs."), **config})
        else:
            raise InvalidModeError(f"array {path!r}: codec {name!r} ({config}) has no Zarr v2 form; copy it as Zarr v3")
    serializer = ab[0]
    if _name(serializer) in ("vlen-utf8", "vlen-bytes"):
        filters.insert(0, {"id": _name(serializer)})
        dtype_json: Any = "|O"
    elif _name(serializer) == "bytes":
        endian = (serializer.get("configuration") or {}).get("endian", "little") if isinstance(serializer, dict) \
            else "little"
        dtype_json = _v2_dtype(path, array, endian)
    else:
        raise InvalidModeError(f"array {path!r}: serializer {_name(serializer)!r} has no Zarr v2 form")
    if options.compressors != KEEP:
        bb = _compressors(options.compressors)
    if len(bb) > 1:
        raise InvalidModeError(f"array {path!r}: Zarr v2 keeps one compressor, the chain has {[_name(c) for c in bb]}; "
                            "pass compressors (--codecs) with one, e.g. 'zstd'")
    attrs = {k: v for k, v in array.attrs.items() if k != "_ARRAY_DIMENSIONS"}
    fill = array.fill_value
    names = array.dimension_names
    if names is not None:
        if any(n is None for n in names):
            raise InvalidModeError(f"array {path!r}: dimension names {list(names)} include null, which Zarr v2's "
                                "_ARRAY_DIMENSIONS cannot hold")
        fill = _xarray_fill_v2(array, attrs)
        attrs["_ARRAY_DIMENSIONS"] = list(names)
    data_type = parse_dtype_v2(dtype_json)
    if data_type.family == "object" and not isinstance(fill, (str, bytes)):
        fill = None
    encoding = doc["chunk_key_encoding"]
    separator = (encoding.get("configuration") or {}).get("separator", "/" if encoding["name"] == "default" else ".")
    zarray = {"zarr_format": 2, "shape": list(array.shape), "chunks": list(chunks), "dtype": dtype_json,
              "compressor": codec_json_v2(bb[0], ("codecs",)) if bb else None,
              "fill_value": fill_to_json_v2(data_type, fill, OBJECT_CODEC_ITEMS.get(_name(serializer), "object")),
              "order": order, "filters": filters or None, "dimension_separator": separator}
    return ArrayMetadataV2.from_json(zarray, attrs, key=join_path(path, ".zarray"))


def _v2_dtype(path: str, array: Array, endian: str) -> str:
    """The v2 ``dtype`` of a v3 array stored with ``endian`` (InvalidModeError when v2 has none)."""
    refusal = InvalidModeError(f"array {path!r}: data type {array.metadata.data_type.to_json()!r} has no Zarr v2 "
                               "form; copy it as Zarr v3")
    if array.dtype.fields is not None:
        raise refusal
    try:
        text = array.dtype.newbyteorder(">" if endian == "big" else "<").str
        same = parse_dtype_v2(text).dtype.newbyteorder("<") == array.dtype.newbyteorder("<")
    except (ValueError, TypeError):
        raise refusal from None
    if not same:  # (bfloat16 and the like would come back as raw bytes)
        raise refusal
    return text


def _xarray_fill_v2(array: Array, attrs: dict[str, Any]) -> Any:
    """The fill value xarray masks with: v3 keeps it as the ``_FillValue`` attribute, v2 as ``fill_value``
    (a v3 fill value without the attribute is kept unless it is zero, which v2's null gives alike)."""
    from ..xarray_backend.encoding import decode_fill_value_attr

    fill = attrs.pop("_FillValue", None)
    if fill is not None:
        return decode_fill_value_attr(fill, array)
    return None if _is_zero(array.fill_value, array.dtype) else array.fill_value


def _is_zero(value: Any, dtype: np.dtype) -> bool:
    """Whether ``value`` is the type's zero: stored as v2's null fill value then, which
    readers fill with the same zero and xarray does not mask with (no ``_FillValue``)."""
    if dtype.kind == "O":
        return False
    try:
        return np.asarray(value, dtype=dtype).tobytes() == np.zeros((), dtype=dtype).tobytes()
    except (TypeError, ValueError):
        return False


def target_metadata(path: str, array: Array, options: Options) -> Any:
    """The metadata of ``array``'s copy (validated: its codec chain builds for its chunks)."""
    fmt = options.zarr_format or array.zarr_format
    if fmt not in (2, 3):
        raise InvalidModeError(f"zarr_format={fmt!r}: expected 2 or 3")
    if fmt == 2:
        return _v2_from_v2(path, array, options) if array.zarr_format == 2 else _v2_from_v3(path, array, options)
    key = join_path(path, "zarr.json")
    return parse_v3(_v3_document(path, array, _source_document(array, key), options), key=key)


def _source_document(array: Array, key: str) -> dict[str, Any]:
    """The source's v3 document, which the copy's starts from: a v2 array's as ``migrate``
    converts it, an N5 dataset's as plain v3 stores it, any other its own."""
    if array.zarr_format == 2:
        return array_document(array.metadata, key)
    if isinstance(array.metadata, ArrayMetadataN5):
        return plain_v3_document(array.metadata)
    return array.metadata.to_json()


def same_bytes(source: Array, target: Any) -> bool:
    """Whether the target stores every chunk as the source does, under the same key
    relative to the array (so stored units are copied byte for byte)."""
    if target.zarr_format == 2:
        return source.zarr_format == 2 and target.to_json() == source.metadata.to_json()
    if source.zarr_format == 3:  # (never for N5, whose block paths no target has)
        return _layout(target.to_json()) == _layout(source.metadata.to_json())
    return _layout(target.to_json()) == _layout(array_document(source.metadata, ""))


def _layout(doc: dict[str, Any]) -> Layout:
    return Layout(doc["chunk_grid"], doc["codecs"], doc["chunk_key_encoding"], doc["data_type"], doc["fill_value"])
