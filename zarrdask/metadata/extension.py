"""Extension objects: ``{"name", "configuration", "must_understand"}`` and the short-hand ``"name"``.

Every v3 extension point (codecs, chunk grid, chunk key encoding, storage
transformers, extra top-level fields) is written in this form. ``must_understand``
defaults to true: an implementation that does not know the name must refuse the
node, unless the writer said it may be ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import Problem
from ..keywords import did_you_mean

__all__ = ["NamedConfig", "parse_named_config"]

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class NamedConfig:
    """One extension object, normalised. ``shorthand`` remembers the ``"name"`` form."""

    name: str
    configuration: Mapping[str, Any] = field(default_factory=dict)
    must_understand: bool = True
    shorthand: bool = False

    def to_json(self) -> Any:
        if self.shorthand and not self.configuration and self.must_understand:
            return self.name
        out: dict[str, Any] = {"name": self.name}
        # (zarr-python refuses a numcodecs.* codec without a configuration member, even an empty one)
        if self.configuration or self.name.startswith("numcodecs."):
            out["configuration"] = dict(self.configuration)
        if not self.must_understand:
            out["must_understand"] = False
        return out


_FIELDS = frozenset({"name", "configuration", "must_understand"})


#: shared NamedConfigs of settings that are plain values (see ``parse_named_config``)
_SHARED: dict[tuple[Any, ...], NamedConfig] = {}
_SHARED_MAX = 1024


def parse_named_config(value: Any, loc: Loc, problems: list[Problem]) -> NamedConfig | None:
    """Parse an extension object, appending problems (with ``loc``) instead of raising.

    Objects whose settings are all hashable are shared (NamedConfig is immutable): the
    arrays of one dataset repeat the same few codecs, and one object each keeps an open
    of many arrays small. The key holds each setting's type, so ``1``, ``1.0`` and
    ``true`` stay distinct.
    """
    if type(value) is dict and value.keys() <= _FIELDS:  # the usual form, checked with few calls
        name, config, must = value.get("name"), value.get("configuration"), value.get("must_understand", True)
        if type(name) is str and name and (config is None or type(config) is dict) and type(must) is bool:
            return _shared(name, config or {}, must)
    if isinstance(value, str):
        if not value:
            problems.append(Problem(loc, "expected a non-empty extension name"))
            return None
        return NamedConfig(value, {}, True, shorthand=True)
    if not isinstance(value, Mapping):
        problems.append(Problem(loc, f"expected an object with 'name' or a name string, got {value!r}"))
        return None
    name = value.get("name")
    ok = True
    if not isinstance(name, str) or not name:
        problems.append(Problem((*loc, "name"), f"expected a non-empty string, got {name!r}"))
        ok = False
    config = value.get("configuration", {})
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        problems.append(Problem((*loc, "configuration"), f"expected an object, got {config!r}"))
        ok = False
    must = value.get("must_understand", True)
    if not isinstance(must, bool):
        problems.append(Problem((*loc, "must_understand"), f"expected true or false, got {must!r}"))
        ok = False
    if not value.keys() <= _FIELDS:
        for extra in sorted(set(value) - _FIELDS):
            problems.append(Problem(loc, f"unexpected field {extra!r}{did_you_mean(extra, _FIELDS)} in an extension "
                                         f"object; allowed: {', '.join(map(repr, sorted(_FIELDS)))}"))
        ok = False
    return _shared(name, config, must) if ok and isinstance(name, str) else None


def _shared(name: str, config: Mapping[str, Any], must: bool) -> NamedConfig:
    """The one NamedConfig of these settings (a new one once the table is full)."""
    key = (name, must, _frozen(config)) if config else (name, must)
    shared = _SHARED.get(key)
    if shared is None:
        shared = NamedConfig(name, dict(config), must)
        if len(_SHARED) < _SHARED_MAX:
            _SHARED[key] = shared
    return shared


def _frozen(config: Mapping[str, Any]) -> Any:
    """A hashable form of a configuration that keeps each setting's JSON type (``1``,
    ``1.0`` and ``true`` stay distinct): its items with their types when they are plain
    values, else its JSON text (nested codec lists)."""
    items = tuple(config.items())
    try:
        hash(items)
    except TypeError:
        return json.dumps(config, default=repr)
    return items, tuple([type(v) for v in config.values()])
