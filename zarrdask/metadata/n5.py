"""N5 containers (n5-java, z5, pyn5, zarr-python 2's N5Store, TensorStore's ``n5`` driver)
as plain v3 metadata, both ways.

A node's document is its ``attributes.json``. A dataset's holds ``dimensions``,
``blockSize``, ``dataType`` and ``compression`` (or the older ``compressionType``),
listed fastest-varying first; the array here has them reversed (C order, as N5 readers
in C-order languages show them), with ``dimension_names`` from N5's ``axes``, reversed
too. Its chunks are N5's blocks: the key of chunk ``(i, j, k)`` is N5's path ``k/j/i``
(:class:`N5KeyEncoding`), and the codecs are ``transpose`` back to N5's axis order then
the registry's ``n5_default`` (the block header, the data big endian in N5's order, the
compressor). Any other directory of a container is a group; ``attributes.json`` other
than ``n5`` (the container's version) are its attributes. An array N5 can hold (an N5
data type, a regular grid, ``bytes`` and at most one compressor N5 names, fill value 0:
N5 has none) is written as N5 (:func:`n5_attributes`); groups are written with the
version, as the container's root needs it. :func:`plain_v3_document` is a dataset as plain
Zarr v3 stores it (what ``migrate`` and ``copy`` write from N5).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..errors import MetadataError, Problem
from .grid import RegularChunkGrid, decimal_coords
from .v3 import ArrayMetadataV3, GroupMetadataV3

__all__ = ["ArrayMetadataN5", "GroupMetadataN5", "N5KeyEncoding", "N5_DOCUMENT", "as_n5_array", "is_n5_container",
           "is_n5_path", "n5_attributes", "parse_n5", "plain_v3_document"]

N5_DOCUMENT = "attributes.json"
SOURCE_FORMAT = "N5"
N5_VERSION = "4.0.0"
_DATASET_KEYS = ("dimensions", "blockSize", "dataType")
_HIDDEN = {"dimensions", "blockSize", "dataType", "compression", "compressionType", "axes"}
_TYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64")
_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def is_n5_container(root_doc: Any, url: str) -> bool:
    """Whether a store is an N5 container: its root ``attributes.json`` names the N5
    version (``"n5"``) or describes a dataset, or its location ends in ``.n5``."""
    return (isinstance(root_doc, Mapping) and ("n5" in root_doc or _is_dataset(root_doc))) or is_n5_path(url)


def is_n5_path(url: str) -> bool:
    """Whether a store's location names an N5 container (ends in ``.n5``): nodes created
    in it are N5's."""
    return url.rstrip("/").endswith(".n5")


def _is_dataset(doc: Mapping[str, Any]) -> bool:
    return all(k in doc for k in _DATASET_KEYS) and ("compression" in doc or "compressionType" in doc)


@dataclass(frozen=True, slots=True)
class N5KeyEncoding:
    """N5's block paths: the chunk coordinates reversed (N5's axis order), joined by ``/``."""

    def encode(self, coords: Sequence[int]) -> str:
        return "/".join(map(str, reversed(coords))) if len(coords) else "0"

    def decode(self, key: str, ndim: int) -> tuple[int, ...] | None:
        if not ndim:
            return () if key == "0" else None
        parts = key.split("/")
        coords = decimal_coords(parts) if len(parts) == ndim else None
        return None if coords is None else coords[::-1]

    def to_json(self) -> dict[str, Any]:
        """A description for caches and displays (no registered encoding: never written)."""
        return {"name": "n5"}


@dataclass(frozen=True, slots=True)
class ArrayMetadataN5(ArrayMetadataV3):
    """An N5 dataset as v3 array metadata (``source_format`` names the format found)."""

    source_format: ClassVar[str | None] = SOURCE_FORMAT
    writable: ClassVar[bool] = True
    stands_alone: ClassVar[bool] = True

    def to_documents(self) -> dict[str, bytes]:
        return {N5_DOCUMENT: _dumps(n5_attributes(self, N5_DOCUMENT))}


@dataclass(frozen=True, slots=True)
class GroupMetadataN5(GroupMetadataV3):
    """An N5 group (a directory of a container, with or without ``attributes.json``)."""

    source_format: ClassVar[str | None] = SOURCE_FORMAT
    writable: ClassVar[bool] = True

    def to_documents(self) -> dict[str, bytes]:
        return {N5_DOCUMENT: _dumps({"n5": N5_VERSION, **self.attributes})}


