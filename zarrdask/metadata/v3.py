"""Zarr v3 ``zarr.json`` for arrays and groups, validated with every problem's JSON path."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar, Literal

import numpy as np

from .dtypes import DataType, parse_data_type_v3
from ..errors import MetadataError, Problem
from .grid import (ChunkGrid, ChunkKeyEncoding, RegularChunkGrid, check_shape, parse_chunk_grid,
                   parse_chunk_key_encoding, raise_problems)
from ..keywords import did_you_mean
from .extension import NamedConfig, parse_named_config

__all__ = ["ArrayMetadataV3", "GroupMetadataV3", "NODE_DOCUMENT", "parse_json_document", "parse_v3", "round_fill_json"]

#: a node's metadata document, and so a name no node may take (core spec 3.1, zarr-specs #375)
NODE_DOCUMENT = "zarr.json"

_ARRAY_FIELDS = {
    "zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value",
    "codecs", "attributes", "dimension_names", "storage_transformers",
}
_GROUP_FIELDS = {"zarr_format", "node_type", "attributes", "consolidated_metadata"}


def parse_json_document(raw: bytes, key: str) -> dict[str, Any]:
    """Decode a metadata document; anything but a JSON object is a MetadataError naming ``key``."""
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetadataError(f"not valid JSON: {exc}", key=key) from None
    if not isinstance(doc, dict):
        raise MetadataError(f"expected a JSON object, got {type(doc).__name__}", key=key)
    return doc


def _extra_fields(doc: Mapping[str, Any], known: set[str], problems: list[Problem]) -> dict[str, Any]:
    """Unknown top-level fields: kept when ``must_understand: false``, otherwise a problem."""
    extra: dict[str, Any] = {}
    if doc.keys() <= known:
        return extra
    for name in sorted(set(doc) - known):
        value = doc[name]
        if isinstance(value, Mapping) and value.get("must_understand") is False:
            extra[name] = value
        else:
            problems.append(
                Problem((name,), f'unknown field {name!r}{did_you_mean(name, known)} without "must_understand": '
                                 f"false; refusing to open", unknown_extension=True)
            )
    return extra


def _dumps(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=True).encode("utf-8")


@dataclass(frozen=True, slots=True)
class ArrayMetadataV3:
    """A v3 array's ``zarr.json``. ``fill_value`` is the parsed scalar of ``data_type``."""

    shape: tuple[int, ...]
    data_type: DataType
    chunk_grid: ChunkGrid
    chunk_key_encoding: ChunkKeyEncoding
    fill_value: Any
    codecs: tuple[NamedConfig, ...]
    attributes: Mapping[str, Any] = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    storage_transformers: tuple[NamedConfig, ...] = ()
    extra_fields: Mapping[str, Any] = field(default_factory=dict)

    zarr_format: ClassVar[Literal[3]] = 3
    node_type: ClassVar[Literal["array"]] = "array"
    #: whether the axes are named by xarray's ``_ARRAY_DIMENSIONS`` attribute, which
    #: xarray then requires (v3 has ``dimension_names``; Zarr v1 predates the convention)
    dimensions_attribute: ClassVar[bool] = False
    #: whether the format keeps an array alone, with no group around it (Zarr v1, an N5
    #: dataset at a container's root): xarray then reads it as a dataset of one variable
    stands_alone: ClassVar[bool] = False
    #: the older format of Zarr's family this node was read from as its equal (v1, the
    #: v3.0 draft, N5); None for the format itself
    source_format: ClassVar[str | None] = None
    #: whether zarrdask writes this node's documents (an old format it only reads: False)
    writable: ClassVar[bool] = True

    def chunk_prefix(self, path: str) -> str:
        """Where the chunks of the array at ``path`` lie: under its own path."""
        return path

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """A regular grid's chunk shape (other grids have none: AttributeError)."""
        if not isinstance(self.chunk_grid, RegularChunkGrid):
            raise AttributeError(f"a {type(self.chunk_grid).__name__} has no single chunk shape")
        return self.chunk_grid.chunk_shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def item_family(self) -> str:
        """What every item written must be: the data type's family (``casting.held_values``)."""
        return self.data_type.family

    @property
    def chunk_fill(self) -> Any:
        """What an element no write has reached reads as: the fill value (v3 requires one)."""
        return self.fill_value

    def evolve(self, **changes: Any) -> ArrayMetadataV3:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(self.shape),
            "data_type": self.data_type.to_json(),
            "chunk_grid": self.chunk_grid.to_json(),
            "chunk_key_encoding": self.chunk_key_encoding.to_json(),
            "fill_value": self.data_type.fill_to_json(self.fill_value),
            "codecs": [c.to_json() for c in self.codecs],
            "attributes": dict(self.attributes),
        }
        if self.dimension_names is not None:
            doc["dimension_names"] = list(self.dimension_names)
        if self.storage_transformers:
            doc["storage_transformers"] = [t.to_json() for t in self.storage_transformers]
        doc.update(self.extra_fields)
        return doc

    def to_dict(self) -> dict[str, Any]:
        """zarr-python's name for the document: zarr.json as a dict."""
        return self.to_json()

    def to_documents(self) -> dict[str, bytes]:
        """The store keys (relative to the node) and bytes that persist this metadata."""
        return {"zarr.json": _dumps(self.to_json())}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], key: str | None = None) -> ArrayMetadataV3:
        problems: list[Problem] = []
        _check_format(doc, "array", problems)
        extra = _extra_fields(doc, _ARRAY_FIELDS, problems)
        for name in ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs"):
            if name not in doc:
                problems.append(Problem((name,), f"required field {name!r} is missing"))
        shape = check_shape(doc["shape"], ("shape",), problems) if "shape" in doc else None
        data_type = None
        if "data_type" in doc:
            try:
                data_type = parse_data_type_v3(doc["data_type"])
            except MetadataError as exc:
                problems.extend(exc.problems)
        grid: ChunkGrid | None = None
        key_enc: ChunkKeyEncoding | None = None
        if shape is not None and "chunk_grid" in doc:
            named = parse_named_config(doc["chunk_grid"], ("chunk_grid",), problems)
            grid = None if named is None else parse_chunk_grid(named, len(shape), ("chunk_grid",), problems)
        if "chunk_key_encoding" in doc:
            named = parse_named_config(doc["chunk_key_encoding"], ("chunk_key_encoding",), problems)
            key_enc = None if named is None else parse_chunk_key_encoding(named, ("chunk_key_encoding",), problems)
        codecs = _parse_list_of_configs(doc["codecs"], "codecs", problems, required=True) if "codecs" in doc else []
        transformers = _parse_list_of_configs(doc.get("storage_transformers", []), "storage_transformers", problems)
        fill = None
        if data_type is not None and "fill_value" in doc:
            try:
                fill = data_type.fill_from_json(round_fill_json(data_type, doc["fill_value"]))
            except MetadataError as exc:
                problems.extend(exc.problems)
        attributes = _parse_attributes(doc.get("attributes", {}), problems)
        dims = _parse_dimension_names(doc.get("dimension_names"), shape, problems)
        raise_problems(problems, key)
        assert shape is not None and data_type is not None and grid is not None and key_enc is not None
        return cls(
            shape=shape, data_type=data_type, chunk_grid=grid, chunk_key_encoding=key_enc, fill_value=fill,
            codecs=tuple(codecs), attributes=attributes, dimension_names=dims,
            storage_transformers=tuple(transformers), extra_fields=extra,
        )


