"""Zarr v2 metadata: ``.zarray``, ``.zgroup``, ``.zattrs`` (and ``.zmetadata`` in consolidated.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Literal

from .dtypes import DataType, fill_from_json_v2, fill_to_json_v2, parse_data_type_v3, parse_dtype_v2
from ..errors import MetadataError, Problem
from .grid import MAX_EXTENT, RegularChunkGrid, V2KeyEncoding, check_shape, raise_problems

__all__ = ["ITEM_DATA_TYPES", "OBJECT_CODEC_ITEMS", "ArrayMetadataV2", "GroupMetadataV2"]

_ARRAY_FIELDS = {
    "zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters", "dimension_separator",
}


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=True).encode("utf-8")


#: the item families of the object codecs that encode only one kind of item
OBJECT_CODEC_ITEMS = {"vlen-utf8": "string", "vlen-bytes": "bytes"}
#: the Zarr v3 data types of those items
ITEM_DATA_TYPES = {"string": "string", "bytes": "variable_length_bytes"}


def _items(filters: Any) -> str:
    """What an object array's items are, by its object codec (the first filter): "string",
    "bytes", or "object" for a codec that takes any object (json, msgpack, pickle)."""
    if isinstance(filters, (list, tuple)) and filters and isinstance(filters[0], Mapping):
        return OBJECT_CODEC_ITEMS.get(str(filters[0].get("id")), "object")
    return "object"


@dataclass(frozen=True)
class ArrayMetadataV2:
    """A v2 array: ``.zarray`` plus its ``.zattrs``. ``fill_value`` may be ``None``."""

    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    data_type: DataType
    fill_value: Any
    order: Literal["C", "F"] = "C"
    compressor: Mapping[str, Any] | None = None
    filters: tuple[Mapping[str, Any], ...] | None = None
    dimension_separator: str = "."
    attributes: Mapping[str, Any] = field(default_factory=dict)
    #: netCDF-C 4.8's ``_NCZARR_ARRAY`` entry of ``.zarray`` (its dimension references), kept as written
    nczarr: Mapping[str, Any] | None = None

    zarr_format: ClassVar[Literal[2]] = 2
    node_type: ClassVar[Literal["array"]] = "array"
    #: whether the axes are named by xarray's ``_ARRAY_DIMENSIONS`` attribute, which
    #: xarray then requires (v3 has ``dimension_names``; Zarr v1 predates the convention)
    dimensions_attribute: ClassVar[bool] = True
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
    storage_transformers = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def item_family(self) -> str:
        """What every item written must be (``casting.held_values``): the data type's family,
        and for an object array the one its object codec (the first filter) encodes; an
        object codec not named here (json, msgpack, pickle) takes any object."""
        family = self.data_type.family
        return _items(self.filters) if family == "object" else family

    def cast_fill(self, value: Any) -> Any:
        """A user-given fill value as this array's (``DataType.cast_fill``); an object
        array's as an item of its object codec: text, bytes, or for a codec of any objects
        a JSON scalar (MetadataError naming ``fill_value`` otherwise)."""
        if self.data_type.family != "object":
            return self.data_type.cast_fill(value)
        items = self.item_family
        if items != "object":
            return parse_data_type_v3(ITEM_DATA_TYPES[items]).cast_fill(value)
        if value is not None and not isinstance(value, (str, int, float)):
            raise MetadataError([Problem(("fill_value",), f"expected a string, number or boolean (JSON) for an array "
                                                          f"of any objects, got {value!r}")])
        return value

    @property
    def chunk_fill(self) -> Any:
        """What an element no write has reached reads as: the fill value; without one
        (null), the empty item of a text or bytes array ("" / b"", as zarr-python 3
        reads it), None in an array of any objects, else the data type's zero."""
        if self.fill_value is not None:
            return self.fill_value
        if self.data_type.family == "object":
            return {"string": "", "bytes": b""}.get(self.item_family)
        return self.data_type.default_fill()

    @property
    def chunk_grid(self) -> RegularChunkGrid:
        return RegularChunkGrid(self.chunk_shape)

    @property
    def chunk_key_encoding(self) -> V2KeyEncoding:
        return V2KeyEncoding(self.dimension_separator)

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        dims = self.attributes.get("_ARRAY_DIMENSIONS")
        if isinstance(dims, list) and len(dims) == len(self.shape) and all(isinstance(d, str) for d in dims):
            return tuple(dims)
        return None

    def evolve(self, **changes: Any) -> ArrayMetadataV2:
        return replace(self, **changes)

    def as_plain(self) -> ArrayMetadataV2:
        """This array as plain Zarr v2 metadata: an older format's (Zarr v1's) is the v2
        array it reads as, whose documents can be written (a copy's)."""
        if type(self) is ArrayMetadataV2:
            return self
        return ArrayMetadataV2(**{f.name: getattr(self, f.name) for f in fields(ArrayMetadataV2)})

    def to_json(self) -> dict[str, Any]:
        """The ``.zarray`` document."""
        doc = {
            "zarr_format": 2,
            "shape": list(self.shape),
            "chunks": list(self.chunk_shape),
            "dtype": self.data_type.to_json(),
            "compressor": dict(self.compressor) if self.compressor is not None else None,
            "fill_value": fill_to_json_v2(self.data_type, self.fill_value, self.item_family),
            "order": self.order,
            "filters": [dict(f) for f in self.filters] if self.filters else None,
            "dimension_separator": self.dimension_separator,
        }
        if self.nczarr is not None:
            doc["_NCZARR_ARRAY"] = dict(self.nczarr)
        return doc

    def to_dict(self) -> dict[str, Any]:
        """As zarr-python's: the document with the ``.zattrs`` as ``attributes``."""
        return {**self.to_json(), "attributes": dict(self.attributes)}

    def to_documents(self) -> dict[str, bytes]:
        docs = {".zarray": _dumps(self.to_json())}
        if self.attributes:
            docs[".zattrs"] = _dumps(dict(self.attributes))
        return docs

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], attributes: Mapping[str, Any] | None = None,
                  key: str | None = None) -> ArrayMetadataV2:
        problems: list[Problem] = []
        if doc.get("zarr_format") != 2:
            problems.append(Problem(("zarr_format",), f"expected 2, got {doc.get('zarr_format')!r}"))
        for name in ("shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters"):
            if name not in doc:
                problems.append(Problem((name,), f"required field {name!r} is missing"))
        shape = check_shape(doc.get("shape"), ("shape",), problems)
        chunks = doc.get("chunks")
        if not isinstance(chunks, list) or not all(type(c) is int and 0 < c <= MAX_EXTENT for c in chunks):
            problems.append(Problem(("chunks",), f"expected a list of integers from 1 to 2**63 - 1, got {chunks!r}"))
            chunks = None
        elif shape is not None and len(chunks) != len(shape):
            problems.append(Problem(("chunks",), f"expected {len(shape)} entries, got {len(chunks)}"))
        dtype = None
        try:
            dtype = parse_dtype_v2(doc.get("dtype"))
        except MetadataError as exc:
            problems.extend(exc.problems)
        order = doc.get("order", "C")
        if order not in ("C", "F"):
            problems.append(Problem(("order",), f"expected 'C' or 'F', got {order!r}"))
        compressor = doc.get("compressor")
        if compressor is not None and not (isinstance(compressor, Mapping) and isinstance(compressor.get("id"), str)):
            problems.append(Problem(("compressor",), f"expected null or an object with 'id', got {compressor!r}"))
        filters = doc.get("filters")
        if filters is not None and not (
            isinstance(filters, list) and all(isinstance(f, Mapping) and isinstance(f.get("id"), str) for f in filters)
        ):
            problems.append(Problem(("filters",), f"expected null or a list of objects with 'id', got {filters!r}"))
        sep = doc.get("dimension_separator", ".")
        if sep not in (".", "/"):
            problems.append(Problem(("dimension_separator",), f"expected '.' or '/', got {sep!r}"))
        fill = None
        if dtype is not None:
            try:
                fill = fill_from_json_v2(dtype, doc.get("fill_value"), items=_items(filters))
            except MetadataError as exc:
                problems.extend(exc.problems)
        attrs = attributes if attributes is not None else {}
        if not isinstance(attrs, Mapping):
            problems.append(Problem((".zattrs",), f"expected an object, got {attrs!r}"))
        raise_problems(problems, key)
        assert shape is not None and chunks is not None and dtype is not None  # (else a problem was raised)
        return cls(
            shape=tuple(shape), chunk_shape=tuple(chunks), data_type=dtype, fill_value=fill, order=order,
            compressor=compressor, filters=tuple(filters) if filters else None, dimension_separator=sep,
            attributes=dict(attrs), nczarr=nczarr if isinstance(nczarr := doc.get("_NCZARR_ARRAY"), Mapping) else None,
        )