def _dumps(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")


def parse_n5(doc: Mapping[str, Any] | None, key: str) -> ArrayMetadataN5 | GroupMetadataN5:
    """The node an ``attributes.json`` (``key``; None: a directory without one) describes."""
    doc = doc or {}
    if not isinstance(doc, Mapping):
        raise MetadataError([Problem((), f"expected a JSON object, got {doc!r}")], key=key)
    if not _is_dataset(doc):
        return GroupMetadataN5(attributes={k: v for k, v in doc.items() if k != "n5"})
    return _parse_dataset(doc, key)


def as_n5_array(meta: ArrayMetadataV3, key: str) -> ArrayMetadataN5:
    """A new array as N5 holds it (a MetadataError names what N5 cannot hold)."""
    return _parse_dataset(n5_attributes(meta, key), key)


def _parse_dataset(doc: Mapping[str, Any], key: str) -> ArrayMetadataN5:
    problems: list[Problem] = []
    shape, chunks, dtype = doc["dimensions"], doc["blockSize"], doc["dataType"]
    if not (isinstance(shape, list) and isinstance(chunks, list) and len(shape) == len(chunks)):
        problems.append(Problem(("blockSize",), f"expected one block size per dimension {shape!r}, got {chunks!r}"))
        chunks = [1] * len(shape) if isinstance(shape, list) else []
    if dtype not in _TYPES:
        problems.append(Problem(("dataType",), f"expected one of {', '.join(_TYPES)}, got {dtype!r}"))
    axes = doc.get("axes")
    if axes is not None and not (isinstance(axes, list) and isinstance(shape, list) and len(axes) == len(shape)):
        problems.append(Problem(("axes",), f"expected one name per dimension {shape!r}, got {axes!r}"))
        axes = None
    compressor = _compressor(doc, dtype, problems)
    if problems:
        raise MetadataError(problems, key=key)
    ndim = len(shape)
    n5_order = list(reversed(range(ndim)))
    inner = [{"name": "transpose", "configuration": {"order": n5_order}},
             {"name": "bytes", "configuration": {"endian": "big"}}] + ([compressor] if compressor else [])
    v3 = ArrayMetadataV3.from_json({
        "zarr_format": 3, "node_type": "array", "shape": shape[::-1], "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks[::-1]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "transpose", "configuration": {"order": n5_order}},
                   {"name": "n5_default", "configuration": {"codecs": inner}}],
        "attributes": {k: v for k, v in doc.items() if k not in _HIDDEN},
        **({"dimension_names": axes[::-1]} if axes is not None else {}),
    }, key)
    values = {f.name: getattr(v3, f.name) for f in fields(v3)}
    return ArrayMetadataN5(**{**values, "chunk_key_encoding": N5KeyEncoding()})


def plain_v3_document(meta: ArrayMetadataN5) -> dict[str, Any]:
    """The ``zarr.json`` of an N5 dataset stored as plain Zarr v3: its shape, data type,
    chunks, attributes and dimension names as read (C order), N5's compressor after a
    little-endian ``bytes`` codec, the ``default`` chunk keys. Its blocks have to be
    re-encoded into it: N5's header, big-endian data in N5's axis order, short edge blocks
    and reversed block paths have no form that other Zarr v3 readers take."""
    doc = meta.to_json()
    compressors = list(doc["codecs"][-1]["configuration"]["codecs"])[2:]  # (after transpose and bytes)
    doc["codecs"] = [{"name": "bytes", "configuration": {"endian": "little"}}, *compressors]
    doc["chunk_key_encoding"] = {"name": "default", "configuration": {"separator": "/"}}
    return doc


def _compressor(doc: Mapping[str, Any], dtype: Any, problems: list[Problem]) -> dict[str, Any] | None:
    """The v3 bytes->bytes codec of an N5 ``compression`` (None: raw)."""
    c = doc.get("compression", {"type": doc.get("compressionType")})
    kind = c.get("type") if isinstance(c, Mapping) else None
    level = c.get("level", -1) if isinstance(c, Mapping) else -1
    level = 6 if level == -1 else level  # (-1: the library's default, zlib's 6; only writing uses it)
    if kind == "raw":
        return None
    if kind == "gzip":
        name = "numcodecs.zlib" if c.get("useZlib") else "gzip"
        return {"name": name, "configuration": {"level": level}}
    if kind == "bzip2":
        return {"name": "numcodecs.bz2", "configuration": {"level": c.get("blockSize", 9)}}
    if kind == "xz":
        return {"name": "numcodecs.lzma", "configuration": {"preset": c.get("preset", 6)}}
    if kind == "zstd":
        return {"name": "zstd", "configuration": {"level": c.get("level", 0), "checksum": False}}
    if kind == "blosc" and c.get("shuffle", 1) in _SHUFFLES:
        size = int(str(dtype)[-2:]) // 8 if str(dtype)[-2:].isdigit() else 1
        return {"name": "blosc", "configuration": {
            "cname": c.get("cname", "blosclz"), "clevel": c.get("clevel", 6), "shuffle": _SHUFFLES[c.get("shuffle", 1)],
            "typesize": size, "blocksize": c.get("blocksize", 0)}}
    where = "compression" if "compression" in doc else "compressionType"
    if kind == "lz4":
        problems.append(Problem((where,), "N5's lz4 compression (the block framing of Java's lz4 library) has no "
                                          "decoder in zarrdask; rewrite the dataset with gzip, zstd or blosc "
                                          "(n5-java, z5py or TensorStore can)"))
    else:
        problems.append(Problem((where,), f"expected an N5 compression of type raw, gzip, bzip2, xz, blosc or zstd, "
                                          f"got {c!r}"))
    return None


