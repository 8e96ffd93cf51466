"""The Zarr v3.0 draft of 2019-2022 (zarr-python 2.11-2.18 with ``ZARR_V3_EXPERIMENTAL_API``,
GDAL 3.4-3.7), read only.

A store declares it in its root ``zarr.json`` (``zarr_format:
"https://purl.org/zarr/spec/protocol/core/3.0"``); a node at ``a/b`` is described by
``meta/root/a/b.array.json`` or ``.group.json`` (a path below which documents exist but
that has none is an implicit group), and an array's chunks lie under
``data/root/a/b/c0/1`` (``c`` then the coordinates joined by the grid's separator).

A draft array is read as the v2 array it is equivalent to: its ``data_type`` is a numpy
typestr (or an extension object holding one), ``chunk_memory_layout`` is v2's ``order``,
its one ``compressor`` is a numcodecs codec named by a URL, and zarr-python kept the
filters in the ``filters`` attribute (hidden from the attributes here, as it is the
encoding). Writing is refused (``zarrdask migrate`` tells how to convert it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..errors import MetadataError, Problem
from .grid import decimal_coords, raise_problems
from .v1 import refuse_write
from .v2 import ArrayMetadataV2
from .v3 import GroupMetadataV3

__all__ = ["ArrayMetadataDraft", "DRAFT_FORMAT", "DraftKeyEncoding", "GroupMetadataDraft",
           "document_key", "is_draft_entry_point", "parse_draft_array", "parse_draft_group"]

DRAFT_FORMAT = "https://purl.org/zarr/spec/protocol/core/3.0"
_CODEC_URL = "https://purl.org/zarr/spec/codec/"
_CODECS = ("gzip", "zlib", "blosc", "bz2", "lz4", "lzma", "zstd")
_ARRAY_FIELDS = {"shape", "chunk_grid", "data_type", "chunk_memory_layout", "fill_value", "attributes",
                 "extensions", "compressor", "dimension_separator"}
SOURCE_FORMAT = "the Zarr v3.0 draft"


def is_draft_entry_point(doc: Any) -> bool:
    """Whether a decoded root ``zarr.json`` is the draft's entry point."""
    return isinstance(doc, Mapping) and doc.get("zarr_format") == DRAFT_FORMAT


def document_key(path: str, kind: str) -> str:
    """The key of the node document at hierarchy ``path`` (``kind``: "array" or "group")."""
    return f"meta/root{'/' + path if path else ''}.{kind}.json"


@dataclass(frozen=True, slots=True)
class DraftKeyEncoding:
    """``c0/1`` (or ``c0.1``): ``c`` followed by the coordinates joined by the separator."""

    separator: str = "/"

    def encode(self, coords: Sequence[int]) -> str:
        return "c" + self.separator.join(map(str, coords))

    def decode(self, key: str, ndim: int) -> tuple[int, ...] | None:
        if key[:1] != "c":
            return None
        if not ndim:
            return () if key == "c" else None
        parts = key[1:].split(self.separator)
        return decimal_coords(parts) if len(parts) == ndim else None

    def to_json(self) -> dict[str, Any]:
        raise refuse_write(SOURCE_FORMAT, "chunk_grid")


@dataclass(frozen=True)
class ArrayMetadataDraft(ArrayMetadataV2):
    """A draft array, read as the equivalent v2 array (``zarr_format`` reads 2;
    ``source_format`` names the format found); chunk keys per :class:`DraftKeyEncoding`
    under :meth:`chunk_prefix`. Its documents cannot be written."""

    source_format: ClassVar[str | None] = SOURCE_FORMAT
    writable: ClassVar[bool] = False

    @property
    def chunk_key_encoding(self) -> DraftKeyEncoding:  # type: ignore[override]
        return DraftKeyEncoding(self.dimension_separator)

    def chunk_prefix(self, path: str) -> str:
        """Where the chunks of the array at ``path`` lie: ``data/root/<path>``."""
        return f"data/root/{path}"

    def to_documents(self) -> dict[str, bytes]:
        raise refuse_write(SOURCE_FORMAT, "meta/root")


@dataclass(frozen=True, slots=True)
class GroupMetadataDraft(GroupMetadataV3):
    """A draft group (explicit or implicit). ``consolidated`` lists every node below it
    (found by listing ``meta/root``), so that members open without the v3 layout's
    ``zarr.json`` per node."""

    source_format: ClassVar[str | None] = SOURCE_FORMAT
    writable: ClassVar[bool] = False

    def to_documents(self) -> dict[str, bytes]:
        raise refuse_write(SOURCE_FORMAT, "meta/root")


