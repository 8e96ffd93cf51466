"""v2 data types: numpy typestrs (and structured field lists) and their fill values."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

import numpy as np

from ...errors import MetadataError, Problem
from .casting import cast_values
from .model import FILL_WRITERS, JSON, DataType, Loc, with_expected
from .numeric import complex_to_json, fill_complex, float_to_json, parse_float, parse_int
from .registry import dtype_names, nearest_dtype
from .times import fill_time

__all__ = ["fill_from_json_v2", "fill_to_json_v2", "parse_dtype_v2", "stored_dtype_v2"]


def parse_dtype_v2(value: JSON, loc: Loc = ("dtype",)) -> DataType:
    """Parse a v2 ``dtype`` (typestr or structured list). ``name`` keeps the stored
    typestr (with byte order); ``dtype`` is the native-order in-memory dtype."""
    expected = "expected a numpy typestr such as '<f4' or a list of [name, typestr] fields"
    if not isinstance(value, (str, list)):
        raise MetadataError([Problem(loc, f"{expected}, got {value!r}")])
    alias = _deprecated_alias(value)
    if alias is not None:  # (numpy 2 reads it with a DeprecationWarning; a later numpy will not)
        raise MetadataError([Problem(loc, f"{expected}, got {value!r}: {alias!r} is numpy's deprecated alias of "
                                          f"'S' (zarr-python refuses it); write {_bytes_typestr(alias)}")])
    try:
        stored = np.dtype(_descr(value))
    except (TypeError, ValueError, SyntaxError, KeyError, IndexError, OverflowError) as exc:  # numpy's parser
        hint = nearest_dtype(value, dtype_names()) if isinstance(value, str) else ""
        raise MetadataError([Problem(loc, f"{expected}, got {value!r}{hint} (numpy: {exc})")]) from None
    if stored.kind == "O":
        return DataType(str(value), stored, "object", json=value)
    if stored.shape:  # numpy reads '|1b' or '(2,)i4' as an array of items per item
        raise MetadataError([Problem(loc, f"expected a numpy typestr of one item such as '<f4', got {value!r}: numpy "
                                          f"reads it as {stored.shape} items of {stored.base.str} per element; give "
                                          "that shape to the array (or name the items in a structured dtype)")])
    if stored.itemsize == 0:  # ("S", "U0", "V", []: no chunk could hold an item)
        raise MetadataError([Problem(loc, f"expected a data type of at least 1 byte per item (such as '|S5'), got "
                                          f"{value!r} (0 bytes)")])
    native = stored.newbyteorder("=") if stored.fields is None else stored
    family = {
        "b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex", "U": "utf32",
        "S": "ntbytes", "V": "rawbytes", "M": "datetime", "m": "timedelta",
    }.get(native.kind, "rawbytes")
    if native.kind in "biufcMm":
        native = np.dtype(native.str.replace(">", "<"))
    return DataType(str(value) if isinstance(value, str) else "structured", native, family, json=value)

#: a typestr of numpy's deprecated bytes alias 'a' (``|a5``: ``|S5``), alone or as an item shape's type
_ALIAS_A = re.compile(r"(\([0-9, ]*\))?[<>|=]?a[0-9]*")


def _bytes_typestr(alias: str) -> str:
    """The 'S' spelling of an 'a' typestr (one with a length: 'S' alone holds 0 bytes)."""
    spelled = alias.replace("a", "S")
    return repr(spelled) if spelled[-1].isdigit() else f"{spelled!r} with a length, such as '|S5'"


def _deprecated_alias(value: JSON) -> str | None:
    """The first typestr in ``value`` (a typestr or a list of fields, nested) spelled with
    numpy's deprecated ``a``, else None."""
    if isinstance(value, str):
        return value if _ALIAS_A.fullmatch(value) else None
    if isinstance(value, list):
        for field in value:
            if isinstance(field, (list, tuple)) and len(field) >= 2:
                found = _deprecated_alias(field[1])
                if found is not None:
                    return found
    return None


def _descr(value: JSON) -> Any:
    """A v2 ``dtype`` as numpy takes it: a typestr, or fields ``[name, type(, shape)]`` as
    tuples, a field's type itself a typestr or fields (nested structs, as zarr-python 2
    wrote numpy's ``descr``)."""
    if not isinstance(value, list):
        return value
    return [(f[0], _descr(f[1]), *(tuple(x) if isinstance(x, list) else x for x in f[2:]))
            if isinstance(f, list) and len(f) >= 2 else f for f in value]