def n5_attributes(meta: ArrayMetadataV3, key: str) -> dict[str, Any]:
    """The ``attributes.json`` of an array (N5's own, or a plain v3 array of ``bytes`` and at
    most one compressor); a MetadataError names what N5 cannot hold."""
    problems: list[Problem] = []
    if meta.data_type.name not in _TYPES:
        problems.append(Problem(("data_type",), f"N5 has no data type {meta.data_type.name!r}; it has "
                                                f"{', '.join(_TYPES)}"))
    if not isinstance(meta.chunk_grid, RegularChunkGrid) or not meta.shape:
        problems.append(Problem(("chunk_grid",), "N5 datasets have a regular grid of at least one dimension"))
    if meta.fill_value != 0:
        problems.append(Problem(("fill_value",), f"N5 has no fill value (its readers fill missing blocks with 0), "
                                                 f"got {meta.fill_value}: use fill_value=0"))
    clash = sorted((set(meta.attributes) & _HIDDEN) | ({"n5"} & set(meta.attributes)))
    if clash:
        problems.append(Problem(("attributes",), f"N5 keeps its metadata among the attributes: rename {clash}"))
    for name, kind in (("units", str), ("resolution", (int, float))):  # (N5 viewers' and TensorStore's)
        value = meta.attributes.get(name)
        if value is not None and not (isinstance(value, list) and len(value) == len(meta.shape)
                                      and all(isinstance(v, kind) for v in value)):
            problems.append(Problem(("attributes", name), f"N5 readers take {name!r} as one entry per dimension "
                                                          f"(in N5's order, fastest first), got {value!r}"))
    names = [c.name for c in meta.codecs]
    if names[-1:] == ["n5_default"]:
        inner = list(meta.codecs[-1].configuration["codecs"])[2:]
        compressors = [(c, {}) if isinstance(c, str) else (c["name"], c.get("configuration", {})) for c in inner]
    elif names[:1] == ["bytes"]:
        compressors = [(c.name, dict(c.configuration)) for c in meta.codecs[1:]]
    else:
        problems.append(Problem(("codecs",), f"N5 blocks are 'bytes' then at most one compressor, got {names}: "
                                             "no filters, serializer or shards"))
        compressors = []
    compression = _n5_compression(compressors, problems)
    if problems:
        raise MetadataError(problems, key=key)
    names_given = meta.dimension_names
    axes = {"axes": list(names_given)[::-1]} if names_given and all(isinstance(n, str) for n in names_given) else {}
    return {**meta.attributes, "dimensions": list(meta.shape)[::-1], "blockSize": list(meta.chunk_shape)[::-1],
            "dataType": meta.data_type.name, "compression": compression, **axes}


def _n5_compression(compressors: list[tuple[str, Mapping[str, Any]]], problems: list[Problem]) -> dict[str, Any]:
    """N5's ``compression`` for a v3 compressor (``_compressor``'s inverse)."""
    if not compressors:
        return {"type": "raw"}
    (name, c), *more = compressors
    if more or name not in ("gzip", "numcodecs.zlib", "zstd", "blosc", "numcodecs.bz2", "numcodecs.lzma") or \
            (name == "numcodecs.lzma" and (c.get("format", 1) != 1 or c.get("filters"))):
        problems.append(Problem(("codecs",), f"N5 holds one compressor of gzip, numcodecs.zlib, zstd, blosc, "
                                             f"numcodecs.bz2 or numcodecs.lzma (xz format), got "
                                             f"{[n for n, _ in compressors]}"))
        return {"type": "raw"}
    if name in ("gzip", "numcodecs.zlib"):
        return {"type": "gzip", "level": c.get("level", 6), "useZlib": name == "numcodecs.zlib"}
    if name == "zstd":
        return {"type": "zstd", "level": c.get("level", 0)}
    if name == "numcodecs.bz2":
        return {"type": "bzip2", "blockSize": c.get("level", 9)}
    if name == "numcodecs.lzma":
        return {"type": "xz", "preset": c.get("preset") if c.get("preset") is not None else 6}
    shuffle = {v: k for k, v in _SHUFFLES.items()}[c.get("shuffle") or "noshuffle"]
    return {"type": "blosc", "cname": c.get("cname", "zstd"), "clevel": c.get("clevel", 5), "shuffle": shuffle,
            "blocksize": c.get("blocksize", 0)}
