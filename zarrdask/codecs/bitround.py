"""``bitround`` (array -> array): keep ``keepbits`` significant bits, round the rest to zero.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/bitround
Example: ``{"name": "bitround", "configuration": {"keepbits": 10}}``.

Floating-point numbers (float16/32/64, complex parts) keep ``keepbits`` mantissa bits, as
numcodecs' BitRound does; integers (and numpy datetimes/timedeltas, as int64) keep
``keepbits`` bits from their most significant set bit. Both round half to even on the bit
pattern, saturating at the all-ones pattern (so uint8 255 with 3 bits is 224), as the
spec's sample data and zarrs do. ``keepbits`` at or beyond the available bits changes
nothing. Decoding is the identity. ``numcodecs.bitround`` is the spec's deprecated alias,
read and written under that name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._casting import bit_length
from ._config import check_keys, config_error, get_int
from .base import ArrayArrayCodec, ChunkSpec, Loc
from .registry import register_codec

_MANTISSA = {"float16": 10, "float32": 23, "float64": 52, "complex64": 23, "complex128": 52}
_INTEGER_FAMILIES = ("int", "uint", "datetime", "timedelta")


@register_codec
class BitRoundCodec(ArrayArrayCodec):
    name = "bitround"
    numcodecs_ids = ("bitround",)  # (numcodecs' BitRound: floating-point data only)

    def __init__(self, keepbits: int) -> None:
        self.keepbits = keepbits

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> BitRoundCodec:
        check_keys(configuration, {"keepbits"}, loc)
        return cls(get_int(configuration, "keepbits", loc, low=0))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"keepbits": self.keepbits}}

    def validate(self, spec: ChunkSpec, loc: Loc) -> BitRoundCodec:
        if spec.dtype.name not in _MANTISSA and spec.dtype.family not in _INTEGER_FAMILIES:
            raise config_error(loc, f"bitround of {spec.dtype.name} data is not supported (float16/32/64, "
                                    "complex64/128, integers, numpy datetimes and timedeltas)")
        return self

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        array = np.ascontiguousarray(array, dtype=spec.dtype.dtype)
        width = array.dtype.itemsize if array.dtype.kind != "c" else array.dtype.itemsize // 2
        bits = array.view(f"u{width}")
        mantissa = _MANTISSA.get(spec.dtype.name)
        available = bit_length(bits) if mantissa is None else np.full(bits.shape, mantissa, dtype=bits.dtype)
        return _round(bits, available, self.keepbits).view(array.dtype)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array


@register_codec
class NumcodecsBitRoundCodec(BitRoundCodec):
    """The deprecated alias, kept under its own name so rewritten metadata keeps it."""

    name = "numcodecs.bitround"


def _round(bits: np.ndarray, available: np.ndarray, keepbits: int) -> np.ndarray:
    """Round the unsigned patterns ``bits`` to ``keepbits`` of their ``available`` low bits
    (half to even, saturating)."""
    t = bits.dtype.type
    rounds = available > keepbits
    drop = np.where(rounds, available - t(min(keepbits, 2**62)), t(1)).astype(bits.dtype)
    top = np.iinfo(bits.dtype).max
    mask = (t(top) >> drop) << drop
    add = ((bits >> drop) & t(1)) + ((t(1) << (drop - t(1))) - t(1))
    total = np.where(bits > t(top) - add, t(top), bits + add)
    return np.where(rounds, total & mask, bits)
