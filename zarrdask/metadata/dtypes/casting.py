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
  checked even where numpy calls the cast safe (days overflow nanoseconds past 2262);
* to ml_dtypes' types (bfloat16, float8, int4, ...): as to a float or integer type (an
  infinity or NaN stays one, which a type without them cannot hold).

A value of another kind is refused where numpy would reinterpret it: no dates, text or
bytes into numbers, and into a time type only times, integers (counts of its unit) or
ISO text for a datetime ('' is not NaT). Python numbers numpy cannot type (ints beyond 64
bits) are checked one by one. The variable-length ``string`` and ``bytes`` types (object
arrays) hold ``str`` and ``bytes`` items only: numpy's own scalars (``np.str_``,
``np.bytes_``, what indexing a numpy text array gives) become the same text or bytes, and
anything else (a number, ``None``, bytes for text) is refused rather than turned into
text. Fixed-size text, bytes and raw types refuse a value longer than they hold (numpy
cuts it short); a raw type pads shorter bytes with zeros, as its fill values are. A
struct's fields are each held by their own type. Other conversions (subarray fields,
other extension types) are numpy's.
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
    if dtype.names is not None:
        return _held_struct(value, dtype)
    try:
        if dtype.kind not in _NUMERIC + _TIME and not _is_fixed(dtype) and not _is_ml(dtype):
            return np.asarray(value, dtype=dtype)
        # (a list keeps its items' types for a fixed-size text type: numpy would make 5 the text '5')
        source = np.asarray(value, dtype=object) if _is_fixed(dtype) and isinstance(value, (list, tuple)) \
            else np.asarray(value)
        named = source.dtype
        if named.kind == "f" and dtype.kind in "iub" and isinstance(value, (list, tuple)):
            source = np.asarray(value, dtype=object)  # (Python ints beyond int64 made the list float64)
        return cast_values(source, dtype)
    except InvalidValueError as exc:
        wider = _wider(named, dtype)
        raise InvalidValueError(f"cannot store {named} values in an array of data type {dtype}: {exc}; convert "
                                f"them first (values.astype({_named(dtype)!r})) to accept the change{wider}") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidValueError(f"cannot store {type(value).__name__} values in a {dtype} array: {exc}") from None


def _wider(named: np.dtype, dtype: np.dtype) -> str:
    """The message's second fix: a data type that holds both (none across kinds, say a date
    and a number)."""
    if named.kind != dtype.kind and not (named.kind in _NUMERIC and dtype.kind in _NUMERIC):
        return ""
    try:
        return f", or store them in an array of data type {np.promote_types(named, dtype)}"
    except TypeError:
        return ""


def _held_struct(value: Any, dtype: np.dtype) -> np.ndarray:
    """``value`` as an array of struct ``dtype``, every field held as a write of that
    field's type is (numpy would cast 2.5 into an int field as 2): records of the same
    fields (a structured array, by field name), tuples in field order, lists of them, or
    one value for every field (as numpy broadcasts a scalar)."""
    names = dtype.names or ()
    if isinstance(value, (np.ndarray, np.void)) and np.asarray(value).dtype.names is not None:
        source = np.asarray(value)
        if source.dtype == dtype:
            return source
        if set(source.dtype.names or ()) != set(names):
            raise InvalidValueError(f"cannot store records of fields {list(source.dtype.names or ())} in a struct "
                                    f"of fields {list(names)}; give one value per field")
        out = np.empty(source.shape, dtype)
        for name in names:
            _put_field(out, name, source[name])
        return out
    if isinstance(value, list):  # (records, or lists of them)
        parts = [_held_struct(v, dtype) for v in value]
        return np.stack(parts) if parts else np.empty((0,), dtype)
    if isinstance(value, tuple):
        if len(value) != len(names):
            raise InvalidValueError(f"{value!r} has {len(value)} values for a struct of {len(names)} fields "
                                    f"{list(names)}; give one per field")
        fields: tuple[Any, ...] = value
    else:
        fields = (value,) * len(names)
    out = np.empty((), dtype)
    for name, v in zip(names, fields):
        _put_field(out, name, v)
    return out


