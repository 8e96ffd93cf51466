"""Data types: Zarr v3 ``data_type`` names and v2 typestrs <-> numpy, and fill values.

A :class:`DataType` is the in-memory view of a stored data type: a numpy dtype in
native byte order (byte order on disk is a codec concern), the JSON it came from,
and the rules for its fill value JSON. Fill values keep their bit patterns: a
``"0x7fc00001"`` NaN payload survives a read and a write unchanged.

v3 core types, zarr-python's extension types, ``bytes`` and ``complex_float16/32/64`` are
built in; TensorStore's ``bfloat16``/``float4_*``/``float6_*``/``float8_*``/``int2``/``int4``
and the ``complex_*`` types made of them need the optional ``ml_dtypes`` package.
``complex_*`` types with no numpy complex dtype are structured ``(real, imag)`` pairs.
``register_data_type`` adds a v3 data type (also through the entry-point group
``zarrdask.data_types``).
"""

from __future__ import annotations

import base64
import math
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import numpy as np

from ..errors import MetadataError, Problem, UnknownExtensionError, UnsupportedDataTypeError
from ..keywords import did_you_mean

__all__ = [
    "DataType",
    "parse_data_type_v3",
    "parse_dtype_v2",
    "data_type_from_numpy",
    "as_numpy_dtype",
    "register_data_type",
    "fill_from_json_v2",
    "fill_to_json_v2",
]

JSON = Any
Loc = tuple[str | int, ...]

