"""Checking the values a user passes where the public API takes a node path, a mapping of
options, a shape, a count or a flag: anything else is refused before any work is done, by
an error that names the function, the argument, what was passed and what is expected
(:class:`InvalidTypeError` for a value of the wrong type, else :class:`InvalidValueError`)."""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidTypeError, InvalidValueError, ShapeMismatchError

__all__ = ["count", "flag", "number", "options", "shape", "shown", "text"]


def _at(function: str, name: str) -> str:
    """``f(): name=`` (``name=`` where the caller is not known)."""
    return f"{function}(): {name}=" if function else f"{name}="


def shown(value: Any) -> str:
    """``repr(value)``, cut to 80 characters for an error message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def text(function: str, name: str, value: Any) -> str | None:
    """``value`` when it is a string (or None: not given)."""
    if value is None or isinstance(value, str):
        return value
    raise InvalidTypeError(f"{_at(function, name)} expects a string (a node path such as 'group/array'), "
                           f"got {type(value).__name__} {shown(value)}")


def options(function: str, name: str, value: Any, example: str = "{'anon': True}") -> dict[str, Any] | None:
    """``value`` as a dict when it is a mapping with string keys (or None)."""
    if value is None:
        return None
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return dict(value)
    raise InvalidTypeError(f"{_at(function, name)} expects a dict with string keys such as {example}, "
                           f"got {type(value).__name__} {shown(value)}")


def _index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def count(function: str, name: str, value: Any, *, minimum: int = 0) -> int:
    """``value`` as an int (an int or numpy integer, not a bool) of at least ``minimum``."""
    found = _index(value)
    if found is None:
        raise InvalidTypeError(f"{_at(function, name)} expects an integer, got {type(value).__name__} "
                               f"{shown(value)}")
    if found < minimum:
        raise InvalidValueError(f"{_at(function, name)} must be at least {minimum}, got {found}")
    return found


def shape(function: str, name: str, value: Any) -> tuple[int, ...]:
    """``value`` as a shape: an int for one axis or a sequence of non-negative ints."""
    items: Sequence[Any] = (value,) if _index(value) is not None else value
    if isinstance(value, (str, bytes)) or not isinstance(items, Sequence) or any(_index(v) is None for v in items):
        raise InvalidTypeError(f"{_at(function, name)} expects an int or a tuple of ints such as (100, 100), "
                               f"got {type(value).__name__} {shown(value)}")
    found = tuple(operator.index(v) for v in items)
    if any(n < 0 for n in found):
        raise ShapeMismatchError(f"{_at(function, name)} must be non-negative integers, got {found}")
    return found


def flag(function: str, name: str, value: Any) -> bool:
    """``value`` when it is a bool (numpy's too)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise InvalidTypeError(f"{_at(function, name)} expects True or False, got {type(value).__name__} "
                           f"{shown(value)}")


def number(function: str, name: str, value: Any, *, minimum: float = 0.0) -> float:
    """``value`` as a finite float of at least ``minimum`` (an int or float, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and _index(value) is None \
            and type(value).__module__ != "numpy":
        raise InvalidTypeError(f"{_at(function, name)} expects a number, got {type(value).__name__} "
                               f"{shown(value)}")
    try:
        found = float(value)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"{_at(function, name)} expects a number, got {type(value).__name__} "
                               f"{shown(value)}") from None
    if not math.isfinite(found) or found < minimum:
        raise InvalidValueError(f"{_at(function, name)} must be a finite number of at least {minimum}, got {found}")
    return found
