"""Small validators for codec configurations: return the value or raise CodecError at ``loc``."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Set
from typing import Any

from ..errors import CodecError, Problem

Loc = tuple[str | int, ...]
_MISSING = object()


def config_error(loc: Loc, message: str) -> CodecError:
    return CodecError(str(Problem(loc, message)))


def get_int(config: Mapping[str, Any], key: str, loc: Loc, default: Any = _MISSING,
            low: int | None = None, high: int | None = None) -> int:
    value = config.get(key, default)
    if value is _MISSING:
        raise config_error((*loc, "configuration", key), "required setting is missing")
    if isinstance(value, bool) or not isinstance(value, int):
        raise config_error((*loc, "configuration", key), f"expected an integer, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise config_error((*loc, "configuration", key), f"expected an integer in [{low}, {high}], got {value}")
    return value


def get_choice(config: Mapping[str, Any], key: str, choices: Collection[Any], loc: Loc, default: Any = _MISSING) -> Any:
    value = config.get(key, default)
    if value is _MISSING:
        raise config_error((*loc, "configuration", key), f"required setting is missing (one of {sorted(map(str, choices))})")
    if value not in choices:
        raise config_error((*loc, "configuration", key), f"expected one of {sorted(map(str, choices))}, got {value!r}")
    return value


def check_keys(config: Mapping[str, Any], allowed: Set[str], loc: Loc) -> None:
    if config.keys() <= allowed:  # the common case, without building sets
        return
    extra = set(config) - allowed
    if extra:
        raise config_error((*loc, "configuration"), f"unknown settings {sorted(extra)} (allowed: {sorted(allowed)})")