def stored_dtype_v2(dtype: DataType) -> np.dtype:
    """The on-disk numpy dtype of a v2 data type (with its byte order)."""
    j = dtype.json
    stored: np.dtype = np.dtype(_descr(j))
    return stored

#: a JSON number's text (RFC 8259): tolerance ``v2-fill-as-string``, n5-zarr wrote a numeric
#: ``fill_value`` as a string of the number (``"0"``; n5-zarr #39), read as that number
_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z")


def fill_from_json_v2(dtype: DataType, value: JSON, loc: Loc = ("fill_value",), items: str = "object") -> Any:
    """Parse a v2 ``fill_value``; ``None`` stays ``None`` (no fill value). ``items``: what an
    object array's object codec holds (``ArrayMetadataV2.item_family``)."""
    if value is None:
        return None
    fam = dtype.family
    if fam in ("int", "uint", "float") and isinstance(value, str) and _JSON_NUMBER.match(value):
        value = json.loads(value)  # the value the same text unquoted is
    try:
        if fam == "object":
            return _object_fill(value, items, loc)
        if fam in ("float", "complex"):
            if fam == "complex" and isinstance(value, list):
                return fill_complex(dtype, value, loc)
            return parse_float(dtype.dtype, value) if fam == "float" else dtype.dtype.type(value)
        if fam in ("int", "uint"):
            return parse_int(dtype.dtype, value)
        if fam == "bool":  # (a number must be 0 or 1; other values as zarr-python 2 took them: truth)
            return cast_values(np.asarray(value), dtype.dtype)[()] if isinstance(value, int | float) else \
                np.bool_(value)
        if fam in ("datetime", "timedelta"):
            return fill_time(dtype, value, loc)
        if fam == "utf32":
            return np.str_(value)
        if fam in ("ntbytes", "rawbytes"):
            raw = base64.b64decode(value) if isinstance(value, str) else bytes(value)
            if fam == "ntbytes":
                return np.bytes_(raw)
            return np.frombuffer(raw.ljust(dtype.dtype.itemsize, b"\0"), dtype=stored_dtype_v2(dtype))[0].astype(
                dtype.dtype
            )
    except MetadataError:
        raise  # (a helper's own problem: it names the field and what it expected already)
    except (ValueError, TypeError, OverflowError) as exc:
        raise MetadataError([Problem(loc, f"invalid fill value {value!r} for dtype {dtype.name}: "
                                          f"{with_expected(dtype, exc)}")]) from None
    raise MetadataError([Problem(loc, f"cannot parse fill value {value!r} for dtype {dtype.name}")])

def _object_fill(value: JSON, items: str, loc: Loc) -> Any:
    """An object array's fill value as an item of its object codec: text for ``vlen-utf8``
    (a JSON number or boolean as its text, ``0`` -> ``"0"``, as zarr-python 3 and zarrs read
    the ``0`` zarr-python 2 wrote by default), bytes for ``vlen-bytes`` (base64 text, as
    zarr-python 3 writes it; a number or boolean as its ASCII text); any other codec's fill
    as the JSON value it is."""
    if items == "object":
        return value
    if isinstance(value, (bool, int, float)):
        text = str(value)
        return text if items == "string" else text.encode("ascii")
    if not isinstance(value, str):
        raise MetadataError([Problem(loc, f"expected a string for the {items} items of a {_CODEC_OF[items]} array, "
                                          f"got {value!r}")])
    if items == "string":
        return value
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise MetadataError([Problem(loc, f"expected the base64 text of a vlen-bytes array's fill value, "
                                          f"got {value!r}")]) from None


_CODEC_OF = {"string": "vlen-utf8", "bytes": "vlen-bytes"}


def fill_to_json_v2(dtype: DataType, value: Any, items: str = "object") -> JSON:
    """The v2 JSON form of a fill value (``None`` for no fill value); an object array's by
    what its object codec holds (``items``: bytes as base64 text)."""
    if value is None:
        return None
    fam = dtype.family
    if fam == "object":
        if items == "bytes" and isinstance(value, bytes):
            return base64.b64encode(value).decode("ascii")
        return value.item() if isinstance(value, np.generic) else value  # (a JSON value as parsed, or a scalar)
    if fam == "float":
        j = float_to_json(value, dtype.dtype)
        return "NaN" if isinstance(j, str) and j.startswith("0x") else j
    if fam == "complex":
        return complex_to_json(dtype, value)
    if fam in ("ntbytes", "rawbytes"):
        return base64.b64encode(np.asarray(value, dtype=stored_dtype_v2(dtype)).tobytes()).decode("ascii")
    return FILL_WRITERS[fam](dtype, value)
