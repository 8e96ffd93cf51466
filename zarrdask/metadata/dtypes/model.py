"""The data type model: :class:`DataType` and the fill-value rules by family.

A :class:`DataType` is the in-memory view of a stored data type: a numpy dtype in
native byte order (byte order on disk is a codec concern), the JSON it came from,
and the rules for its fill value JSON. Fill values keep their bit patterns: a
``"0x7fc00001"`` NaN payload survives a read and a write unchanged. Each family module
(``numeric``, ``ml``, ``text``, ``times``, ``structs``) adds its rules to
``FILL_PARSERS`` and ``FILL_WRITERS``; the package imports them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InvalidValueError, MetadataError, Problem
from .casting import cast_values

__all__ = ["DataType", "FILL_PARSERS", "FILL_WRITERS", "JSON", "Loc", "StructField", "V3Factory", "with_expected"]

JSON = Any

Loc = tuple[str | int, ...]


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
        """The fill value used when none is given: zero / empty, and for dates and
        durations NaT (as zarr-python 3 creates them and reads a v2 array without one)."""
        if self.family == "string":
            return ""
        if self.family == "bytes":
            return b""
        if self.dtype.kind in "Mm":
            return np.array("NaT", dtype=self.dtype)[()]
        # (datetime64/timedelta64 zero needs the dtype's unit, which ``type(0)`` lacks)
        return self.dtype.type(0) if self.dtype.kind not in "SUVMm" else np.zeros((), self.dtype)[()]

    # -- fill values (v3) -------------------------------------------------------
    def fill_from_json(self, value: JSON, loc: Loc = ("fill_value",)) -> Any:
        """Parse a v3 ``fill_value`` for this type; raise MetadataError naming ``loc`` (a
        struct's field problems name the field)."""
        try:
            return FILL_PARSERS[self.family](self, value, loc)
        except MetadataError:
            raise
        except (ValueError, TypeError, OverflowError, KeyError) as exc:
            raise MetadataError(
                [Problem(loc, f"invalid fill value {value!r} for data type {self.name}: {with_expected(self, exc)}")]
            ) from None

    def fill_to_json(self, value: Any) -> JSON:
        """The v3 JSON form of a fill value of this type (bit-exact for floats)."""
        return FILL_WRITERS[self.family](self, value)

    def cast_fill(self, value: Any) -> Any:
        """A user-given Python/numpy fill value as this type's scalar; MetadataError when the
        type cannot hold it exactly (300 for uint8, NaN or 1.5 for an integer type)."""
        if value is None:
            return self.default_fill()
        if self.family == "bytes" and isinstance(value, list):  # the JSON list of byte values
            return self.fill_from_json(value)
        if self.family in ("string", "bytes"):
            item = str if self.family == "string" else bytes
            if not isinstance(value, item):  # (a string array's fill value is text: NaN or 5 would be read as items)
                raise MetadataError([Problem(("fill_value",), (
                    f"{value!r} is not {item.__name__}: data type {self.name} holds "
                    f"{'text' if item is str else 'bytes'} only; pass a {item.__name__} fill value "
                    f"({self.default_fill()!r}, the default, or another)"))])
            return str.__str__(value) if isinstance(value, str) else bytes.__bytes__(value)
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
        if self.family == "struct" and not isinstance(value, (np.void, np.ndarray)):
            value = self._field_fills(value)
        if self.fields:
            try:
                return np.array(value, dtype=self.dtype)[()]
            except (ValueError, TypeError, OverflowError) as exc:
                raise MetadataError([Problem(("fill_value",), f"{value!r} is not a {self.name} value: {exc}")]) \
                    from None
        if self.family in ("raw", "rawbytes"):
            return self._raw_fill(value)
        given = np.asarray(value) if not isinstance(value, (list, tuple)) else np.asarray(value, dtype=object)
        if given.ndim:  # (numpy would make an array of it, or read (None,) as NaN)
            default = self.default_fill()
            shown = default.item() if self.dtype.kind in "biufc" else default
            raise MetadataError([Problem(("fill_value",), (
                f"{value!r} is not one value: a fill value is the single {self.name} value unwritten elements "
                f"read as; pass one, such as {shown!r}"))])
        try:
            return cast_values(given, self.dtype)[()]
        except InvalidValueError as exc:  # (a value the type cannot hold exactly)
            such = np.asarray(value).dtype
            fix = f" such as {such}" if such.kind in "biufcMm" else ""
            raise MetadataError([Problem(("fill_value",), f"{exc}; pass a fill_value that {self.dtype} holds, or a "
                                                          f"data type that holds {value!r}{fix}")]) from None
        except (ValueError, TypeError, OverflowError) as exc:
            raise MetadataError([Problem(("fill_value",), f"{value!r} is not a valid {self.name} value: {exc}")]) from None

    def _raw_fill(self, value: Any) -> np.void:
        """A raw type's fill value: bytes (or a same-size ``np.void``) of at most its size,
        padded with zeros (``bytes(5)`` would be five zero bytes, so a number is refused), or
        the JSON list of its byte values."""
        n = self.dtype.itemsize
        if isinstance(value, list):
            return self.fill_from_json(value)  # type: ignore[no-any-return]
        data = value.tobytes() if isinstance(value, np.void) else value
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise MetadataError([Problem(("fill_value",), f"{value!r} is not bytes: data type {self.name} holds {n} "
                                                          f"raw bytes; pass bytes (at most {n}) or a list of {n} byte values")])
        data = bytes(data)
        if len(data) > n:
            raise MetadataError([Problem(("fill_value",), f"{data!r} is longer than data type {self.name} holds ({n} "
                                                          f"bytes); pass at most {n} bytes")])
        return np.void(data.ljust(n, b"\0"))

    def _field_fills(self, value: Any) -> tuple[Any, ...]:
        """A struct's fill value, field by field, each held exactly by its field's type (as
        :meth:`cast_fill` holds any fill value): a mapping by field name, a tuple or list in
        field order, or one value for every field (as numpy broadcasts a scalar)."""
        if isinstance(value, Mapping):
            missing = [f.name for f in self.fields if f.name not in value]
            if missing:
                raise MetadataError([Problem(("fill_value",), f"no value for struct fields {missing}")])
            values = [value[f.name] for f in self.fields]
        elif isinstance(value, (tuple, list)):
            if len(value) != len(self.fields):
                raise MetadataError([Problem(("fill_value",), (
                    f"{value!r} has {len(value)} values for a struct of {len(self.fields)} fields "
                    f"{[f.name for f in self.fields]}; give one per field, or a mapping by field name"))])
            values = list(value)
        else:
            values = [value] * len(self.fields)
        out = []
        for f, v in zip(self.fields, values):
            try:
                out.append(f.data_type.cast_fill(v))
            except MetadataError as exc:
                raise MetadataError([Problem(("fill_value", f.name), p.message) for p in exc.problems]) from None
        return tuple(out)


#: builds a v3 data type from its ``configuration`` (``loc`` names it in errors)
V3Factory = Callable[[Mapping[str, Any] | None, Loc], DataType]
#: a fill value's JSON -> its value, by family (``loc`` names the fill value in errors)
FILL_PARSERS: dict[str, Callable[[DataType, JSON, Loc], Any]] = {}
#: a fill value -> its JSON, by family
FILL_WRITERS: dict[str, Callable[[DataType, Any], JSON]] = {}


def with_expected(t: DataType, exc: Exception) -> str:
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
