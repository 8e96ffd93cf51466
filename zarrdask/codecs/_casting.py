"""Value casts between integer and floating-point data types with the rounding and
out-of-range rules of the ``cast_value`` codec (its ``Procedure`` section).

Every result is exact arithmetic on the values, never a C cast that rounds twice:

* float -> float: the input (exact in float64, the widest supported float) is bracketed by
  the two neighbouring target values, found on the target's magnitude bit ladder; the
  rounding mode picks one. One step past the largest finite value is the "overflow" value
  (2**(emax+1) for IEEE types): rounding as with an unbounded exponent, a value rounded to
  it, or at or beyond it in any mode, overflows (IEEE 754's overflow rule).
* int -> float: the magnitude as uint64 is cut to the target's precision in integer
  arithmetic (``lo``/``hi`` and the remainder decide ties exactly).
* float -> int: ``rint``/``trunc``/``ceil``/``floor`` in float64 (exact for integers).
* int -> int: exact comparisons; ``wrap`` is arithmetic modulo ``2**bits``.

Out-of-range results raise ``CodecError`` unless ``out_of_range`` is ``clamp`` (to the
extreme finite value, or to infinity where the target has one) or ``wrap`` (integers).
NaN and infinities go to a target that has them and are an error otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..metadata.dtypes import DataType
from ..errors import CodecError

ROUNDING = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")
OUT_OF_RANGE = ("clamp", "wrap")

_INTEGERS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int2", "int4", "uint2",
             "uint4"}
_FLOATS = {"float16", "float32", "float64", "bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn",
           "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2",
           "float8_e5m2fnuz"}
#: finite types (``fn``) have no infinity; these have no NaN either
_NO_NAN = {"float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"}


@dataclass(frozen=True, slots=True)
class Numeric:
    """What a cast needs to know of one data type."""

    name: str
    dtype: np.dtype
    integer: bool
    low: int  #: integers: the smallest value
    high: int  #: integers: the largest value
    bits: int  #: integers: the width; floats: the width of the bit pattern
    precision: int  #: floats: significand bits, the implicit one included
    max: float  #: floats: the largest finite value
    overflow: float  #: floats: one step beyond ``max`` on the ladder
    has_inf: bool
    has_nan: bool


def numeric(dtype: DataType) -> Numeric | None:
    """The cast description of ``dtype``, or None when cast_value is not defined for it."""
    dt, name = dtype.dtype, dtype.name
    if name in _INTEGERS:
        info = np.iinfo(dt) if dt.kind in "iu" else _ml_info(name, integer=True)
        bits = int(info.bits) if dt.kind in "iu" else int(name[-1])
        return Numeric(name, dt, True, int(info.min), int(info.max), bits, 0, 0.0, 0.0, False, False)
    if name in _FLOATS:
        info = np.finfo(dt) if dt.kind == "f" else _ml_info(name, integer=False)
        top, bits = float(info.max), int(info.bits)
        below = _value(_magnitude(np.asarray(info.max, dtype=dt), bits) - np.uint64(1), dt)
        step = top - float(below.reshape(-1)[0])
        finite = name.endswith(("fn", "fnuz"))
        return Numeric(name, dt, False, 0, 0, bits, int(info.nmant) + 1, top, top + step, not finite,
                       name not in _NO_NAN)
    return None


def _ml_info(name: str, integer: bool) -> Any:
    import ml_dtypes

    return ml_dtypes.iinfo(getattr(ml_dtypes, name)) if integer else ml_dtypes.finfo(getattr(ml_dtypes, name))


def _container(dt: np.dtype) -> np.dtype:
    return np.dtype(f"u{dt.itemsize}")


def _magnitude(values: np.ndarray, bits: int) -> np.ndarray:
    """The bit patterns of ``values`` without the sign bit, as uint64."""
    raw = np.ascontiguousarray(values).view(_container(values.dtype)).astype(np.uint64)
    return raw & np.uint64((1 << (bits - 1)) - 1)


def _value(magnitude: np.ndarray, dt: np.dtype) -> np.ndarray:
    """The non-negative float64 values of magnitude patterns of type ``dt``."""
    return np.asarray(magnitude, dtype=np.uint64).astype(_container(dt)).view(dt).astype(np.float64)


def cast(values: np.ndarray, src: Numeric, dst: Numeric, rounding: str, out_of_range: str | None,
         mapping: tuple[tuple[Any, Any], ...] = ()) -> np.ndarray:
    """``values`` (of ``src``) as ``dst``: ``mapping`` pairs first (the first equal key wins;
    a NaN key matches every NaN), then exact values, then rounding and ``out_of_range``."""
    flat = np.ascontiguousarray(values, dtype=src.dtype).reshape(-1)
    wide = _wide(flat, src)
    out = np.zeros(flat.shape, dtype=dst.dtype)
    todo = np.ones(flat.shape, dtype=bool)
    for key, result in mapping:
        key_wide = _wide(np.asarray([key], dtype=src.dtype), src)[0]
        hit = todo & (np.isnan(wide) if not src.integer and np.isnan(key_wide) else wide == key_wide)
        out[hit] = result
        todo &= ~hit
    if todo.any():
        out[todo] = _cast_values(wide[todo], src, dst, rounding, out_of_range)
    return out.reshape(np.shape(values))


def _wide(values: np.ndarray, src: Numeric) -> np.ndarray:
    """Values in a type that holds every value of ``src`` exactly: float64, int64 or uint64."""
    if not src.integer:
        return values.astype(np.float64)
    return values.astype(np.uint64 if src.name == "uint64" else np.int64)


def _cast_values(wide: np.ndarray, src: Numeric, dst: Numeric, rounding: str, out_of_range: str | None) -> np.ndarray:
    if dst.integer:
        if src.integer:
            return _to_integer(wide, dst, out_of_range)
        special = ~np.isfinite(wide)
        if special.any():
            raise CodecError(f"cast_value: {_describe(wide[special][0])} has no {dst.name} value "
                             "(map it with scalar_map)")
        return _to_integer(_round_to_integer(wide, rounding), dst, out_of_range)
    if src.integer:
        values, overflow = _integers_to_float(wide, dst, rounding)
    else:
        values, overflow = _floats_to_float(wide, dst, rounding)
    if overflow.any():
        if out_of_range != "clamp":
            raise CodecError(f"cast_value: {_describe(wide[overflow][0])} is outside the range of {dst.name} "
                             f"(largest {dst.max}); set out_of_range to 'clamp' to saturate")
        limit = np.inf if dst.has_inf else dst.max
        values = np.where(overflow, np.copysign(limit, values), values)
    return values.astype(dst.dtype)


def _describe(value: Any) -> str:
    return repr(value.item() if hasattr(value, "item") else value)


def _round_to_integer(wide: np.ndarray, rounding: str) -> np.ndarray:
    rounded: np.ndarray
    if rounding == "nearest-even":
        rounded = np.rint(wide)
    elif rounding == "towards-zero":
        rounded = np.trunc(wide)
    elif rounding == "towards-positive":
        rounded = np.ceil(wide)
    elif rounding == "towards-negative":
        rounded = np.floor(wide)
    else:
        whole = np.trunc(wide)
        rounded = np.where(np.abs(wide - whole) >= 0.5, whole + np.sign(wide), whole)
    return rounded


def _to_integer(wide: np.ndarray, dst: Numeric, out_of_range: str | None) -> np.ndarray:
    """Integer values (int64, uint64 or integral float64) as ``dst`` integers."""
    if wide.dtype.kind == "f":  # bounds as floats: -2**k and 2**k are exact, 2**k - 1 may not be
        below, above = wide < dst.low, wide >= float(dst.high + 1)
    else:
        below, above = wide < dst.low, wide > dst.high
    outside = below | above
    result = np.zeros(wide.shape, dtype=np.int64 if dst.low < 0 else np.uint64)
    inside = ~outside
    result[inside] = wide[inside].astype(result.dtype)
    if outside.any():
        if out_of_range is None:
            raise CodecError(f"cast_value: {_describe(wide[outside][0])} is outside the range of {dst.name} "
                             f"([{dst.low}, {dst.high}]); set out_of_range to 'clamp' or 'wrap'")
        if out_of_range == "clamp":
            result[below] = dst.low
            result[above] = dst.high
        else:
            span = 1 << dst.bits
            result[outside] = [(int(v) - dst.low) % span + dst.low for v in wide[outside].tolist()]
    return result.astype(dst.dtype)


def _integers_to_float(wide: np.ndarray, dst: Numeric, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """Integers rounded to ``dst``'s precision: float64 values and where they overflow."""
    negative = wide < 0
    magnitude = np.where(negative, ~wide.astype(np.uint64) + np.uint64(1), wide.astype(np.uint64))
    drop = np.maximum(bit_length(magnitude).astype(np.int64) - dst.precision, 0).astype(np.uint64)
    low = (magnitude >> drop) << drop
    remainder = magnitude - low
    half = np.where(drop > 0, np.uint64(1) << (np.maximum(drop, np.uint64(1)) - np.uint64(1)), np.uint64(0))
    inexact = remainder > 0
    up = _choose_up(rounding, negative, inexact, remainder > half, remainder == half,
                    ((low >> drop) & np.uint64(1)) == 1)
    values = low.astype(np.float64) + np.where(up, np.ldexp(1.0, drop.astype(np.int64)), 0.0)
    return np.where(negative, -values, values), values > dst.max


