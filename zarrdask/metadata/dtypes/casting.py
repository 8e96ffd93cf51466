"""Values a data type can hold: numpy's casts made explicit, so no value changes on the way in.

``held_values`` is ``np.asarray(value, dtype)`` that refuses to change a value (no silent
wrap-around, truncation or overflow). A cast numpy calls "safe" keeps every value and
costs no check (the same dtype: not even a copy); the other casts between numeric types
are checked over the values, vectorised (min/max, one or two passes):

* to an integer type: every value finite, integral and in the type's range;
* to bool: every value 0 or 1;
* to a float type: a finite value stays finite. Rounding to the nearest float is what
  users of float32 expect and is allowed; overflow to infinity is refused;
* from complex to a real type: every imaginary part zero (the real part then as above);
* to complex: each part as to its float type;
* datetime64/timedelta64 to another unit: each value the same instant (NaT stays NaT),
  checked even where numpy calls the cast safe (days overflow nanoseconds past 2262).

Python numbers numpy cannot type (ints beyond 64 bits) are checked one by one. The
variable-length ``string`` and ``bytes`` types (object arrays) hold ``str`` and ``bytes``
items only: numpy's own scalars (``np.str_``, ``np.bytes_``, what indexing a numpy text
array gives) become the same text or bytes, and anything else (a number, ``None``, bytes
for text) is refused rather than turned into text. Other conversions (fixed-size strings,
structs, extension types) are numpy's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidValueError

__all__ = ["cast_values", "exact_items", "held_values", "range_of"]

_NUMERIC = "biufc"
_TIME = "Mm"


def _named(dtype: np.dtype) -> str:
    """How ``astype`` is told ``dtype`` in a message: ``int16``, ``<U3`` (numpy's name of a
    fixed-size type, ``str96``, counts bits)."""
    return dtype.str if _is_fixed(dtype) else dtype.name


def _is_fixed(dtype: np.dtype) -> bool:
    """A fixed-size text, bytes or raw type (not a struct, a subarray or an extension type
    numpy also calls kind "V", as ml_dtypes' floats)."""
    return dtype.type in (np.str_, np.bytes_, np.void) and dtype.names is None and dtype.subdtype is None


def range_of(dtype: np.dtype) -> str:
    """What ``dtype`` holds, as messages print it: ``uint8 (0..255)``."""
    if dtype.kind == "b":
        return f"{dtype.name} (0 or 1: False or True)"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return f"{dtype.name} ({info.min}..{info.max})"
    if dtype.kind in "fc":
        return f"{dtype.name} (finite values up to ±{float(np.finfo(dtype).max)!r})"
    return dtype.name


#: the one Python type of every item of an object array of these data type families
_ITEM_TYPES: dict[str, type] = {"string": str, "bytes": bytes}


def held_values(value: Any, dtype: np.dtype, family: str | None = None) -> np.ndarray:
    """``value`` as an array of ``dtype`` for a write; InvalidValueError naming a value that
    would change (or cannot be converted at all), both dtypes and a fix. ``family``: the data
    type's (``DataType.family``), which says what an object array's items must be."""
    item = _ITEM_TYPES.get(family or "") if dtype.kind == "O" else None
    if item is not None:
        return _held_items(value, item, family or "")
    try:
        if dtype.kind not in _NUMERIC + _TIME and not _is_fixed(dtype):
            return np.asarray(value, dtype=dtype)
        # (a list keeps its items' types for a fixed-size text type: numpy would make 5 the text '5')
        source = np.asarray(value, dtype=object) if _is_fixed(dtype) and isinstance(value, (list, tuple)) \
            else np.asarray(value)
        named = source.dtype
        if named.kind == "f" and dtype.kind in "iub" and isinstance(value, (list, tuple)):
            source = np.asarray(value, dtype=object)  # (Python ints beyond int64 made the list float64)
        return cast_values(source, dtype)
    except InvalidValueError as exc:
        wider = f", or store them in an array of data type {np.promote_types(named, dtype)}" \
            if named.kind == dtype.kind or (named.kind in _NUMERIC + _TIME and dtype.kind in _NUMERIC + _TIME) else ""
        raise InvalidValueError(f"cannot store {named} values in an array of data type {dtype}: {exc}; convert "
                                f"them first (values.astype({_named(dtype)!r})) to accept the change{wider}") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidValueError(f"cannot store {type(value).__name__} values in a {dtype} array: {exc}") from None


def _held_items(value: Any, item: type, family: str) -> np.ndarray:
    """``value`` as an object array whose every item is exactly ``item`` (``str`` or
    ``bytes``, what the vlen codecs encode): items of a subclass (``np.str_``) as the same
    text or bytes of the exact type; InvalidValueError naming the first other item."""
    try:
        values = np.asarray(value, dtype=object)
    except (ValueError, TypeError) as exc:
        raise InvalidValueError(f"cannot store {type(value).__name__} values in a {family} array: {exc}") from None
    items = values.reshape(-1).tolist()
    kinds = set(map(type, items))
    if kinds <= {item}:
        return values
    for i, x in enumerate(items):
        if not isinstance(x, item):
            where = f" (item {tuple(map(int, np.unravel_index(i, values.shape)))})" if values.ndim else ""
            if isinstance(x, (str, bytes)):
                fix = "decode them first (v.decode())" if item is str else "encode them first (v.encode())"
            else:
                fix = f"convert them first ({item.__name__}(v), values.astype({item.__name__}) for an array)"
            raise InvalidValueError(f"cannot store {type(x).__name__} values in a {family} array: {x!r}{where} is "
                                    f"not {item.__name__}; {fix}, or store them in an array of their own data type")
    return exact_items(values)


def exact_items(values: np.ndarray) -> np.ndarray:
    """An object array's ``str`` and ``bytes`` items of a subclass (``np.str_``,
    ``np.bytes_``) as the same text or bytes of the exact type, which numcodecs' vlen codecs
    require; other items as they are (a new array)."""
    out = np.empty(values.shape, dtype=object)
    out.reshape(-1)[:] = [str.__str__(x) if isinstance(x, str) else bytes.__bytes__(x) if isinstance(x, bytes) else x
                          for x in values.reshape(-1).tolist()]
    return out


def cast_values(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values.astype(dtype)``; InvalidValueError (naming one value and what ``dtype``
    holds) when that would change a value (module docstring)."""
    source = values.dtype
    if source == dtype:
        return values
    if _is_fixed(dtype):
        return _cast_fixed(values, dtype)
    if source.kind in _TIME and dtype.kind == source.kind:
        out = values.astype(dtype)
        changed = out.astype(source).view(np.int64) != values.view(np.int64)
        if changed.any():
            raise InvalidValueError(f"{_first(values, changed)} cannot be held exactly by data type {dtype.name} "
                                    f"(it would become {_first(out, changed)})")
        return out
    if source.kind == "O" and dtype.kind in _NUMERIC:
        return _cast_objects(values, dtype)
    if source.kind not in _NUMERIC or dtype.kind not in _NUMERIC or np.can_cast(source, dtype, "safe"):
        return values.astype(dtype)
    real = values
    if source.kind == "c" and dtype.kind != "c":
        imaginary = values.imag != 0
        if imaginary.any():
            raise InvalidValueError(f"{_first(values, imaginary)} has an imaginary part: data type {dtype.name} "
                                    "holds real numbers only")
        real = values.real
    if dtype.kind in "iub":
        _check_integers(real, dtype)
        return real.astype(dtype)
    with np.errstate(over="ignore"):
        out = real.astype(dtype)
    pairs = [(real.real, out.real), (real.imag, out.imag)] if real.dtype.kind == "c" else [(real, out.real)]
    for before, after in pairs:
        infinite = np.isinf(after)
        if infinite.any() and (overflow := infinite & np.isfinite(before)).any():
            raise InvalidValueError(f"{_first(before, overflow)} does not fit data type {range_of(dtype)}")
    return out


def _cast_fixed(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Text into a fixed-length text type, bytes into a bytes or raw type: refused when a
    value is of another kind (numpy would write 5 as '5') or longer than the type holds
    (numpy would cut it short). A raw type takes shorter bytes padded with zeros, as its
    fill values are."""
    kind = "U" if dtype.kind == "U" else "S"
    item, holds = (str, "text") if kind == "U" else (bytes, "bytes")
    if values.dtype.kind == "O":  # (Python items: each must be of the kind, then as numpy's)
        items = values.reshape(-1).tolist()
        other = next((x for x in items if not isinstance(x, item)), None)
        if other is not None:
            raise InvalidValueError(f"{other!r} is not {item.__name__}: data type {dtype} holds {holds} only")
        values = np.array(items, dtype=kind).reshape(values.shape) if items else values.astype(dtype)
    elif values.dtype.kind == "V" and dtype.kind == "V" and values.dtype.names is None:
        values = values.view(f"S{values.dtype.itemsize}") if values.dtype.itemsize else values
    if values.dtype.kind != kind:
        sample = values.flat[0] if values.size else values.dtype
        raise InvalidValueError(f"{sample!r} is not {item.__name__}: data type {dtype} holds {holds} only")
    if values.dtype.itemsize > dtype.itemsize:
        longer = (np.char.str_len(values) > dtype.itemsize) if dtype.kind == "V" else (values.astype(dtype) != values)
        if longer.any():
            unit = "characters" if kind == "U" else "bytes"
            size = dtype.itemsize // 4 if kind == "U" else dtype.itemsize
            raise InvalidValueError(f"{_first(values, longer)!r} is longer than data type {dtype} holds ({size} {unit})")
    return values.astype(dtype)


def _check_integers(values: np.ndarray, dtype: np.dtype) -> None:
    """Refuse a value of a real numeric array that integer (or bool) ``dtype`` cannot hold."""
    if not values.size:
        return
    lo, hi = (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    low, high = values.min(), values.max()
    if values.dtype.kind == "f":
        if np.isnan(low):
            raise InvalidValueError(f"{low}: data type {dtype.name} has no NaN")
        for x in (low, high):
            if np.isinf(x):
                raise InvalidValueError(f"{x}: data type {dtype.name} has no infinity")
    # (as Python numbers, which compare exactly; an object array's already are)
    outside = low if _python(low) < lo else high if _python(high) > hi else None
    if outside is not None:
        raise InvalidValueError(f"{outside} does not fit data type {range_of(dtype)}")
    if values.dtype.kind == "f" and (fraction := np.trunc(values) != values).any():
        holds = "only 0 and 1" if dtype.kind == "b" else "integers only"
        raise InvalidValueError(f"{_first(values, fraction)} is not an integer: data type {dtype.name} holds {holds}")


def _cast_objects(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Python numbers (an object array: ints beyond int64, None, ...) as ``dtype``, each
    exactly (a float type: none overflowing to infinity)."""
    if dtype.kind in "fc":
        with np.errstate(over="ignore"):
            out = values.astype(dtype)
        x = next((x for x in values[np.isinf(out)].flat if not np.isinf(complex(x))), None)
        if x is not None:
            raise InvalidValueError(f"{x} does not fit data type {range_of(dtype)}")
        return out
    try:
        out = values.astype(dtype)
        if not np.any(out.astype(object) != values):
            return out
    except (OverflowError, ValueError):
        pass
    for x in values.flat:  # (a value changed or failed: find it, to name it)
        _check_integers(np.asarray([x], dtype=float if isinstance(x, float) else object), dtype)
    raise InvalidValueError(f"a value cannot be held exactly by data type {dtype.name}")


def _python(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _first(values: np.ndarray, where: np.ndarray) -> Any:
    """The first of ``values`` where ``where`` is true (a sample for a message)."""
    return np.asarray(values)[where].flat[0]
