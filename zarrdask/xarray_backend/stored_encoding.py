"""Variables encoded as the stored ones are (appends, region writes), refused where that
would change a value: times the stored units cannot hold, numbers the stored dtype cannot.

xarray encodes such a variable with the stored encoding and casts silently: int32 40000
into an int16 variable becomes -25536, and 6-hourly times into integer ``days since``
are encoded in hours (xarray warns) while the stored ``units`` keep saying days. Here the
cast to the stored dtype is the checked one of every write
(:mod:`zarrdask.metadata.dtypes.casting`): numpy data at once, before any array grows;
dask data as each block is computed. A time encoding whose units xarray had to change is
refused, naming the encoding that holds the times.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from xarray import Variable

from zarrdask.compat.xarray import is_chunked_array
from zarrdask.errors import DatasetError, InvalidValueError
from zarrdask.metadata.dtypes.casting import cast_values

__all__ = ["as_stored", "without_cast"]


def without_cast(encoding: Mapping[str, Any], decoded: np.dtype) -> tuple[dict[str, Any], np.dtype | None]:
    """The stored ``encoding`` without the numeric ``dtype`` xarray would cast to unchecked,
    and that dtype (None: the encoding is kept whole: times, strings, ``_Unsigned``)."""
    kept = dict(encoding)
    try:
        target = np.dtype(kept.get("dtype"))
    except TypeError:
        return kept, None
    if "dtype" not in kept or target.kind not in "biufc" or decoded.kind in "Mm" or "_Unsigned" in kept:
        return kept, None
    del kept["dtype"]
    return kept, target


def as_stored(name: Hashable, verb: str, encoded: Variable, stored: Variable, target: np.dtype | None) -> Variable:
    """``encoded`` (a new part of stored variable ``name``) checked to decode to the values it
    was given: its time units the stored ones, its data cast to the stored ``target`` dtype
    (floats rounded first, as xarray packs them into integers)."""
    _check_time_units(name, verb, encoded, stored)
    if target is None or encoded.dtype == target:
        return encoded
    data = encoded.data
    if target.kind in "iu" and encoded.dtype.kind == "f":
        data = np.round(data)
    data = data.map_blocks(_cast_block, name, verb, target, dtype=target) if is_chunked_array(data) else \
        _cast_block(np.asarray(data), name, verb, target)
    attrs = dict(encoded.attrs)
    if target.kind not in "fc" and "_FillValue" not in stored.encoding:
        attrs.pop("_FillValue", None)  # (the NaN xarray gives float data, not the stored type's)
    return Variable(encoded.dims, data, attrs, encoded.encoding)


def _cast_block(block: np.ndarray, name: Hashable, verb: str, target: np.dtype) -> np.ndarray:
    """One block of a stored variable's new values as its stored dtype, or a DatasetError."""
    try:
        return cast_values(block, target)
    except InvalidValueError as exc:
        raise DatasetError(
            f"{verb} {name!r}: {exc}, the stored variable's data type; convert the values first "
            f"(ds[{name!r}].astype({target.name!r})) to accept the change, or write the variable anew "
            f"(mode='w') with encoding={{{name!r}: {{'dtype': '{np.promote_types(block.dtype, target)}'}}}}"
        ) from None


def _check_time_units(name: Hashable, verb: str, encoded: Variable, stored: Variable) -> None:
    """Refuse times xarray encoded in other units or calendar than the stored ones (it does
    so when the stored integer units cannot hold them)."""
    if stored.dtype.kind not in "Mm":
        return
    old = stored.encoding
    if _same_units(encoded.attrs.get("units", old.get("units")), old.get("units")) and \
            encoded.attrs.get("calendar", old.get("calendar")) == old.get("calendar"):
        return
    units, dtype = stored.encoding.get("units"), stored.encoding.get("dtype")
    raise DatasetError(
        f"{verb} {name!r}: {_sample(stored, encoded)} cannot be stored as {np.dtype(dtype).name} {units!r} (the "
        f"stored encoding); write the variable anew (mode='w') with encoding={{{name!r}: {{'units': "
        f"{encoded.attrs.get('units')!r}}}}} or {{'dtype': 'float64'}}")


def _same_units(a: Any, b: Any) -> bool:
    """Whether CF time units ``a`` and ``b`` say the same (``days since 2000-01-01`` and
    ``days since 2000-01-01 00:00:00`` do)."""
    if a == b:
        return True
    (word_a, _, ref_a), (word_b, _, ref_b) = str(a).partition(" since "), str(b).partition(" since ")
    try:
        return word_a == word_b and pd.Timestamp(ref_a) == pd.Timestamp(ref_b)
    except ValueError:
        return False


def _sample(stored: Variable, encoded: Variable) -> str:
    """The first new time the stored units cannot hold (decoded from the new units)."""
    try:
        word, _, ref = str(encoded.attrs["units"]).partition(" since ")
        values = np.asarray(encoded.data)
        step = pd.Timedelta(1, unit=word)
        old_word = str(stored.encoding["units"]).partition(" since ")[0]
        ratio = pd.Timedelta(1, unit=old_word) // step
        first = values[values % ratio != 0].flat[0]
        time = (pd.Timestamp(ref) + first * step) if ref else first * step
        return str(time)
    except (KeyError, ValueError, TypeError, IndexError, ZeroDivisionError, OverflowError):
        return "the new times"
