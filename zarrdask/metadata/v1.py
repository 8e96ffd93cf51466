"""Zarr v1 (the 2016 format, zarr 1.x), read only: a ``meta`` and an ``attrs`` document per
array, chunks under ``0.0``-style keys beside them. There are no groups in v1.

A v1 array is a v2 array in all that matters for reading: the same ``dtype`` typestrs,
``order``, fill values and chunk keys, and its four compressors are numcodecs' codecs of
the same names whose ``compression_opts`` become the codec's configuration. One difference:
zarr 1.1.0 stores a chunk's bytes in C order (``ndarray.tobytes()``) with every compressor but
``blosc``, which compresses the chunk's memory in its ``order``; an ``order: "F"`` array of
another compressor is therefore read as ``C`` (measured for every compressor x order by
tests/data/old_formats/make_fixtures.py). Writing is
refused (``zarrdask migrate`` converts the array to Zarr v3.1 in place).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..errors import Problem, ReadOnlyError
from .grid import raise_problems
from .v2 import ArrayMetadataV2

__all__ = ["ArrayMetadataV1", "SOURCE_FORMAT", "V1_DOCUMENTS", "is_v1", "parse_v1", "refuse_write"]

SOURCE_FORMAT = "Zarr v1"
V1_DOCUMENTS = ("meta", "attrs")
_FIELDS = {"zarr_format", "shape", "chunks", "dtype", "compression", "compression_opts", "fill_value", "order"}
_BLOSC_SHUFFLE = (0, 1, 2)


def refuse_write(source_format: str, key: str) -> ReadOnlyError:
    """The error for a write to a node of an old format."""
    return ReadOnlyError(f"{key}: {source_format} is read-only in zarrdask; `zarrdask migrate` (or "
                         "zarrdask.migrate) converts it to Zarr v3.1, which can be written")


@dataclass(frozen=True)
class ArrayMetadataV1(ArrayMetadataV2):
    """A v1 array, read as the v2 array it is equivalent to (``zarr_format`` reads 2;
    ``source_format`` names the format found). Its documents cannot be written."""

    source_format: ClassVar[str | None] = SOURCE_FORMAT
    writable: ClassVar[bool] = False
    dimensions_attribute: ClassVar[bool] = False
    stands_alone: ClassVar[bool] = True

    def to_documents(self) -> dict[str, bytes]:
        raise refuse_write(SOURCE_FORMAT, "meta")


def is_v1(doc: Any) -> bool:
    """Whether a decoded ``meta`` document declares Zarr v1."""
    return isinstance(doc, Mapping) and doc.get("zarr_format") == 1


def _compressor(name: Any, opts: Any, problems: list[Problem]) -> dict[str, Any] | None:
    """The numcodecs configuration of a v1 ``compression`` with its ``compression_opts``."""
    if name in ("none", None):
        return None
    if name in ("zlib", "gzip", "bz2"):  # (zarr 1 stores "gzip" as zlib: one codec, two names)
        if type(opts) is not int:
            problems.append(Problem(("compression_opts",), f"expected an integer level for {name!r}, got {opts!r}"))
            return None
        return {"id": "bz2" if name == "bz2" else "zlib", "level": opts}
    if name == "blosc":
        ok = (isinstance(opts, Mapping) and isinstance(opts.get("cname"), str) and type(opts.get("clevel")) is int
              and opts.get("shuffle") in _BLOSC_SHUFFLE)
        if not ok:
            problems.append(Problem(("compression_opts",), "expected {'cname': str, 'clevel': int, 'shuffle': 0, 1 "
                                                           f"or 2}} for 'blosc', got {opts!r}"))
            return None
        return {"id": "blosc", "cname": opts["cname"], "clevel": opts["clevel"], "shuffle": opts["shuffle"],
                "blocksize": 0}
    if name == "lzma":
        if not (isinstance(opts, Mapping) and set(opts) <= {"format", "check", "preset", "filters"}):
            problems.append(Problem(("compression_opts",), f"expected an object of format, check, preset and "
                                                           f"filters for 'lzma', got {opts!r}"))
            return None
        return {"id": "lzma", "format": opts.get("format", 1), "check": opts.get("check", -1),
                "preset": opts.get("preset"), "filters": opts.get("filters")}
    problems.append(Problem(("compression",), f"unknown v1 compression {name!r} (expected 'none', 'zlib', 'gzip', "
                                              "'bz2', 'lzma' or 'blosc')"))
    return None


def parse_v1(meta: Mapping[str, Any], attrs: Any, key: str) -> ArrayMetadataV1:
    """The array described by a v1 ``meta`` document (``key``) and its ``attrs``."""
    problems: list[Problem] = []
    for name in sorted(_FIELDS - set(meta)):
        problems.append(Problem((name,), f"required field {name!r} is missing"))
    for name in sorted(set(meta) - _FIELDS):
        problems.append(Problem((name,), f"unknown field {name!r} in a Zarr v1 'meta' document"))
    compressor = _compressor(meta.get("compression"), meta.get("compression_opts"), problems)
    raise_problems(problems, key)
    # zarr 1.1.0 stored C-order bytes (ndarray.tobytes()) with every compressor but blosc
    blosc = compressor is not None and compressor["id"] == "blosc"
    order = "C" if meta["order"] == "F" and not blosc else meta["order"]
    doc = {"zarr_format": 2, "shape": meta["shape"], "chunks": meta["chunks"], "dtype": meta["dtype"],
           "compressor": compressor, "fill_value": meta["fill_value"], "order": order, "filters": None}
    v2 = ArrayMetadataV2.from_json(doc, attrs, key=key)
    return ArrayMetadataV1(**{f.name: getattr(v2, f.name) for f in fields(v2)})
