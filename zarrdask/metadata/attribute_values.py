"""Attribute values as a node's document holds them: JSON values (NaN and ±Infinity
included, as Python's json and zarr-python write them), with numpy scalars and arrays
taken as the Python values they equal exactly. Anything a document would hold as another
value (a dict key that is not a string, a float wider than 64 bits that would round) or
cannot hold at all (bytes, dates, complex numbers, other objects) is refused before any
document is written, by an error that names where the value sits and what to pass."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ..arguments import shown
from ..errors import InvalidTypeError, InvalidValueError

__all__ = ["json_attributes", "non_finite_places"]

#: numpy kinds whose items ``tolist()`` gives as Python values equal to them (floats up to
#: 64 bits; wider ones are checked)
_EXACT_KINDS = frozenset("biufU")
_FIXES = {
    "M": "a string, e.g. str(value) or np.datetime_as_string(value)",
    "m": "a number of some unit, e.g. value / np.timedelta64(1, 's')",
    "c": "the parts as a list, e.g. [value.real, value.imag]",
    "S": "text, e.g. value.decode(), or a list of ints",
    "V": "a list or dict of its fields' values",
}


def json_attributes(values: Mapping[Any, Any], where: str = "attributes") -> dict[str, Any]:
    """``values`` as JSON-native Python values (dict, list, str, int, float, bool, None):
    numpy scalars and arrays as the Python values they equal, tuples as lists.
    InvalidTypeError or InvalidValueError, naming the place (``attributes['a'][0]``), for
    what a document cannot hold unchanged."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise InvalidTypeError(
                f"{where}: key {key!r} ({type(key).__name__}) is not a string: a JSON object's keys are "
                f"strings, and the document would hold it as another key; pass it as one, e.g. {str(key)!r}")
        out[str(key)] = _value(value, f"{where}[{key!r}]")
    return out


def _value(value: Any, where: str) -> Any:
    if value is None:
        return None
    for base in (bool, int, float, str):  # (subclasses such as np.float64 and np.str_ as their base)
        if isinstance(value, base):
            return value if type(value) is base else base(value)
    if isinstance(value, Mapping):
        return json_attributes(value, where)
    if isinstance(value, (list, tuple)):
        return [_value(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, (np.ndarray, np.generic)):
        return _numpy(np.asarray(value), value, where)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidTypeError(f"{where}: {shown(value)} is bytes, which JSON cannot hold; pass text "
                               "(value.decode()) or a list of ints")
    raise InvalidTypeError(f"{where}: {shown(value)} ({type(value).__name__}) has no JSON form; pass a str, "
                           "number, bool, None, list or dict")


def _numpy(array: np.ndarray, value: Any, where: str) -> Any:
    """A numpy scalar or array as the Python values its items equal (nested lists)."""
    kind = array.dtype.kind
    if kind == "O":
        return _value(array.tolist(), where)
    if kind not in _EXACT_KINDS:
        fix = _FIXES.get(kind, "a str, number, bool, None, list or dict")
        raise InvalidTypeError(f"{where}: {shown(value)} (numpy {array.dtype}) has no JSON form; pass {fix}")
    if kind == "f" and array.dtype.itemsize > 8:
        narrow = array.astype(np.float64)
        if not np.array_equal(narrow, array, equal_nan=True):
            raise InvalidValueError(f"{where}: {shown(value)} (numpy {array.dtype}) does not fit a 64-bit float, "
                                    "which is all a JSON number holds here; pass float(value) to accept the "
                                    "rounding, or str(value) to keep every digit")
        array = narrow
    return array.tolist()


def non_finite_places(values: Any, where: str = "attributes") -> Iterator[str]:
    """The places (``attributes['a'][0]``) of NaN and ±Infinity in parsed attribute values:
    a document holds them as the bare tokens ``NaN`` and ``Infinity``, which Python's json
    and zarr-python read and strict JSON readers (TensorStore, zarrs, browsers) refuse."""
    if isinstance(values, float) and not math.isfinite(values):
        yield where
    elif isinstance(values, Mapping):
        for key, value in values.items():
            yield from non_finite_places(value, f"{where}[{key!r}]")
    elif isinstance(values, list):
        for i, value in enumerate(values):
            yield from non_finite_places(value, f"{where}[{i}]")