@dataclass(frozen=True, slots=True)
class GroupMetadataV3:
    """A v3 group's ``zarr.json``. ``consolidated`` holds the inline consolidated metadata,
    if any, parsed: ``{path relative to the group: node metadata}``. Parsing it with the
    group leaves no copy of the raw documents alive (a dataset of many variables would
    keep thousands of small JSON objects), and writing it back serialises the parsed
    nodes, as ``consolidate_metadata`` writes them."""

    attributes: Mapping[str, Any] = field(default_factory=dict)
    consolidated: Mapping[str, ArrayMetadataV3 | GroupMetadataV3] | None = None
    extra_fields: Mapping[str, Any] = field(default_factory=dict)

    zarr_format: ClassVar[Literal[3]] = 3
    node_type: ClassVar[Literal["group"]] = "group"
    #: the older format of Zarr's family this node was read from as its equal (v1, the
    #: v3.0 draft, N5); None for the format itself
    source_format: ClassVar[str | None] = None
    #: whether zarrdask writes this node's documents (an old format it only reads: False)
    writable: ClassVar[bool] = True

    def evolve(self, **changes: Any) -> GroupMetadataV3:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"zarr_format": 3, "node_type": "group", "attributes": dict(self.attributes)}
        if self.consolidated is not None:
            doc["consolidated_metadata"] = {
                "kind": "inline", "must_understand": False, "metadata": {k: v.to_json() for k, v in self.consolidated.items()}
            }
        doc.update(self.extra_fields)
        return doc

    def to_dict(self) -> dict[str, Any]:
        """zarr-python's name for the document: zarr.json as a dict."""
        return self.to_json()

    def to_documents(self) -> dict[str, bytes]:
        return {"zarr.json": _dumps(self.to_json())}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], key: str | None = None) -> GroupMetadataV3:
        problems: list[Problem] = []
        _check_format(doc, "group", problems)
        extra = _extra_fields(doc, _GROUP_FIELDS, problems)
        attributes = _parse_attributes(doc.get("attributes", {}), problems)
        documents = _parse_consolidated_field(doc.get("consolidated_metadata"), problems)
        raise_problems(problems, key)
        consolidated = None if documents is None else _parse_consolidated_nodes(documents, key)
        return cls(attributes=attributes, consolidated=consolidated, extra_fields=extra)


