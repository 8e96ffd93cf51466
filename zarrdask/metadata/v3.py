"""Zarr v3 ``zarr.json`` for arrays and groups, validated with every problem's JSON path."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from .dtypes import DataType, parse_data_type_v3
from ..errors import MetadataError, Problem
from .grid import (ChunkGrid, ChunkKeyEncoding, RegularChunkGrid, check_shape, parse_chunk_grid,
                   parse_chunk_key_encoding, raise_problems)
from ..keywords import did_you_mean
from .extension import NamedConfig, parse_named_config

__all__ = ["ArrayMetadataV3", "GroupMetadataV3", "parse_json_document", "parse_v3"]

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

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """A regular grid's chunk shape (other grids have none: AttributeError)."""
        if not isinstance(self.chunk_grid, RegularChunkGrid):
            raise AttributeError(f"a {type(self.chunk_grid).__name__} has no single chunk shape")
        return self.chunk_grid.chunk_shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

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
                fill = data_type.fill_from_json(doc["fill_value"])
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

    def to_documents(self) -> dict[str, bytes]:
        return {"zarr.json": _dumps(self.to_json())}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], key: str | None = None) -> GroupMetadataV3:
        problems: list[Problem] = []
        _check_format(doc, "group", problems)
        extra = _extra_fields(doc, _GROUP_FIELDS, problems)
        attributes = _parse_attributes(doc.get("attributes", {}), problems)
        documents = None
        cm = doc.get("consolidated_metadata")
        if cm is not None:
            if not isinstance(cm, Mapping) or not isinstance(cm.get("metadata", {}), Mapping):
                problems.append(Problem(("consolidated_metadata",), "expected an object with a 'metadata' object"))
            elif cm.get("kind", "inline") != "inline":
                if cm.get("must_understand", True) is not False:
                    problems.append(Problem(("consolidated_metadata", "kind"), f"unknown kind {cm.get('kind')!r}",
                                            unknown_extension=True))
            else:
                documents = flatten_consolidated(cm.get("metadata", {}))
        raise_problems(problems, key)
        consolidated = None if documents is None else _parse_consolidated_nodes(documents, key)
        return cls(attributes=attributes, consolidated=consolidated, extra_fields=extra)


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
