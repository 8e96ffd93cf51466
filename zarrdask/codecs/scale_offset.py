"""``scale_offset`` (array -> array): ``out = (in - offset) * scale``, decoded as
``in / scale + offset``, in the arithmetic of the array's data type.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/scale_offset
Example: ``{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}``.
``offset`` and ``scale`` are JSON-encoded like fill values of the input data type (so
``"NaN"``/hex forms are accepted for floats); missing ones are 0 and 1. A value the data
type cannot represent (an integer overflow, an inexact integer division) is an error, as
the spec requires; the fill value goes through the same transformation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CodecError
from ._config import check_keys, config_error
from .base import ArrayArrayCodec, ChunkSpec, Loc
from .registry import register_codec


@register_codec
class ScaleOffsetCodec(ArrayArrayCodec):
    name = "scale_offset"

    def __init__(self, offset: Any = None, scale: Any = None) -> None:
        self.offset_json = offset  # JSON forms, decoded against the data type in validate()
        self.scale_json = scale
        self._offset: Any = 0
        self._scale: Any = 1

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> ScaleOffsetCodec:
        check_keys(configuration, {"offset", "scale"}, loc)
        return cls(configuration.get("offset"), configuration.get("scale"))

    def to_json(self) -> dict[str, Any]:
        config = {k: v for k, v in (("offset", self.offset_json), ("scale", self.scale_json)) if v is not None}
        return {"name": self.name, "configuration": config} if config else {"name": self.name}

    def validate(self, spec: ChunkSpec, loc: Loc) -> ScaleOffsetCodec:
        kind = spec.dtype.dtype.kind
        if kind not in "iuf":
            raise config_error(loc, f"defined for integer and floating-point data, not {spec.dtype.name}")
        prepared = ScaleOffsetCodec(self.offset_json, self.scale_json)
        for attr, value, identity in (("_offset", self.offset_json, 0), ("_scale", self.scale_json, 1)):
            if value is None:
                setattr(prepared, attr, spec.dtype.dtype.type(identity))
                continue
            try:
                setattr(prepared, attr, spec.dtype.fill_from_json(value, (*loc, "configuration", attr[1:])))
            except Exception as exc:  # noqa: BLE001 - the data type says why
                raise config_error((*loc, "configuration", attr[1:]),
                                   f"not a value of {spec.dtype.name}: {exc}") from None
        if kind in "iu" and prepared._scale == 0:
            raise config_error((*loc, "configuration", "scale"), "an integer scale of 0 cannot be inverted")
        if spec.fill_value is not None:
            prepared._forward(np.asarray(spec.fill_value, dtype=spec.dtype.dtype))  # representable, or an error
        return prepared

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        fill = spec.fill_value
        if fill is not None:
            fill = self._forward(np.asarray(fill, dtype=spec.dtype.dtype))[()]
        return ChunkSpec(spec.shape, spec.dtype, fill)

    def _forward(self, array: np.ndarray) -> np.ndarray:
        if array.dtype.kind == "f":
            with np.errstate(all="ignore"):
                scaled: np.ndarray = ((array - self._offset) * self._scale).astype(array.dtype, copy=False)
            return scaled
        exact = (_wide(array, self._scale) - int(self._offset)) * int(self._scale)
        return _checked_int(exact, array.dtype, "encoding")

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return self._forward(np.asarray(array, dtype=spec.dtype.dtype))

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        if array.dtype.kind == "f":
            with np.errstate(all="ignore"):
                restored: np.ndarray = (array / self._scale + self._offset).astype(spec.dtype.dtype, copy=False)
            return restored
        scale = int(self._scale)
        values = _wide(array, scale)
        if scale != 1 and np.any(values % scale != 0):
            raise CodecError(f"scale_offset: {array.dtype} values not divisible by scale {scale} (corrupt chunk)")
        return _checked_int(values // scale + int(self._offset), spec.dtype.dtype, "decoding")


def _wide(array: np.ndarray, scale: Any) -> np.ndarray:
    """Integers widened so the codec's arithmetic is exact: int64 for types of up to 32 bits
    (with a scale below 2**29 no product overflows it), Python ints otherwise."""
    if array.dtype.itemsize <= 4 and abs(int(scale)) < 2**29:
        return array.astype(np.int64)
    return array.astype(object)


def _checked_int(values: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    """``values`` (Python ints) as ``dtype``, or an error when one does not fit."""
    values = np.asarray(values)
    info = np.iinfo(dtype)
    if values.size and (values.min() < info.min or values.max() > info.max):
        raise CodecError(f"scale_offset: {what} gives values outside {dtype} ([{info.min}, {info.max}])")
    return values.astype(dtype)