def _floats_to_float(wide: np.ndarray, dst: Numeric, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """Floats (float64) rounded to ``dst``: float64 values and where they overflow. NaN and
    infinities pass to a target that has them; otherwise they are an error."""
    nan, inf = np.isnan(wide), np.isinf(wide)
    if nan.any() and not dst.has_nan:
        raise CodecError(f"cast_value: NaN has no {dst.name} value (map it with scalar_map)")
    if inf.any() and not dst.has_inf:
        raise CodecError(f"cast_value: {_describe(wide[inf][0])} has no {dst.name} value (map it with scalar_map)")
    finite = ~(nan | inf)
    size = np.where(finite, np.abs(wide), 0.0)
    nearest = np.minimum(size, dst.max).astype(dst.dtype)  # the target's own rounding: one neighbour
    rung = _magnitude(nearest, dst.bits)
    rung_value = _value(rung, dst.dtype)
    lower = np.where(rung_value > size, rung - np.uint64(1), rung)
    lower_value = np.where(rung_value > size, _value(lower, dst.dtype), rung_value)
    top = _magnitude(np.asarray(dst.max, dtype=dst.dtype), dst.bits)
    upper_value = np.where(lower == top, dst.overflow, _value(np.minimum(lower + np.uint64(1), top), dst.dtype))
    inexact = lower_value != size
    below_gap, above_gap = size - lower_value, upper_value - size
    up = _choose_up(rounding, wide < 0, inexact, below_gap > above_gap, below_gap == above_gap,
                    (lower & np.uint64(1)) == 1)
    values = np.where(up, upper_value, lower_value)
    values = np.where(finite, np.copysign(values, wide), wide)
    # one step past the largest finite value rounds (in any mode) to an overflow
    return values, finite & ((up & (lower == top)) | (size >= dst.overflow))


def _choose_up(rounding: str, negative: np.ndarray, inexact: np.ndarray, past_half: np.ndarray,
               at_half: np.ndarray, lower_odd: np.ndarray) -> np.ndarray:
    """Whether each inexact magnitude rounds to its upper neighbour."""
    if rounding == "towards-zero":
        up = np.zeros(inexact.shape, dtype=bool)
    elif rounding == "towards-positive":
        up = ~negative
    elif rounding == "towards-negative":
        up = negative
    elif rounding == "nearest-away":
        up = past_half | at_half
    else:
        up = past_half | (at_half & lower_odd)
    return inexact & up


def bit_length(bits: np.ndarray) -> np.ndarray:
    """Each unsigned value's most significant set bit's position plus one (0 for zero)."""
    length = np.zeros(bits.shape, dtype=bits.dtype)
    rest = bits.copy()
    shift = 8 * bits.dtype.itemsize // 2
    while shift:
        high = rest >> bits.dtype.type(shift)
        moved = high != 0
        rest = np.where(moved, high, rest)
        length += np.where(moved, shift, 0).astype(bits.dtype)
        shift //= 2
    lengths: np.ndarray = length + (rest != 0).astype(bits.dtype)
    return lengths


def values_equal(a: Any, b: Any) -> bool:
    """Equality of two scalars of one type, NaN equal to NaN."""
    return bool(a == b) or (math.isnan(float(a)) and math.isnan(float(b)))
