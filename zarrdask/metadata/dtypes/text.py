"""The string and bytes data types: variable-length strings and bytes, fixed-length UTF-32,
null-terminated and raw bytes, and ``r<bits>`` raw types."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import MetadataError, Problem
from .model import FILL_PARSERS, FILL_WRITERS, JSON, DataType, Loc, V3Factory

__all__ = ["RAW_NAME", "fixed_utf32", "null_terminated", "raw_bytes", "variable_type"]

#: the ``r<bits>`` raw data type names
RAW_NAME = re.compile(r"^r(\d+)$")


def _length_bytes(config: Mapping[str, Any] | None, loc: Loc, multiple: int = 1) -> int:
    n = (config or {}).get("length_bytes")
    if isinstance(n, bool) or not isinstance(n, int) or not 0 < n < 2**31 or n % multiple:
        raise MetadataError([Problem((*loc, "configuration", "length_bytes"),
                                     f"expected a positive multiple of {multiple} below 2**31 (numpy's largest "
                                     f"item), got {n!r}")])
    return n


def fixed_utf32(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
    n = _length_bytes(config, loc, 4)
    return DataType("fixed_length_utf32", np.dtype(f"<U{n // 4}"), "utf32", {"length_bytes": n})


def null_terminated(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
    n = _length_bytes(config, loc)
    return DataType("null_terminated_bytes", np.dtype(f"S{n}"), "ntbytes", {"length_bytes": n})


def raw_bytes(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
    n = _length_bytes(config, loc)
    return DataType("raw_bytes", np.dtype(f"V{n}"), "rawbytes", {"length_bytes": n})


def variable_type(name: str, family: str) -> V3Factory:
    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        return DataType(name, np.dtype(object), family)

    return make


def _fill_raw(t: DataType, v: JSON, loc: Loc) -> Any:
    if not isinstance(v, list) or len(v) != t.dtype.itemsize:
        raise TypeError(f"expected a list of {t.dtype.itemsize} byte values")
    return np.void(bytes(int(b) for b in v))


def _fill_string(t: DataType, v: JSON, loc: Loc) -> Any:
    if not isinstance(v, str):
        raise TypeError("expected a string")
    return v


def _fill_bytes(t: DataType, v: JSON, loc: Loc) -> Any:
    if isinstance(v, list):
        return bytes(v)
    if not isinstance(v, str):
        raise TypeError("expected a base64 string")
    return base64.b64decode(v, validate=True)


def _fill_utf32(t: DataType, v: JSON, loc: Loc) -> Any:
    if not isinstance(v, str):
        raise TypeError("expected a string")
    return np.str_(v)


def _fill_ntbytes(t: DataType, v: JSON, loc: Loc) -> Any:
    return np.bytes_(_fill_bytes(t, v, loc))


def _fill_rawbytes(t: DataType, v: JSON, loc: Loc) -> Any:
    raw = _fill_bytes(t, v, loc)
    if len(raw) not in (0, t.dtype.itemsize):
        raise ValueError(f"expected {t.dtype.itemsize} bytes")
    return np.void(raw.ljust(t.dtype.itemsize, b"\0"))


def _w_raw(t: DataType, v: Any) -> JSON:
    return list(bytes(np.asarray(v, dtype=t.dtype).tobytes()))


def _w_str(t: DataType, v: Any) -> JSON:
    return str(v)


def _w_b64(t: DataType, v: Any) -> JSON:
    raw = v if isinstance(v, bytes) else np.asarray(v, dtype=t.dtype).tobytes()
    if t.family == "ntbytes":
        raw = raw.rstrip(b"\0")
    return base64.b64encode(raw).decode("ascii")


FILL_PARSERS.update(raw=_fill_raw, string=_fill_string, bytes=_fill_bytes, utf32=_fill_utf32,
                    ntbytes=_fill_ntbytes, rawbytes=_fill_rawbytes)
FILL_WRITERS.update(raw=_w_raw, string=_w_str, bytes=_w_b64, utf32=_w_str, ntbytes=_w_b64, rawbytes=_w_b64)