def _put_field(out: np.ndarray, name: str, value: Any) -> None:
    """Set field ``name`` of the records ``out`` to ``value`` held by the field's type (a
    subarray field's by its items' type, so 2.5 is refused there too); an error names the
    field."""
    field = out.dtype.fields[name][0]  # type: ignore[index]
    base, shape = field.subdtype if field.subdtype is not None else (field, ())
    try:
        held = held_values(value, base)
    except InvalidValueError as exc:
        raise InvalidValueError(f"field {name!r}: {exc}") from None
    try:
        out[name] = held
    except ValueError:
        raise InvalidValueError(f"field {name!r}: cannot store values of shape {held.shape} in records of shape "
                                f"{out.shape} whose field holds {shape or 'one value'} each") from None


def _held_items(value: Any, item: type, family: str) -> np.ndarray:
    """``value`` as an object array whose every item is exactly ``item`` (``str`` or
    ``bytes``, what the vlen codecs encode): items of a subclass (``np.str_``) as the same
    text or bytes of the exact type; InvalidValueError naming the first other item."""
    try:
        values = np.asarray(value, dtype=object)
    except (ValueError, TypeError) as exc:
        raise InvalidValueError(f"cannot store {type(value).__name__} values in a {family} array: {exc}") from None
    items = values.reshape(-1).tolist()
    if set(map(type, items)) <= {item}:
        return values
    i = _other_item(items, item)
    if i is not None:
        x = items[i]
        where = f" (item {tuple(map(int, np.unravel_index(i, values.shape)))})" if values.ndim else ""
        if isinstance(x, (str, bytes)):
            fix = "decode them first (v.decode())" if item is str else "encode them first (v.encode())"
        else:
            fix = f"convert them first ({item.__name__}(v), values.astype({item.__name__}) for an array)"
        raise InvalidValueError(f"cannot store {type(x).__name__} values in a {family} array: {x!r}{where} is "
                                f"not {item.__name__}; {fix}, or store them in an array of their own data type")
    return exact_items(values)


def _other_item(items: list[Any], item: type) -> int | None:
    """The position of the first of ``items`` that is not an ``item`` (subclasses are), or None."""
    return next((i for i, x in enumerate(items) if not isinstance(x, item)), None)


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
    if _is_ml(source):  # (as float64 or int64, which hold every value of these types exactly)
        values = values.astype(np.int64 if _ml_bounds(source) else np.float64)
        source = values.dtype
        if source == dtype:
            return values
    if _is_ml(dtype):
        return _cast_ml(values, dtype)
    if dtype.kind in _TIME:
        return _cast_time(values, dtype)
    if dtype.kind in _NUMERIC and source.kind not in _NUMERIC + "O":
        _refuse_non_numbers(values, dtype)
    if source.kind == "O" and dtype.kind in _NUMERIC:
        return _cast_objects(values, dtype)
    if source.kind not in _NUMERIC or dtype.kind not in _NUMERIC or np.can_cast(source, dtype, "safe"):
        return values.astype(dtype)
    real = _real(values, dtype) if source.kind == "c" and dtype.kind != "c" else values
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


def _refuse_non_numbers(values: np.ndarray, dtype: np.dtype) -> None:
    """Refuse values that are not numbers (dates, text, bytes) for numeric ``dtype``."""
    sample = values.flat[0] if values.size else values.dtype
    raise InvalidValueError(f"{sample!r} is not a number: data type {dtype.name} holds numbers only")


