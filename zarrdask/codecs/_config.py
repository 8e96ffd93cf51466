"""Small validators for codec configurations: return the value or raise CodecError at ``loc``.

Messages name the setting (in the path), what was expected and what was found; an
unknown setting names the nearest allowed one.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Set
from typing import Any

from ..errors import CodecError, Problem
from ..keywords import did_you_mean

Loc = tuple[str | int, ...]
_MISSING = object()


def config_error(loc: Loc, message: str) -> CodecError:
    return CodecError(str(Problem(loc, message)))


def _integer(low: int | None, high: int | None) -> str:
    """``an integer from 0 to 9`` (or ``of at least 0`` / ``of at most 9`` / ``an integer``)."""
    if low is not None and high is not None:
        return f"an integer from {low} to {high}"
    if low is not None:
        return f"an integer of at least {low}"
    if high is not None:
        return f"an integer of at most {high}"
    return "an integer"


def get_int(config: Mapping[str, Any], key: str, loc: Loc, default: Any = _MISSING,
            low: int | None = None, high: int | None = None) -> int:
    value = config.get(key, default)
    if value is _MISSING:
        raise config_error((*loc, "configuration", key), f"required setting is missing (expected {_integer(low, high)})")
    if isinstance(value, bool) or not isinstance(value, int) or (
        (low is not None and value < low) or (high is not None and value > high)
    ):
        raise config_error((*loc, "configuration", key), f"expected {_integer(low, high)}, got {value!r}")
    return value


def _choices(choices: Collection[Any]) -> str:
    """The allowed values as they are written in JSON: ``"big", "little" or null``."""
    written = sorted(json.dumps(c) for c in choices)
    return written[0] if len(written) == 1 else f"{', '.join(written[:-1])} or {written[-1]}"


def get_choice(config: Mapping[str, Any], key: str, choices: Collection[Any], loc: Loc, default: Any = _MISSING) -> Any:
    value = config.get(key, default)
    if value is _MISSING:
        raise config_error((*loc, "configuration", key), f"required setting is missing (expected one of {_choices(choices)})")
    if value not in choices:
        hint = did_you_mean(value, [c for c in choices if isinstance(c, str)]) if isinstance(value, str) else ""
        raise config_error((*loc, "configuration", key), f"expected one of {_choices(choices)}, got {value!r}{hint}")
    return value


def check_keys(config: Mapping[str, Any], allowed: Set[str], loc: Loc) -> None:
    """Refuse settings the codec does not take, naming the nearest allowed one."""
    if config.keys() <= allowed:  # the common case, without building sets
        return
    extra = sorted(set(config) - allowed)
    unknown = ", ".join(f"{k!r}{did_you_mean(k, allowed)}" for k in extra)
    takes = f"allowed: {', '.join(map(repr, sorted(allowed)))}" if allowed else "this codec takes no settings"
    raise config_error((*loc, "configuration"), f"unknown key{'s' if len(extra) > 1 else ''} {unknown}; {takes}")
