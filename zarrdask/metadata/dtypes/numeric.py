"""The core numeric data types (bool, integers, floats, complex) and their fill values."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .model import FILL_PARSERS, FILL_WRITERS, JSON, DataType, Loc, V3Factory

__all__ = ["COMPLEX_ALIASES", "NUMPY_TO_V3", "SUB_BYTE_BITS", "V3_NUMERIC", "complex_to_json", "fill_complex",
           "float_to_json", "numeric_type", "parse_float", "parse_int"]

V3_NUMERIC = {
    "bool": "?",
    "int8": "i1",
    "int16": "i2",
    "int32": "i4",
    "int64": "i8",
    "uint8": "u1",
    "uint16": "u2",
    "uint32": "u4",
    "uint64": "u8",
    "float16": "f2",
    "float32": "f4",
    "float64": "f8",
    "complex64": "c8",
    "complex128": "c16",
}

NUMPY_TO_V3 = {np.dtype(v).str[1:]: k for k, v in V3_NUMERIC.items()}
#: zarr-extensions' aliases of the core complex types
COMPLEX_ALIASES = {"complex_float32": "c8", "complex_float64": "c16"}
#: value bits of the types narrower than a byte: packbits packs that many, the bytes codec
#: stores one value per byte and ignores the byte's upper bits (zarr-extensions)
SUB_BYTE_BITS = {"bool": 1, "int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4,
                 "float6_e2m3fn": 6, "float6_e3m2fn": 6}
_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

_HEX = re.compile(r"^0x[0-9a-fA-F]+$")


def _family_of(dt: np.dtype) -> str:
    return {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}[dt.kind]


def numeric_type(name: str, code: str) -> V3Factory:
    dt = np.dtype(code)
    data_type = DataType(name, dt, _family_of(dt))  # immutable: one instance serves every array

    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        return data_type

    return make


# -- fill parsing --------------------------------------------------------------


def parse_float(dt: np.dtype, value: JSON) -> Any:
    if isinstance(value, str):
        if value in _FLOAT_WORDS:
            x = dt.type(_FLOAT_WORDS[value])
            if not (np.isnan(x) if value == "NaN" else np.isinf(x)):
                raise ValueError(f"{dt.name} has no {value}")
            return x
        if _HEX.match(value):
            bits = int(value, 16)
            nbytes = dt.itemsize
            if len(value) - 2 != 2 * nbytes:
                raise ValueError(f"hex fill value must have {2 * nbytes} hex digits")
            width = SUB_BYTE_BITS.get(dt.name)
            if width is not None and bits >> width:
                raise ValueError(f"{dt.name} has {width} bits: expected 0x00 to 0x{(1 << width) - 1:02x}")
            raw = bits.to_bytes(nbytes, "big")
            return np.frombuffer(raw, dtype=dt.newbyteorder(">"))[0].astype(dt)
        raise ValueError('expected a number, "NaN", "Infinity", "-Infinity" or "0x..." hex')
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("expected a JSON number or string")
    with np.errstate(over="ignore"):
        x = dt.type(value)
    if np.isnan(x) and not math.isnan(value):
        raise ValueError(f"{value} is not a {dt.name} value (it has no such number)")
    if math.isfinite(value) and not math.isfinite(float(x)):
        raise OverflowError(f"{value} is outside the range of {dt}")
    return x


def parse_int(dt: np.dtype, value: JSON) -> Any:
    if isinstance(value, bool):
        raise TypeError("expected an integer, got a boolean")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("expected an integer")
        value = int(value)
    if not isinstance(value, int):
        raise TypeError("expected an integer")
    info = np.iinfo(dt)
    if not info.min <= value <= info.max:
        raise OverflowError(f"expected an integer from {info.min} to {info.max}")
    return dt.type(value)


def _fill_bool(t: DataType, v: JSON, loc: Loc) -> Any:
    if not isinstance(v, bool):
        raise TypeError("expected true or false")
    return np.bool_(v)


def _fill_int(t: DataType, v: JSON, loc: Loc) -> Any:
    return parse_int(t.dtype, v)


def _fill_float(t: DataType, v: JSON, loc: Loc) -> Any:
    return parse_float(t.dtype, v)


def _complex_part(t: DataType) -> np.dtype:
    """The dtype of the real and imaginary parts of a complex type."""
    return t.fields[0].data_type.dtype if t.fields else np.dtype(f"f{t.dtype.itemsize // 2}")


def fill_complex(t: DataType, v: JSON, loc: Loc) -> Any:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise TypeError("expected [real, imaginary]")
    part = _complex_part(t)
    real, imag = parse_float(part, v[0]), parse_float(part, v[1])
    if t.fields:
        return np.array((real, imag), dtype=t.dtype)[()]
    out = np.zeros((), t.dtype)
    out.real, out.imag = real, imag
    return out[()]


# -- fill writing ----------------------------------------------------------------


def float_to_json(value: Any, dt: np.dtype) -> JSON:
    """A float as JSON: number, NaN/Infinity words, or hex when the NaN has a payload."""
    x = np.asarray(value, dtype=dt)[()]
    with np.errstate(invalid="ignore"):  # (a signalling NaN of an ml_dtypes type warns)
        nan = np.isnan(x)
    if nan:
        canonical = np.asarray(np.nan, dtype=dt).astype(dt.newbyteorder(">")).tobytes()
        raw = np.asarray(x).astype(dt.newbyteorder(">")).tobytes()
        return "NaN" if raw == canonical else "0x" + raw.hex()
    if np.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(x)


def _w_bool(t: DataType, v: Any) -> JSON:
    return bool(v)


def _w_int(t: DataType, v: Any) -> JSON:
    return int(v)


def _w_float(t: DataType, v: Any) -> JSON:
    return float_to_json(v, t.dtype)


def complex_to_json(t: DataType, v: Any) -> JSON:
    part = _complex_part(t)
    c = np.asarray(v, dtype=t.dtype)
    real, imag = (c["real"], c["imag"]) if t.fields else (c.real, c.imag)
    return [float_to_json(real, part), float_to_json(imag, part)]


FILL_PARSERS.update(bool=_fill_bool, int=_fill_int, uint=_fill_int, float=_fill_float, complex=fill_complex)
FILL_WRITERS.update(bool=_w_bool, int=_w_int, uint=_w_int, float=_w_float, complex=complex_to_json)
