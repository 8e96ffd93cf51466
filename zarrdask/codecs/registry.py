"""Codec registry: name (or alias) -> codec class, extendable by users.

``register_codec(cls)`` adds a class under ``cls.name`` and its aliases. Codecs
packaged elsewhere are found through the entry-point group ``zarrdask.codecs``
(entry name = codec name, value = the class), loaded on first lookup of that name.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from .base import Codec

__all__ = ["register_codec", "get_codec_class", "registered_codecs"]

_REGISTRY: dict[str, type[Codec]] = {}


def register_codec(cls: type[Codec]) -> type[Codec]:
    """Register a codec class (usable as a decorator)."""
    for name in (cls.name, *cls.aliases):
        _REGISTRY[name] = cls
    return cls


def get_codec_class(name: str) -> type[Codec] | None:
    """The class registered for ``name``, or ``None`` when nobody provides it."""
    cls = _REGISTRY.get(name)
    if cls is None:
        for ep in entry_points(group="zarrdask.codecs"):
            if ep.name == name:
                cls = _REGISTRY[name] = ep.load()
                break
    return cls


def registered_codecs() -> list[str]:
    return sorted(_REGISTRY)
