"""The data type zarrdask writes for a numpy dtype (or dtype-like, or v3 name)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import Problem, UnsupportedDataTypeError
from .ml import COMPLEX_PARTS, ML_DTYPES
from .model import DataType
from .numeric import NUMPY_TO_V3, V3_NUMERIC
from .registry import as_numpy_dtype, is_registered, parse_data_type_v3
from .text import RAW_NAME
from .v2 import parse_dtype_v2

__all__ = ["data_type_from_numpy"]


def data_type_from_numpy(dtype: Any, zarr_format: int = 3) -> DataType:
    """The data type zarrdask writes for a numpy dtype (or dtype-like / v3 name)."""
    if zarr_format == 2:
        dt = as_numpy_dtype(dtype, ("dtype",))
        return parse_dtype_v2(dt.str if dt.fields is None else dt.descr)
    if isinstance(dtype, str) and (is_registered(dtype) or RAW_NAME.match(dtype)):
        return parse_data_type_v3(dtype)
    if dtype is str:
        return parse_data_type_v3("string")
    if dtype is bytes:
        return parse_data_type_v3("variable_length_bytes")
    dt = as_numpy_dtype(dtype)
    if dt.name in ML_DTYPES:
        return parse_data_type_v3(dt.name)
    if _is_complex_pair(dt):
        return parse_data_type_v3(f"complex_{dt['real'].name}")
    if dt.kind in "biufc":
        return parse_data_type_v3(NUMPY_TO_V3.get(dt.str[1:]) or _no_numeric_type(dtype, dt))
    if dt.kind == "U":
        return parse_data_type_v3({"name": "fixed_length_utf32", "configuration": {"length_bytes": dt.itemsize}})
    if dt.kind == "S":
        return parse_data_type_v3({"name": "null_terminated_bytes", "configuration": {"length_bytes": dt.itemsize}})
    if dt.kind == "V" and dt.fields is None:
        return parse_data_type_v3({"name": "raw_bytes", "configuration": {"length_bytes": dt.itemsize}})
    if dt.fields is not None:  # packed whatever numpy's layout (numpy's alignment padding is not stored)
        if any(dt[n].shape for n in dt.names or ()):
            raise UnsupportedDataTypeError([Problem(("data_type",), f"struct fields cannot be subarrays: {dt!r}")])
        return parse_data_type_v3({"name": "struct", "configuration": {"fields": [
            {"name": n, "data_type": data_type_from_numpy(dt[n]).to_json()} for n in dt.names or ()]}})
    if dt.kind in "Mm":
        unit, scale = np.datetime_data(dt)
        name = "numpy.datetime64" if dt.kind == "M" else "numpy.timedelta64"
        return parse_data_type_v3({"name": name, "configuration": {"unit": unit, "scale_factor": scale}})
    if dt.kind == "O":
        return parse_data_type_v3("string")
    if dt.kind == "T":  # numpy StringDType
        return parse_data_type_v3("string")
    raise UnsupportedDataTypeError(f"numpy dtype {dt!r} has no Zarr v3 data type")


def _no_numeric_type(dtype: Any, dt: np.dtype) -> str:
    """Refuse a numpy number Zarr v3 has no type of (float128, complex256), naming the
    numeric types and the widest of its kind."""
    widest = max((n for n, c in V3_NUMERIC.items() if np.dtype(c).kind == dt.kind), key=lambda n: np.dtype(n).itemsize)
    raise UnsupportedDataTypeError([Problem(("dtype",), f"{dtype!r} (numpy {dt.name}) has no Zarr v3 data type; the "
                                            f"numeric ones are {', '.join(V3_NUMERIC)} (pass one, e.g. dtype={widest!r})")])


def _is_complex_pair(dt: np.dtype) -> bool:
    """A packed ``(real, imag)`` structured dtype of a part numpy has no complex type of."""
    return (dt.names == ("real", "imag") and dt["real"] == dt["imag"] and dt["real"].name in COMPLEX_PARTS
            and dt.itemsize == 2 * dt["real"].itemsize)
