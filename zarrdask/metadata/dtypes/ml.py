"""The ml_dtypes data types (``bfloat16``, ``float8_*``, ``int4``, ...) and the ``complex_*``
types stored as structured ``(real, imag)`` pairs; they need the optional ``ml_dtypes``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import Problem, UnsupportedDataTypeError
from .model import FILL_PARSERS, FILL_WRITERS, JSON, DataType, Loc, StructField, V3Factory
from .numeric import V3_NUMERIC, float_to_json, parse_float

__all__ = ["COMPLEX_PARTS", "ML_DTYPES", "complex_pair_type", "ml_type"]

ML_DTYPES = (
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
#: the parts of the ``complex_<part>`` types stored as ``(real, imag)`` structured pairs
COMPLEX_PARTS = (
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
    dtype: np.dtype = np.dtype(found)
    return dtype


def ml_type(name: str) -> V3Factory:
    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        return DataType(name, _ml_dtype(name, name, loc), "ml")

    return make


def complex_pair_type(part: str) -> V3Factory:
    """``complex_<part>``: a structured ``(real, imag)`` pair of ``part`` values."""
    name = f"complex_{part}"

    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        if part in V3_NUMERIC:
            part_type = DataType(part, np.dtype(V3_NUMERIC[part]), "float")
        else:
            part_type = DataType(part, _ml_dtype(part, name, loc), "ml")
        pair = (StructField("real", part_type), StructField("imag", part_type))
        return DataType(name, np.dtype([("real", part_type.dtype), ("imag", part_type.dtype)]), "complex",
                        fields=pair)

    return make


def _fill_ml(t: DataType, v: JSON, loc: Loc) -> Any:
    if t.dtype.kind in "iu" or t.name in ("int4", "uint4", "int2", "uint2"):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("expected an integer")
        return t.dtype.type(v)
    return parse_float(t.dtype, v)


def _w_ml(t: DataType, v: Any) -> JSON:
    if t.name in ("int4", "uint4", "int2", "uint2"):
        return int(np.asarray(v, dtype=t.dtype).astype(np.int64))
    return float_to_json(v, t.dtype)


FILL_PARSERS.update(ml=_fill_ml)
FILL_WRITERS.update(ml=_w_ml)