def _parse_consolidated_field(cm: Any, problems: list[Problem]) -> dict[str, Mapping[str, Any]] | None:
    """The flattened entries of ``consolidated_metadata`` (None when absent or null).

    Core spec 3.1 (zarr-specs #373): the field is ``{"must_understand": false, "kind":
    "inline", "metadata": {...}}``, an object without the ``name`` extension objects carry.
    No entry may name a node ``zarr.json`` (#375)."""
    if cm is None:
        return None
    where = ("consolidated_metadata",)
    if not isinstance(cm, Mapping):
        problems.append(Problem(where, 'expected {"kind": "inline", "must_understand": false, "metadata": {...}}, '
                                       f"got {cm!r}"))
        return None
    before = len(problems)
    if cm.get("kind", "inline") != "inline":
        problems.append(Problem((*where, "kind"), f"expected 'inline', got {cm.get('kind')!r}"))
    if cm.get("must_understand", False) is not False:
        problems.append(Problem((*where, "must_understand"), f"expected false, got {cm.get('must_understand')!r}"))
    if not isinstance(cm.get("metadata"), Mapping):
        problems.append(Problem((*where, "metadata"), f"expected an object of node metadata, got {cm.get('metadata')!r}"))
    if len(problems) > before:
        return None
    documents = flatten_consolidated(cm["metadata"])
    for path in documents:
        if NODE_DOCUMENT in path.split("/"):
            problems.append(Problem((*where, "metadata", path), f"a node must not be named {NODE_DOCUMENT!r}"))
    return documents


def round_fill_json(data_type: DataType, value: Any) -> Any:
    """A v3 fill value given as a JSON number, for a binary float type narrower than 64 bits,
    as the hex string of the value it rounds to "half to even" (core spec 3.1, zarr-specs
    #377): rounding the number straight to the type, not through a float64 first (which
    can land on a midpoint: 1.0000000596046448 is float32 1.0000001, not 1.0). The number
    is the shortest decimal of the parsed JSON number (what writers emit); a complex
    value's two numbers each. Other values pass unchanged."""
    native = data_type.dtype
    if native.kind == "c" and native.itemsize == 8 and isinstance(value, list) and len(value) == 2:
        return [_round_half_even(part, np.dtype(np.float32)) for part in value]
    if native.kind == "f" and native.itemsize in (2, 4) and not data_type.fields:
        return _round_half_even(value, native)
    return value