def _data_type(value: Any, problems: list[Problem]) -> Any:
    """The numpy typestr (or structured list) of a draft ``data_type``."""
    if isinstance(value, Mapping):  # an extension type: {"extension": url, "type": typestr, "fallback": ...}
        value = value.get("type")
    if value == "bool":
        return "|b1"
    if value in ("u1", "i1"):
        return "|" + value
    if isinstance(value, (str, list)):
        return value
    problems.append(Problem(("data_type",), f"expected a typestr or an extension data type object, got {value!r}"))
    return None


def _compressor(value: Any, problems: list[Problem]) -> dict[str, Any] | None:
    if value is None:
        return None
    codec = value.get("codec") if isinstance(value, Mapping) else None
    name = codec[len(_CODEC_URL):].split("/")[0] if isinstance(codec, str) and codec.startswith(_CODEC_URL) else None
    config = value.get("configuration", {}) if isinstance(value, Mapping) else None
    if name not in _CODECS or not isinstance(config, Mapping):
        problems.append(Problem(("compressor",), f"expected {{'codec': '{_CODEC_URL}<name>/1.0', 'configuration': "
                                                 f"{{...}}}} with a name of {list(_CODECS)}, got {value!r}"))
        return None
    return {"id": name, **config}


def parse_draft_array(doc: Mapping[str, Any], key: str) -> ArrayMetadataDraft:
    """The array described by a draft ``.array.json`` document (``key``)."""
    problems: list[Problem] = []
    for name in ("shape", "chunk_grid", "data_type", "chunk_memory_layout", "fill_value"):
        if name not in doc:
            problems.append(Problem((name,), f"required field {name!r} is missing"))
    for name in sorted(set(doc) - _ARRAY_FIELDS):
        problems.append(Problem((name,), f"field {name!r} is not read by zarrdask (storage transformers and other "
                                         "draft extensions are not supported)"))
    if doc.get("extensions"):
        problems.append(Problem(("extensions",), f"draft extensions are not supported, got {doc['extensions']!r}"))
    grid = doc.get("chunk_grid")
    if not (isinstance(grid, Mapping) and grid.get("type") == "regular" and grid.get("separator") in ("/", ".")):
        problems.append(Problem(("chunk_grid",), "expected {'type': 'regular', 'chunk_shape': [...], 'separator': "
                                                 f"'/' or '.'}}, got {grid!r}"))
        grid = {}
    dtype = _data_type(doc.get("data_type"), problems)
    compressor = _compressor(doc.get("compressor"), problems)
    attrs = doc.get("attributes", {})
    if not isinstance(attrs, Mapping):
        problems.append(Problem(("attributes",), f"expected an object, got {attrs!r}"))
        attrs = {}
    filters = attrs.get("filters")
    if filters is not None and not (isinstance(filters, list) and all(isinstance(f, Mapping) for f in filters)):
        problems.append(Problem(("attributes", "filters"), f"expected a list of numcodecs configurations (the "
                                                           f"draft array's filters), got {filters!r}"))
    raise_problems(problems, key)
    v2doc = {"zarr_format": 2, "shape": doc["shape"], "chunks": grid.get("chunk_shape"), "dtype": dtype,
             "compressor": compressor, "fill_value": doc["fill_value"], "order": doc["chunk_memory_layout"],
             "filters": filters or None, "dimension_separator": grid["separator"]}
    user_attrs = {k: v for k, v in attrs.items() if k != "filters"}
    try:
        v2 = ArrayMetadataV2.from_json(v2doc, user_attrs, key=key)
    except MetadataError as exc:
        names = {"chunks": "chunk_grid", "dtype": "data_type", "order": "chunk_memory_layout",
                 "dimension_separator": "chunk_grid"}
        raise type(exc)([Problem((names.get(str(p.loc[0]), p.loc[0]), *p.loc[1:]) if p.loc else (), p.message)
                         for p in exc.problems], key=key) from None
    return ArrayMetadataDraft(**{f.name: getattr(v2, f.name) for f in fields(v2)})


def parse_draft_group(doc: Mapping[str, Any] | None, members: Mapping[str, Any], key: str) -> GroupMetadataDraft:
    """A draft group from its ``.group.json`` (None: an implicit group) and the parsed
    metadata of every node below it, by relative path."""
    attrs = (doc or {}).get("attributes", {})
    if not isinstance(attrs, Mapping):
        raise MetadataError([Problem(("attributes",), f"expected an object, got {attrs!r}")], key=key)
    return GroupMetadataDraft(attributes=dict(attrs), consolidated=dict(members))
