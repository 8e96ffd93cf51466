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

One module per family (``numeric``, ``ml``, ``text``, ``times``, ``structs``) beside the model
(``model``), the v3 registry (``registry``), numpy -> data type (``from_numpy``) and v2
typestrs (``v2``); the names below are the package's public face.
"""

from .from_numpy import data_type_from_numpy
from .model import DataType, StructField
from .numeric import SUB_BYTE_BITS
from .registry import as_numpy_dtype, parse_data_type_v3, register_data_type
from .v2 import fill_from_json_v2, fill_to_json_v2, parse_dtype_v2, stored_dtype_v2

__all__ = [
    "DataType",
    "StructField",
    "SUB_BYTE_BITS",
    "as_numpy_dtype",
    "data_type_from_numpy",
    "fill_from_json_v2",
    "fill_to_json_v2",
    "parse_data_type_v3",
    "parse_dtype_v2",
    "register_data_type",
    "stored_dtype_v2",
]