def _round_half_even(value: Any, native: np.dtype[Any]) -> Any:
    """``value`` (a JSON number) rounded half to even to ``native``, as a hex string."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value == 0:
        return value  # zeros (with their sign) are exact
    exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    info = np.finfo(native)
    beyond = Fraction(2) ** int(info.maxexp)  # where rounding with no exponent limit reaches infinity
    with np.errstate(over="ignore"):  # past the type's range: infinity, compared like the others
        guess = native.type(float(exact))  # within one step of the answer (float64 rounded first)
        candidates = (np.nextafter(guess, native.type(-np.inf)), guess, np.nextafter(guess, native.type(np.inf)))
    best, best_key = guess, None
    for candidate in candidates:
        as_value = (beyond if candidate > 0 else -beyond) if np.isinf(candidate) else Fraction(float(candidate))
        bits = int(np.array(candidate, dtype=native).view(f"u{native.itemsize}"))
        key = (abs(as_value - exact), bits & 1)
        if best_key is None or key < best_key:
            best, best_key = candidate, key
    if np.isinf(best):
        return value  # beyond the type's range: refused as out of range by the fill parser
    return "0x" + format(int(np.array(best, dtype=native).view(f"u{native.itemsize}")), f"0{native.itemsize * 2}x")


def _parse_consolidated_nodes(
    docs: Mapping[str, Any], key: str | None
) -> dict[str, ArrayMetadataV3 | GroupMetadataV3]:
    """Parse flattened consolidated entries; an error names the group's key and the entry."""
    nodes = {}
    for path, doc in docs.items():
        where = f"{key or 'zarr.json'} consolidated_metadata/{path}"
        if not isinstance(doc, Mapping):
            raise MetadataError(f"expected a node's metadata object, got {type(doc).__name__}", key=where)
        nodes[path] = parse_v3(doc, key=where)
    return nodes


def flatten_consolidated(meta: Mapping[str, Any], prefix: str = "") -> dict[str, Mapping[str, Any]]:
    """zarr-python nests consolidated metadata of subgroups; flatten to paths relative to the root."""
    out: dict[str, Mapping[str, Any]] = {}
    for name, doc in meta.items():
        path = f"{prefix}{name}"
        if isinstance(doc, Mapping) and isinstance(doc.get("consolidated_metadata"), Mapping):
            inner = doc["consolidated_metadata"].get("metadata") or {}
            if not isinstance(inner, Mapping):
                raise MetadataError([Problem(("consolidated_metadata", "metadata", path, "consolidated_metadata"),
                                             f"expected an object, got {inner!r}")])
            doc = {k: v for k, v in doc.items() if k != "consolidated_metadata"}
            out.update(flatten_consolidated(inner, f"{path}/"))
        out[path] = doc
    return out


def parse_v3(doc: Mapping[str, Any], key: str | None = None) -> ArrayMetadataV3 | GroupMetadataV3:
    """Parse a ``zarr.json`` document of either node type."""
    node_type = doc.get("node_type")
    if node_type == "array":
        return ArrayMetadataV3.from_json(doc, key)
    if node_type == "group":
        return GroupMetadataV3.from_json(doc, key)
    problems: list[Problem] = []
    _check_format(doc, None, problems)
    problems.append(Problem(("node_type",), f"expected 'array' or 'group', got {node_type!r}"))
    raise MetadataError(problems, key=key)


def _check_format(doc: Mapping[str, Any], node_type: str | None, problems: list[Problem]) -> None:
    if doc.get("zarr_format") != 3:
        problems.append(
            Problem(("zarr_format",), f"expected 3, got {doc.get('zarr_format')!r} (zarr_format is not supported)")
        )
    if node_type is not None and doc.get("node_type") != node_type:
        problems.append(Problem(("node_type",), f"expected {node_type!r}, got {doc.get('node_type')!r}"))


def _parse_list_of_configs(value: Any, name: str, problems: list[Problem], required: bool = False) -> list[NamedConfig]:
    if value is None:
        if required:
            problems.append(Problem((name,), "expected a list of codecs, got null"))
        return []
    if not isinstance(value, list):
        problems.append(Problem((name,), f"expected a list, got {value!r}"))
        return []
    if required and not value:
        problems.append(Problem((name,), "expected at least one codec"))
    out = []
    for i, v in enumerate(value):
        parsed = parse_named_config(v, (name, i), problems)
        if parsed is not None:
            out.append(parsed)
    return out


def _parse_attributes(value: Any, problems: list[Problem]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        problems.append(Problem(("attributes",), f"expected an object, got {value!r}"))
        return {}
    return dict(value)


def _parse_dimension_names(value: Any, shape: tuple[int, ...] | None, problems: list[Problem]) -> tuple[str | None, ...] | None:
    if value is None:
        return None
    if type(value) is not list or not all([type(v) is str or v is None for v in value]):
        problems.append(Problem(("dimension_names",), f"expected a list of strings or nulls, got {value!r}"))
        return None
    if shape is not None and len(value) != len(shape):
        problems.append(Problem(("dimension_names",), f"expected {len(shape)} names (one per dimension), got {len(value)}"))
        return None
    return tuple(value)