def _real(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The real parts of complex ``values``, refused where an imaginary part is not zero."""
    imaginary = values.imag != 0
    if imaginary.any():
        raise InvalidValueError(f"{_first(values, imaginary)} has an imaginary part: data type {dtype.name} "
                                "holds real numbers only")
    return values.real


def _is_ml(dtype: np.dtype) -> bool:
    """One of ml_dtypes' types (bfloat16, float8/6/4, int4/int2, ...): numpy calls them kind "V"."""
    return dtype.kind == "V" and dtype.type.__module__.startswith("ml_dtypes")


def _ml_bounds(dtype: np.dtype) -> tuple[int, int] | None:
    """An ml_dtypes integer type's (min, max); None for its float types."""
    import ml_dtypes  # noqa: PLC0415 - (optional: only where such a type is in use)

    try:
        info = ml_dtypes.iinfo(dtype)
    except ValueError:
        return None
    return int(info.min), int(info.max)


def _cast_ml(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Numbers into an ml_dtypes type: an integer type as the integer types (integral, in
    range), a float type as the float types (rounded; a finite value stays finite, an
    infinity and NaN stay what they are, which a type without them cannot hold)."""
    if values.dtype.kind == "O":
        values = _cast_objects(values, np.dtype(np.float64))
    if values.dtype.kind not in _NUMERIC:
        _refuse_non_numbers(values, dtype)
    if values.dtype.kind == "c":
        values = _real(values, dtype)
    bounds = _ml_bounds(dtype)
    if bounds is not None:
        _check_integers(values, dtype, bounds)
        return values.astype(dtype)
    with np.errstate(all="ignore"):
        out = values.astype(dtype)
        before, after = values.astype(np.float64), out.astype(np.float64)
    kept = (np.isfinite(before) & np.isfinite(after)) | (np.isnan(before) & np.isnan(after)) | \
        (np.isinf(before) & (before == after))
    if not kept.all():
        raise InvalidValueError(f"{_first(values, ~kept)} does not fit data type {dtype.name} (it would become "
                                f"{_first(after, ~kept)})")
    return out


def _cast_time(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Values into a datetime64 or timedelta64 type: the same kind, each the same instant
    in the new unit (NaT stays NaT); integers as counts of the unit; ISO text and Python
    datetimes (or timedeltas) parsed to the same instant. Anything else (a float, a bool,
    a datetime for a timedelta) is refused: numpy would truncate or reinterpret it."""
    kind, source = dtype.kind, values.dtype
    what = "datetime" if kind == "M" else "timedelta"
    if source.kind == kind:
        out = values.astype(dtype)
        changed = out.astype(source).view(np.int64) != values.view(np.int64)
        if changed.any():
            raise InvalidValueError(f"{_first(values, changed)} cannot be held exactly by data type {dtype.name} "
                                    f"(it would become {_first(out, changed)})")
        return out
    if source.kind in "iu" or (source.kind == "O" and all(type(x) is int for x in values.flat)):
        _check_integers(values, dtype, (-(2**63) + 1, 2**63 - 1))  # (-2**63 is NaT)
        return values.astype(np.int64).astype(dtype)
    if source.kind in "UO" and (kind == "M" or source.kind == "O"):
        try:
            parsed = values.astype(f"{what}64")
        except (ValueError, TypeError, OverflowError):
            parsed = None
        if parsed is not None:
            named_nat = np.isnat(parsed) & (np.char.upper(values) != "NAT") \
                if source.kind == "U" else np.zeros(parsed.shape, bool)
            if not named_nat.any():
                return _cast_time(parsed, dtype)
            values = values[named_nat]
    sample = values.flat[0] if values.size else source
    raise InvalidValueError(f"{sample!r} is not a {what}: data type {dtype.name} holds {what}s only; pass "
                            f"{what}64 values, or integers counting its units")


def _cast_fixed(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Text into a fixed-length text type, bytes into a bytes or raw type: refused when a
    value is of another kind (numpy would write 5 as '5') or longer than the type holds
    (numpy would cut it short). A raw type takes shorter bytes padded with zeros, as its
    fill values are."""
    kind = "U" if dtype.kind == "U" else "S"
    item, holds = (str, "text") if kind == "U" else (bytes, "bytes")
    if values.dtype.kind == "O":  # (Python items: each must be of the kind, then as numpy's)
        items = values.reshape(-1).tolist()
        if (i := _other_item(items, item)) is not None:
            raise InvalidValueError(f"{items[i]!r} is not {item.__name__}: data type {dtype} holds {holds} only")
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


def _check_integers(values: np.ndarray, dtype: np.dtype, bounds: tuple[int, int] | None = None) -> None:
    """Refuse a value of a real numeric array that integer (or bool) ``dtype`` cannot hold
    (``bounds``: its range, where numpy's ``iinfo`` does not know the type)."""
    if not values.size:
        return
    lo, hi = bounds or ((0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)))
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
        raise InvalidValueError(f"{outside} does not fit data type "
                                f"{range_of(dtype) if bounds is None else f'{dtype.name} ({lo}..{hi})'}")
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
