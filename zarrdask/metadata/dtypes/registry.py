"""The v3 data type registry: name -> factory, the built-in types registered, extendable by
users (``register_data_type``, and the entry-point group ``zarrdask.data_types``); parsing a
v3 ``data_type``, and the nearest known name for a misspelt one."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

import numpy as np

from ...errors import MetadataError, Problem, UnknownExtensionError, UnsupportedDataTypeError
from ...keywords import did_you_mean
from .ml import COMPLEX_PARTS, ML_DTYPES, complex_pair_type, ml_type
from .model import JSON, DataType, Loc, V3Factory
from .numeric import COMPLEX_ALIASES, NUMPY_TO_V3, V3_NUMERIC, numeric_type
from .structs import struct_type
from .text import RAW_NAME, fixed_utf32, null_terminated, raw_bytes, variable_type
from .times import time_type

__all__ = ["as_numpy_dtype", "dtype_names", "is_registered", "nearest_dtype", "parse_data_type_v3",
           "register_data_type"]

_V3_REGISTRY: dict[str, V3Factory] = {}

_entry_points_loaded = False


#: data types given by name alone, already parsed (see ``parse_data_type_v3``)
_BY_NAME: dict[str, DataType] = {}


def register_data_type(name: str, factory: V3Factory) -> None:
    """Register a v3 data type: ``factory(configuration, loc) -> DataType``."""
    _V3_REGISTRY[name] = factory
    _BY_NAME.pop(name, None)


def is_registered(name: str) -> bool:
    """True when ``name`` is a registered v3 data type (entry points not loaded)."""
    return name in _V3_REGISTRY


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
    elif isinstance(value, Mapping):
        fields = ("configuration", "must_understand", "name")
        problems = [] if isinstance(value.get("name"), str) else [
            Problem((*loc, "name"), f"expected a data type name (a string), got {value.get('name')!r}")]
        problems += [Problem(loc, f"unexpected field {k!r}{did_you_mean(k, fields)} in a data type object; "
                                  f"allowed: {', '.join(map(repr, fields))}") for k in sorted(set(value) - set(fields))]
        if problems:
            raise MetadataError(problems)
        name = value["name"]
        config = value.get("configuration")
        if config is not None and not isinstance(config, Mapping):
            raise MetadataError([Problem((*loc, "configuration"), f"expected an object, got {config!r}")])
    else:
        raise MetadataError([Problem(loc, f"expected a data type name or object, got {value!r}")])
    raw = RAW_NAME.match(name)
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
    unexpected = sorted(set(config or {}) - set(dtype.configuration or {}))
    if unexpected:  # (as zarr-python refuses them; the data type's own fields are its configuration's)
        allowed = sorted(dtype.configuration or {})
        expected = f"expected only {allowed}" if allowed else "it takes none"
        raise MetadataError([Problem((*loc, "configuration"),
                                     f"unexpected fields {unexpected} for data type {name!r}; {expected}")])
    return DataType(dtype.name, dtype.dtype, dtype.family, dtype.configuration, json=value, fields=dtype.fields)


def dtype_names() -> list[str]:
    """The data type spellings a user may mean: v3 names, and the numpy names and
    typestrs of the dtypes zarrdask can store (for "did you mean")."""
    names = set(_V3_REGISTRY)
    for name in np.sctypeDict:
        if isinstance(name, str) and len(name) > 1:
            dt = np.dtype(name)
            if dt.str[1:] in NUMPY_TO_V3 or dt.kind in "MmOSU":
                names.update((name, dt.str))
    return sorted(names)


def nearest_dtype(name: str, names: list[str]) -> str:
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
            v3 = NUMPY_TO_V3.get(np.dtype(name).str[1:])
    except (TypeError, ValueError, SyntaxError, KeyError, IndexError, OverflowError):  # numpy's parser
        v3 = None
    return f" (did you mean {v3!r}?)" if v3 else nearest_dtype(name, sorted(_V3_REGISTRY))


def as_numpy_dtype(dtype: Any, loc: Loc = ("data_type",)) -> np.dtype:
    """``np.dtype(dtype)``; what numpy does not understand is an error naming the nearest name."""
    try:
        found: np.dtype = np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError, KeyError, IndexError, OverflowError) as exc:  # numpy's parser
        hint = nearest_dtype(dtype, dtype_names()) if isinstance(dtype, str) else ""
        raise UnsupportedDataTypeError([Problem(loc, f"{dtype!r} is not a data type{hint}: {exc}")]) from None
    return found


for _name, _code in {**V3_NUMERIC, **COMPLEX_ALIASES}.items():
    register_data_type(_name, numeric_type(_name, _code))
for _name in ML_DTYPES:
    register_data_type(_name, ml_type(_name))
for _name in COMPLEX_PARTS:
    register_data_type(f"complex_{_name}", complex_pair_type(_name))
register_data_type("fixed_length_utf32", fixed_utf32)
register_data_type("null_terminated_bytes", null_terminated)
register_data_type("raw_bytes", raw_bytes)
register_data_type("numpy.datetime64", time_type("datetime"))
register_data_type("numpy.timedelta64", time_type("timedelta"))
register_data_type("string", variable_type("string", "string"))
register_data_type("variable_length_bytes", variable_type("variable_length_bytes", "bytes"))
register_data_type("bytes", variable_type("bytes", "bytes"))
register_data_type("struct", struct_type("struct", parse_data_type_v3))
register_data_type("structured", struct_type("structured", parse_data_type_v3))
