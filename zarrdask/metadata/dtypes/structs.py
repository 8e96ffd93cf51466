"""The ``struct`` data type (and its legacy name ``structured``): named fields of fixed-size types."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...errors import MetadataError, Problem
from ...keywords import did_you_mean
from .model import FILL_PARSERS, FILL_WRITERS, JSON, DataType, Loc, StructField, V3Factory

__all__ = ["struct_type"]


def struct_type(name: str, parse_field: Callable[[JSON, Loc], DataType]) -> V3Factory:
    """``struct``, and its legacy name ``structured`` (which also allows ``[name, type]`` fields);
    ``parse_field`` parses a field's data type (the registry's parser)."""

    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        where = (*loc, "configuration", "fields")
        items = (config or {}).get("fields")
        if not isinstance(items, list) or not items:
            raise MetadataError([Problem(where, f"expected a non-empty list of fields, got {items!r}")])
        extra = sorted(set(config or {}) - {"fields"})
        if extra:
            unknown = ", ".join(f"{k!r}{did_you_mean(k, ['fields'])}" for k in extra)
            raise MetadataError([Problem((*loc, "configuration"), f"unknown key{'s' if len(extra) > 1 else ''} "
                                                                  f"{unknown}; allowed: 'fields'")])
        fields: list[StructField] = []
        for i, item in enumerate(items):
            if isinstance(item, Mapping) and set(item) == {"name", "data_type"}:
                field_name, field_type, type_loc = item["name"], item["data_type"], (*where, i, "data_type")
            elif name == "structured" and isinstance(item, list) and len(item) == 2:
                field_name, field_type, type_loc = item[0], item[1], (*where, i, 1)
            else:
                raise MetadataError([Problem((*where, i), f'expected {{"name": ..., "data_type": ...}}, got {item!r}')])
            if not isinstance(field_name, str) or not field_name:
                raise MetadataError([Problem((*where, i, "name"), f"expected a non-empty string, got {field_name!r}")])
            if any(f.name == field_name for f in fields):
                raise MetadataError([Problem((*where, i, "name"), f"duplicate field name {field_name!r}")])
            field_dtype = parse_field(field_type, type_loc)
            if field_dtype.dtype.kind == "O":
                raise MetadataError([Problem(type_loc, f"a struct field needs a fixed-size data type, not "
                                                       f"{field_dtype.name!r}")])
            fields.append(StructField(field_name, field_dtype))
        dtype = np.dtype([(f.name, f.data_type.dtype) for f in fields])
        return DataType(name, dtype, "struct", {"fields": [{"name": f.name, "data_type": f.data_type.to_json()}
                                                           for f in fields]}, fields=tuple(fields))

    return make



def _fill_struct(t: DataType, v: JSON, loc: Loc) -> Any:
    if isinstance(v, str):  # the legacy ``structured`` form: base64 of the packed little-endian bytes
        raw = base64.b64decode(v, validate=True)
        if len(raw) != t.dtype.itemsize:
            raise ValueError(f"expected {t.dtype.itemsize} bytes, got {len(raw)}")
        return np.frombuffer(raw, dtype=t.dtype.newbyteorder("<"))[0].astype(t.dtype)
    if not isinstance(v, Mapping):
        raise TypeError("expected an object with a value for each field")
    names = [f.name for f in t.fields]
    missing, extra = [n for n in names if n not in v], sorted(set(v) - set(names))
    if missing or extra:
        raise ValueError(f"expected a value for each of the fields {names}" + (f"; missing {missing}" if missing else "")
                         + (f"; unknown {extra}" if extra else ""))
    values = tuple(f.data_type.fill_from_json(v[f.name], (*loc, f.name)) for f in t.fields)
    return np.array(values, dtype=t.dtype)[()]


def _w_struct(t: DataType, v: Any) -> JSON:
    scalar = np.asarray(v, dtype=t.dtype)
    return {f.name: f.data_type.fill_to_json(scalar[f.name][()]) for f in t.fields}


FILL_PARSERS.update(struct=_fill_struct)
FILL_WRITERS.update(struct=_w_struct)