@dataclass(frozen=True)
class GroupMetadataV2:
    """A v2 group: ``.zgroup`` plus its ``.zattrs``; ``consolidated`` from ``.zmetadata`` if read."""

    attributes: Mapping[str, Any] = field(default_factory=dict)
    consolidated: Mapping[str, Mapping[str, Any]] | None = None

    zarr_format: ClassVar[Literal[2]] = 2
    node_type: ClassVar[Literal["group"]] = "group"
    #: the older format of Zarr's family this node was read from as its equal (v1, the
    #: v3.0 draft, N5); None for the format itself
    source_format: ClassVar[str | None] = None
    #: whether zarrdask writes this node's documents (an old format it only reads: False)
    writable: ClassVar[bool] = True

    def evolve(self, **changes: Any) -> GroupMetadataV2:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {"zarr_format": 2}

    def to_dict(self) -> dict[str, Any]:
        """As zarr-python's: the document with the ``.zattrs`` as ``attributes``."""
        return {**self.to_json(), "attributes": dict(self.attributes)}

    def to_documents(self) -> dict[str, bytes]:
        docs = {".zgroup": _dumps({"zarr_format": 2})}
        if self.attributes:
            docs[".zattrs"] = _dumps(dict(self.attributes))
        return docs

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], attributes: Mapping[str, Any] | None = None,
                  key: str | None = None) -> GroupMetadataV2:
        if doc.get("zarr_format") != 2:
            raise MetadataError([Problem(("zarr_format",), f"expected 2, got {doc.get('zarr_format')!r}")], key=key)
        if attributes is not None and not isinstance(attributes, Mapping):
            raise MetadataError([Problem((".zattrs",), f"expected an object, got {attributes!r}")], key=key)
        return cls(attributes=dict(attributes or {}))