_V3_NUMERIC = {
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
_NUMPY_TO_V3 = {np.dtype(v).str[1:]: k for k, v in _V3_NUMERIC.items()}
_ML_DTYPES = (
    "bfloat16",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e4m3b11fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "int4",
    "uint4",
    "int2",
    "uint2",
    "float8_e4m3",
    "float8_e3m4",
    "float8_e8m0fnu",
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
)
#: zarr-extensions' aliases of the core complex types
_COMPLEX_ALIASES = {"complex_float32": "c8", "complex_float64": "c16"}
#: the parts of the ``complex_<part>`` types stored as ``(real, imag)`` structured pairs
_COMPLEX_PARTS = (
    "float16",
    "bfloat16",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
)
#: value bits of the types narrower than a byte: packbits packs that many, the bytes codec
#: stores one value per byte and ignores the byte's upper bits (zarr-extensions)
SUB_BYTE_BITS = {"bool": 1, "int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4,
                 "float6_e2m3fn": 6, "float6_e3m2fn": 6}
_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")


@dataclass(frozen=True)
class StructField:
    """One named field of a ``struct`` data type."""

    name: str
    data_type: DataType


@dataclass(frozen=True)
class DataType:
    """An in-memory data type: numpy dtype (native order) plus the JSON that names it.

    ``family`` selects the fill-value rules: ``bool int uint float complex raw
    string bytes utf32 ntbytes rawbytes datetime timedelta object struct ml``. A ``complex``
    type with ``fields`` is a structured ``(real, imag)`` pair (``complex_bfloat16``, ...).
    """

    name: str
    dtype: np.dtype
    family: str
    configuration: Mapping[str, Any] | None = None
    json: JSON = field(default=None, compare=False)
    #: the fields of a ``struct`` in storage order, or ``real``/``imag`` of a complex pair (else empty)
    fields: tuple[StructField, ...] = ()

    def to_json(self) -> JSON:
        if self.json is not None:
            return self.json
        if self.configuration is None:
            return self.name
        return {"name": self.name, "configuration": dict(self.configuration)}

    def default_fill(self) -> Any:
        """The fill value used when none is given (zero / empty)."""
        if self.family == "string":
            return ""
        if self.family == "bytes":
            return b""
        # (datetime64/timedelta64 zero needs the dtype's unit, which ``type(0)`` lacks)
        return self.dtype.type(0) if self.dtype.kind not in "SUVMm" else np.zeros((), self.dtype)[()]

    # -- fill values (v3) -------------------------------------------------------
    def fill_from_json(self, value: JSON, loc: Loc = ("fill_value",)) -> Any:
        """Parse a v3 ``fill_value`` for this type; raise MetadataError naming ``loc``."""
        try:
            if self.family == "struct":  # (its fields' problems name the field)
                return _fill_struct(self, value, loc)
            return _FILL_PARSERS[self.family](self, value)
        except MetadataError:
            raise
        except (ValueError, TypeError, OverflowError, KeyError) as exc:
            raise MetadataError(
                [Problem(loc, f"invalid fill value {value!r} for data type {self.name}: {_with_expected(self, exc)}")]
            ) from None

    def fill_to_json(self, value: Any) -> JSON:
        """The v3 JSON form of a fill value of this type (bit-exact for floats)."""
        return _FILL_WRITERS[self.family](self, value)

    def cast_fill(self, value: Any) -> Any:
        """Coerce a user-given Python/numpy fill value to this type's scalar."""
        if value is None:
            return self.default_fill()
        if self.family == "bytes" and isinstance(value, list):  # the JSON list of byte values
            return self.fill_from_json(value)
        if self.family in ("string", "bytes"):
            return value
        if isinstance(value, str) and self.family in ("float", "complex", "ml"):
            return self.fill_from_json(value)
        if isinstance(value, (list, tuple)) and self.family == "complex":  # [real, imag], JSON forms allowed
            return self.fill_from_json(list(value))
        if self.family == "complex" and self.fields and not isinstance(value, (np.void, np.ndarray)):
            try:
                c = complex(value)
            except (ValueError, TypeError) as exc:
                raise MetadataError([Problem(("fill_value",), f"{value!r} is not a {self.name} value: {exc}")]) \
                    from None
            value = (c.real, c.imag)
        if self.family == "struct" and isinstance(value, Mapping):
            missing = [f.name for f in self.fields if f.name not in value]
            if missing:
                raise MetadataError([Problem(("fill_value",), f"no value for struct fields {missing}")])
            value = tuple(f.data_type.cast_fill(value[f.name]) for f in self.fields)
        if self.fields:
            try:
                return np.array(value, dtype=self.dtype)[()]
            except (ValueError, TypeError) as exc:
                raise MetadataError([Problem(("fill_value",), f"{value!r} is not a {self.name} value: {exc}")]) \
                    from None
        try:
            if self.family in ("raw", "rawbytes"):
                return np.void(bytes(value).ljust(self.dtype.itemsize, b"\0"))
            return np.array(value).astype(self.dtype)[()]
        except (ValueError, TypeError, OverflowError) as exc:
            raise MetadataError([Problem(("fill_value",), f"{value!r} is not a valid {self.name} value: {exc}")]) from None


# -- fill parsing --------------------------------------------------------------


def _with_expected(t: DataType, exc: Exception) -> str:
    """The reason a fill value was refused, with what its data type takes when the reason
    (numpy's, say) does not say."""
    reason = str(exc)
    if "expected" in reason:
        return reason
    dt = t.dtype
    if dt.kind in "iu":
        info = np.iinfo(dt)
        takes = f"an integer from {info.min} to {info.max}"
    elif dt.kind == "f":
        takes = 'a number, "NaN", "Infinity", "-Infinity" or "0x..." hex'
    elif dt.kind == "c":
        takes = '[real, imaginary], each a number, "NaN", "Infinity", "-Infinity" or "0x..." hex'
    elif dt.kind in "Mm":
        takes = 'an integer count of the unit, or "NaT"'
    elif dt.kind == "b":
        takes = "true or false"
    elif dt.kind == "U":
        takes = "a string"
    else:
        takes = f"the base64 of {dt.itemsize} bytes"
    return f"{reason} (expected {takes})"


def _parse_float(dt: np.dtype, value: JSON) -> Any:
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


def _parse_int(dt: np.dtype, value: JSON) -> Any:
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


def _fill_bool(t: DataType, v: JSON) -> Any:
    if not isinstance(v, bool):
        raise TypeError("expected true or false")
    return np.bool_(v)


def _fill_int(t: DataType, v: JSON) -> Any:
    return _parse_int(t.dtype, v)


def _fill_float(t: DataType, v: JSON) -> Any:
    return _parse_float(t.dtype, v)


def _complex_part(t: DataType) -> np.dtype:
    """The dtype of the real and imaginary parts of a complex type."""
    return t.fields[0].data_type.dtype if t.fields else np.dtype(f"f{t.dtype.itemsize // 2}")


def _fill_complex(t: DataType, v: JSON) -> Any:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise TypeError("expected [real, imaginary]")
    part = _complex_part(t)
    real, imag = _parse_float(part, v[0]), _parse_float(part, v[1])
    if t.fields:
        return np.array((real, imag), dtype=t.dtype)[()]
    out = np.zeros((), t.dtype)
    out.real, out.imag = real, imag
    return out[()]


def _fill_raw(t: DataType, v: JSON) -> Any:
    if not isinstance(v, list) or len(v) != t.dtype.itemsize:
        raise TypeError(f"expected a list of {t.dtype.itemsize} byte values")
    return np.void(bytes(int(b) for b in v))


def _fill_string(t: DataType, v: JSON) -> Any:
    if not isinstance(v, str):
        raise TypeError("expected a string")
    return v


def _fill_bytes(t: DataType, v: JSON) -> Any:
    if isinstance(v, list):
        return bytes(v)
    if not isinstance(v, str):
        raise TypeError("expected a base64 string")
    return base64.b64decode(v, validate=True)


def _fill_utf32(t: DataType, v: JSON) -> Any:
    if not isinstance(v, str):
        raise TypeError("expected a string")
    return np.str_(v)


def _fill_ntbytes(t: DataType, v: JSON) -> Any:
    return np.bytes_(_fill_bytes(t, v))


def _fill_rawbytes(t: DataType, v: JSON) -> Any:
    raw = _fill_bytes(t, v)
    if len(raw) not in (0, t.dtype.itemsize):
        raise ValueError(f"expected {t.dtype.itemsize} bytes")
    return np.void(raw.ljust(t.dtype.itemsize, b"\0"))


def _fill_time(t: DataType, v: JSON) -> Any:
    if isinstance(v, str) and v == "NaT":
        return t.dtype.type("NaT")
    return np.array(_parse_int(np.dtype("i8"), v), dtype="i8").view(t.dtype)[()]


def _fill_ml(t: DataType, v: JSON) -> Any:
    if t.dtype.kind in "iu" or t.name in ("int4", "uint4", "int2", "uint2"):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("expected an integer")
        return t.dtype.type(v)
    return _parse_float(t.dtype, v)


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


_FILL_PARSERS: dict[str, Callable[[DataType, JSON], Any]] = {
    "bool": _fill_bool,
    "int": _fill_int,
    "uint": _fill_int,
    "float": _fill_float,
    "complex": _fill_complex,
    "raw": _fill_raw,
    "string": _fill_string,
    "bytes": _fill_bytes,
    "utf32": _fill_utf32,
    "ntbytes": _fill_ntbytes,
    "rawbytes": _fill_rawbytes,
    "datetime": _fill_time,
    "timedelta": _fill_time,
    "ml": _fill_ml,
}

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


def _w_complex(t: DataType, v: Any) -> JSON:
    part = _complex_part(t)
    c = np.asarray(v, dtype=t.dtype)
    real, imag = (c["real"], c["imag"]) if t.fields else (c.real, c.imag)
    return [float_to_json(real, part), float_to_json(imag, part)]


def _w_raw(t: DataType, v: Any) -> JSON:
    return list(bytes(np.asarray(v, dtype=t.dtype).tobytes()))


def _w_str(t: DataType, v: Any) -> JSON:
    return str(v)


def _w_b64(t: DataType, v: Any) -> JSON:
    raw = v if isinstance(v, bytes) else np.asarray(v, dtype=t.dtype).tobytes()
    if t.family == "ntbytes":
        raw = raw.rstrip(b"\0")
    return base64.b64encode(raw).decode("ascii")


def _w_time(t: DataType, v: Any) -> JSON:
    return int(np.asarray(v, dtype=t.dtype).view("i8"))


def _w_ml(t: DataType, v: Any) -> JSON:
    if t.name in ("int4", "uint4", "int2", "uint2"):
        return int(np.asarray(v, dtype=t.dtype).astype(np.int64))
    return float_to_json(v, t.dtype)


def _w_struct(t: DataType, v: Any) -> JSON:
    scalar = np.asarray(v, dtype=t.dtype)
    return {f.name: f.data_type.fill_to_json(scalar[f.name][()]) for f in t.fields}


_FILL_WRITERS: dict[str, Callable[[DataType, Any], JSON]] = {
    "bool": _w_bool,
    "int": _w_int,
    "uint": _w_int,
    "float": _w_float,
    "complex": _w_complex,
    "raw": _w_raw,
    "string": _w_str,
    "bytes": _w_b64,
    "utf32": _w_str,
    "ntbytes": _w_b64,
    "rawbytes": _w_b64,
    "datetime": _w_time,
    "timedelta": _w_time,
    "ml": _w_ml,
    "struct": _w_struct,
}

# -- v3 data type parsing -------------------------------------------------------------

_V3Factory = Callable[[Mapping[str, Any] | None, Loc], DataType]
_V3_REGISTRY: dict[str, _V3Factory] = {}
_entry_points_loaded = False


#: data types given by name alone, already parsed (see ``parse_data_type_v3``)
_BY_NAME: dict[str, DataType] = {}


def register_data_type(name: str, factory: _V3Factory) -> None:
    """Register a v3 data type: ``factory(configuration, loc) -> DataType``."""
    _V3_REGISTRY[name] = factory
    _BY_NAME.pop(name, None)


def _family_of(dt: np.dtype) -> str:
    return {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}[dt.kind]


def _numeric(name: str, code: str) -> _V3Factory:
    dt = np.dtype(code)
    data_type = DataType(name, dt, _family_of(dt))  # immutable: one instance serves every array

    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        return data_type

    return make


def _length_bytes(config: Mapping[str, Any] | None, loc: Loc, multiple: int = 1) -> int:
    n = (config or {}).get("length_bytes")
    if isinstance(n, bool) or not isinstance(n, int) or not 0 < n < 2**31 or n % multiple:
        raise MetadataError([Problem((*loc, "configuration", "length_bytes"),
                                     f"expected a positive multiple of {multiple} below 2**31 (numpy's largest "
                                     f"item), got {n!r}")])
    return n


def _fixed_utf32(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
    n = _length_bytes(config, loc, 4)
    return DataType("fixed_length_utf32", np.dtype(f"<U{n // 4}"), "utf32", {"length_bytes": n})


def _null_terminated(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
    n = _length_bytes(config, loc)
    return DataType("null_terminated_bytes", np.dtype(f"S{n}"), "ntbytes", {"length_bytes": n})


def _raw_bytes(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
    n = _length_bytes(config, loc)
    return DataType("raw_bytes", np.dtype(f"V{n}"), "rawbytes", {"length_bytes": n})


_TIME_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic")


def _time(kind: str) -> _V3Factory:
    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        config = dict(config or {})
        unit = config.get("unit")
        scale = config.get("scale_factor", 1)
        if unit not in _TIME_UNITS:
            raise MetadataError([Problem((*loc, "configuration", "unit"), f"expected a numpy time unit, got {unit!r}")])
        if isinstance(scale, bool) or not isinstance(scale, int) or not 1 <= scale < 2**31:
            raise MetadataError([Problem((*loc, "configuration", "scale_factor"),
                                         f"expected a positive integer below 2**31 (numpy's limit), got {scale!r}")])
        code = "M8" if kind == "datetime" else "m8"
        unit_str = "" if unit == "generic" else (f"{scale}{unit}" if scale != 1 else unit)
        dt = np.dtype(f"<{code}[{unit_str}]") if unit_str else np.dtype(f"<{code}")
        return DataType(f"numpy.{kind}64", dt, kind, {"unit": unit, "scale_factor": scale})

    return make


def _variable(name: str, family: str) -> _V3Factory:
    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        return DataType(name, np.dtype(object), family)

    return make


def _ml_dtype(part: str, name: str, loc: Loc) -> np.dtype:
    """ml_dtypes' type ``part``, needed by data type ``name``."""
    try:
        import ml_dtypes
    except ImportError:
        raise UnsupportedDataTypeError(
            [Problem(loc, f"data type {name!r} needs the optional ml_dtypes package: pip install 'zarrdask[ml]'")]
        ) from None
    found = getattr(ml_dtypes, part, None)
    if found is None:
        raise UnsupportedDataTypeError([Problem(loc, f"data type {name!r} needs ml_dtypes >= 0.5 (installed: "
                                                     f"{ml_dtypes.__version__}): pip install -U 'zarrdask[ml]'")])
    return np.dtype(found)


def _ml(name: str) -> _V3Factory:
    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        return DataType(name, _ml_dtype(name, name, loc), "ml")

    return make


def _complex_pair(part: str) -> _V3Factory:
    """``complex_<part>``: a structured ``(real, imag)`` pair of ``part`` values."""
    name = f"complex_{part}"

    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        if part in _V3_NUMERIC:
            part_type = DataType(part, np.dtype(_V3_NUMERIC[part]), "float")
        else:
            part_type = DataType(part, _ml_dtype(part, name, loc), "ml")
        pair = (StructField("real", part_type), StructField("imag", part_type))
        return DataType(name, np.dtype([("real", part_type.dtype), ("imag", part_type.dtype)]), "complex",
                        fields=pair)

    return make


def _struct(name: str) -> _V3Factory:
    """``struct``, and its legacy name ``structured`` (which also allows ``[name, type]`` fields)."""

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
            field_dtype = parse_data_type_v3(field_type, type_loc)
            if field_dtype.dtype.kind == "O":
                raise MetadataError([Problem(type_loc, f"a struct field needs a fixed-size data type, not "
                                                       f"{field_dtype.name!r}")])
            fields.append(StructField(field_name, field_dtype))
        dtype = np.dtype([(f.name, f.data_type.dtype) for f in fields])
        return DataType(name, dtype, "struct", {"fields": [{"name": f.name, "data_type": f.data_type.to_json()}
                                                           for f in fields]}, fields=tuple(fields))

    return make


for _name, _code in {**_V3_NUMERIC, **_COMPLEX_ALIASES}.items():
    register_data_type(_name, _numeric(_name, _code))
for _name in _ML_DTYPES:
    register_data_type(_name, _ml(_name))
for _name in _COMPLEX_PARTS:
    register_data_type(f"complex_{_name}", _complex_pair(_name))
register_data_type("fixed_length_utf32", _fixed_utf32)
register_data_type("null_terminated_bytes", _null_terminated)
register_data_type("raw_bytes", _raw_bytes)
register_data_type("numpy.datetime64", _time("datetime"))
register_data_type("numpy.timedelta64", _time("timedelta"))
register_data_type("string", _variable("string", "string"))
register_data_type("variable_length_bytes", _variable("variable_length_bytes", "bytes"))
register_data_type("bytes", _variable("bytes", "bytes"))
register_data_type("struct", _struct("struct"))
register_data_type("structured", _struct("structured"))
_RAW = re.compile(r"^r(\d+)$")


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group="zarrdask.data_types"):
        _V3_REGISTRY.setdefault(ep.name, ep.load())


def parse_data_type_v3(value: JSON, loc: Loc = ("data_type",)) -> DataType:
    """Parse a v3 ``data_type`` (a name or ``{"name", "configuration"}``).

    Data types are always must-understand (spec 3.1): an unknown one is rejected
    even when it says ``"must_understand": false``. Types given by name alone are
    parsed once (``DataType`` is immutable): a dataset opens many arrays of one type.
    """
    if type(value) is str:
        known = _BY_NAME.get(value)
        if known is None:
            known = _parse_data_type_v3(value, loc)
            if len(_BY_NAME) < 256:  # bounded: ``r<bits>`` names are unlimited
                _BY_NAME[value] = known
        return known
    return _parse_data_type_v3(value, loc)


def _parse_data_type_v3(value: JSON, loc: Loc) -> DataType:
    config: Mapping[str, Any] | None = None
    if isinstance(value, str):
        name = value
    elif isinstance(value, Mapping) and isinstance(value.get("name"), str):
        name = value["name"]
        config = value.get("configuration")
        if config is not None and not isinstance(config, Mapping):
            raise MetadataError([Problem((*loc, "configuration"), "expected an object")])
        extra = set(value) - {"name", "configuration", "must_understand"}
        if extra:
            raise MetadataError([Problem(loc, f"unexpected fields {sorted(extra)} in data type object")])
    else:
        raise MetadataError([Problem(loc, f"expected a data type name or object, got {value!r}")])
    raw = _RAW.match(name)
    if raw:
        bits = int(raw.group(1))
        if bits <= 0 or bits % 8:
            raise MetadataError([Problem(loc, f"raw data type {name!r} must have a positive multiple of 8 bits")])
        return DataType(name, np.dtype(f"V{bits // 8}"), "raw", json=value)
    factory = _V3_REGISTRY.get(name)
    if factory is None:
        _load_entry_points()
        factory = _V3_REGISTRY.get(name)
    if factory is None:
        raise UnknownExtensionError(
            [Problem(loc, f"unknown data type {name!r}{_nearest_v3(name)} (data types are "
                     f"must-understand); known: {', '.join(sorted(_V3_REGISTRY))}, r<bits>")]
        )
    dtype = factory(config, loc)
    return DataType(dtype.name, dtype.dtype, dtype.family, dtype.configuration, json=value, fields=dtype.fields)


def _dtype_names() -> list[str]:
    """The data type spellings a user may mean: v3 names, and the numpy names and
    typestrs of the dtypes zarrdask can store (for "did you mean")."""
    names = set(_V3_REGISTRY)
    for name in np.sctypeDict:
        if isinstance(name, str) and len(name) > 1:
            dt = np.dtype(name)
            if dt.str[1:] in _NUMPY_TO_V3 or dt.kind in "MmOSU":
                names.update((name, dt.str))
    return sorted(names)


def _nearest_dtype(name: str, names: list[str]) -> str:
    """`` (did you mean 'x'?)`` for a data type spelling among ``names``: one with the same
    letters first (transposed letters, as in ``f<4`` or ``flaot32``), else the closest."""
    same = [n for n in names if sorted(n) == sorted(name)]
    return f" (did you mean {same[0]!r}?)" if same else did_you_mean(name, names)


def _nearest_v3(name: str) -> str:
    """`` (did you mean 'x'?)`` for an unknown v3 name: the v3 name of a numpy spelling
    (``<f4`` -> ``float32``), else the nearest v3 name."""
    try:
        with warnings.catch_warnings():  # numpy warns about deprecated aliases ("a")
            warnings.simplefilter("ignore")
            v3 = _NUMPY_TO_V3.get(np.dtype(name).str[1:])
    except (TypeError, ValueError, SyntaxError, KeyError, IndexError, OverflowError):  # numpy's parser
        v3 = None
    return f" (did you mean {v3!r}?)" if v3 else _nearest_dtype(name, sorted(_V3_REGISTRY))


def as_numpy_dtype(dtype: Any, loc: Loc = ("data_type",)) -> np.dtype:
    """``np.dtype(dtype)``; what numpy does not understand is an error naming the nearest name."""
    try:
        return np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError, KeyError, IndexError, OverflowError) as exc:  # numpy's parser
        hint = _nearest_dtype(dtype, _dtype_names()) if isinstance(dtype, str) else ""
        raise UnsupportedDataTypeError([Problem(loc, f"{dtype!r} is not a data type{hint}: {exc}")]) from None


def data_type_from_numpy(dtype: Any, zarr_format: int = 3) -> DataType:
    """The data type zarrdask writes for a numpy dtype (or dtype-like / v3 name)."""
    if zarr_format == 2:
        dt = as_numpy_dtype(dtype, ("dtype",))
        return parse_dtype_v2(dt.str if dt.fields is None else dt.descr)
    if isinstance(dtype, str) and (dtype in _V3_REGISTRY or _RAW.match(dtype)):
        return parse_data_type_v3(dtype)
    if dtype is str:
        return parse_data_type_v3("string")
    if dtype is bytes:
        return parse_data_type_v3("variable_length_bytes")
    dt = as_numpy_dtype(dtype)
    if dt.name in _ML_DTYPES:
        return parse_data_type_v3(dt.name)
    if _is_complex_pair(dt):
        return parse_data_type_v3(f"complex_{dt['real'].name}")
    if dt.kind in "biufc":
        return parse_data_type_v3(_NUMPY_TO_V3[dt.str[1:]])
    if dt.kind == "U":
        return parse_data_type_v3({"name": "fixed_length_utf32", "configuration": {"length_bytes": dt.itemsize}})
    if dt.kind == "S":
        return parse_data_type_v3({"name": "null_terminated_bytes", "configuration": {"length_bytes": dt.itemsize}})
    if dt.kind == "V" and dt.fields is None:
        return parse_data_type_v3({"name": "raw_bytes", "configuration": {"length_bytes": dt.itemsize}})
    if dt.fields is not None:  # packed whatever numpy's layout (numpy's alignment padding is not stored)
        if any(dt[n].shape for n in dt.names):
            raise UnsupportedDataTypeError([Problem(("data_type",), f"struct fields cannot be subarrays: {dt!r}")])
        return parse_data_type_v3({"name": "struct", "configuration": {"fields": [
            {"name": n, "data_type": data_type_from_numpy(dt[n]).to_json()} for n in dt.names]}})
    if dt.kind in "Mm":
        unit, scale = np.datetime_data(dt)
        name = "numpy.datetime64" if dt.kind == "M" else "numpy.timedelta64"
        return parse_data_type_v3({"name": name, "configuration": {"unit": unit, "scale_factor": scale}})
    if dt.kind == "O":
        return parse_data_type_v3("string")
    if dt.kind == "T":  # numpy StringDType
        return parse_data_type_v3("string")
    raise UnsupportedDataTypeError(f"numpy dtype {dt!r} has no Zarr v3 data type")


def _is_complex_pair(dt: np.dtype) -> bool:
    """A packed ``(real, imag)`` structured dtype of a part numpy has no complex type of."""
    return (dt.names == ("real", "imag") and dt["real"] == dt["imag"] and dt["real"].name in _COMPLEX_PARTS
            and dt.itemsize == 2 * dt["real"].itemsize)


# -- v2 ------------------------------------------------------------------------------


def parse_dtype_v2(value: JSON, loc: Loc = ("dtype",)) -> DataType:
    """Parse a v2 ``dtype`` (typestr or structured list). ``name`` keeps the stored
    typestr (with byte order); ``dtype`` is the native-order in-memory dtype."""
    expected = "expected a numpy typestr such as '<f4' or a list of [name, typestr] fields"
    if not isinstance(value, (str, list)):
        raise MetadataError([Problem(loc, f"{expected}, got {value!r}")])
    try:
        stored = np.dtype([tuple(f) for f in value]) if isinstance(value, list) else np.dtype(value)
    except (TypeError, ValueError, SyntaxError, KeyError, IndexError, OverflowError) as exc:  # numpy's parser
        hint = _nearest_dtype(value, _dtype_names()) if isinstance(value, str) else ""
        raise MetadataError([Problem(loc, f"{expected}, got {value!r}{hint} (numpy: {exc})")]) from None
    if stored.kind == "O":
        return DataType(value, stored, "object", json=value)
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


def stored_dtype_v2(dtype: DataType) -> np.dtype:
    """The on-disk numpy dtype of a v2 data type (with its byte order)."""
    j = dtype.json
    return np.dtype([tuple(f) for f in j]) if isinstance(j, list) else np.dtype(j)


def fill_from_json_v2(dtype: DataType, value: JSON, loc: Loc = ("fill_value",)) -> Any:
    """Parse a v2 ``fill_value``; ``None`` stays ``None`` (no fill value)."""
    if value is None:
        return None
    fam = dtype.family
    try:
        if fam == "object":
            return value
        if fam in ("float", "complex"):
            if fam == "complex" and isinstance(value, list):
                return _fill_complex(dtype, value)
            return _parse_float(dtype.dtype, value) if fam == "float" else dtype.dtype.type(value)
        if fam in ("int", "uint"):
            return _parse_int(dtype.dtype, value)
        if fam == "bool":
            return np.bool_(value)
        if fam in ("datetime", "timedelta"):
            return _fill_time(dtype, value)
        if fam == "utf32":
            return np.str_(value)
        if fam in ("ntbytes", "rawbytes"):
            raw = base64.b64decode(value) if isinstance(value, str) else bytes(value)
            if fam == "ntbytes":
                return np.bytes_(raw)
            return np.frombuffer(raw.ljust(dtype.dtype.itemsize, b"\0"), dtype=stored_dtype_v2(dtype))[0].astype(
                dtype.dtype
            )
    except (ValueError, TypeError, OverflowError) as exc:
        raise MetadataError([Problem(loc, f"invalid fill value {value!r} for dtype {dtype.name}: "
                                          f"{_with_expected(dtype, exc)}")]) from None
    raise MetadataError([Problem(loc, f"cannot parse fill value {value!r} for dtype {dtype.name}")])


def fill_to_json_v2(dtype: DataType, value: Any) -> JSON:
    """The v2 JSON form of a fill value (``None`` for no fill value)."""
    if value is None:
        return None
    fam = dtype.family
    if fam == "object":
        return value if isinstance(value, (str, int, float)) or value is None else None
    if fam == "float":
        j = float_to_json(value, dtype.dtype)
        return "NaN" if isinstance(j, str) and j.startswith("0x") else j
    if fam == "complex":
        return _w_complex(dtype, value)
    if fam in ("ntbytes", "rawbytes"):
        return base64.b64encode(np.asarray(value, dtype=stored_dtype_v2(dtype)).tobytes()).decode("ascii")
    return _FILL_WRITERS[fam](dtype, value)
