"""Codec registry: name (or alias) -> codec class, extendable by users.

``register_codec(cls)`` adds a class under ``cls.name`` and its aliases. Codecs
packaged elsewhere are found through the entry-point group ``zarrdask.codecs``
(entry name = codec name, value = the class), loaded on first lookup of that name.
An unknown name is reported with the nearest known one (``unknown_codec``, and
``unknown_numcodecs_id`` for the numcodecs ids of v2 ``compressor``/``filters``).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import entry_points

from ..errors import Problem
from ..keywords import did_you_mean
from .base import Codec

__all__ = ["register_codec", "get_codec_class", "registered_codecs", "unknown_codec", "unknown_numcodecs_id"]

_REGISTRY: dict[str, type[Codec]] = {}
_GROUP = "zarrdask.codecs"


def register_codec(cls: type[Codec]) -> type[Codec]:
    """Register a codec class (usable as a decorator)."""
    for name in (cls.name, *cls.aliases):
        _REGISTRY[name] = cls
    return cls


def get_codec_class(name: str) -> type[Codec] | None:
    """The class registered for ``name``, or ``None`` when nobody provides it."""
    cls = _REGISTRY.get(name)
    if cls is None:
        for ep in entry_points(group=_GROUP):
            if ep.name == name:
                cls = _REGISTRY[name] = ep.load()
                break
    return cls


def registered_codecs() -> list[str]:
    return sorted(_REGISTRY)


def unknown_codec(name: str, loc: Sequence[str | int]) -> Problem:
    """The problem of a v3 codec name nobody provides (``loc`` is the path of its
    ``name``): the nearest known name, then every known one (entry points included)."""
    known = sorted({*_REGISTRY, *(ep.name for ep in entry_points(group=_GROUP))})
    return Problem(tuple(loc), f"unknown codec {name!r}{did_you_mean(name, known)}; known: {', '.join(known)}",
                   unknown_extension=True)


def unknown_numcodecs_id(codec_id: object, loc: Sequence[str | int]) -> Problem:
    """The problem of a v2 ``compressor``/``filters`` ``id`` numcodecs does not know
    (``loc`` is the path of the ``id``), with the nearest id numcodecs has."""
    from numcodecs import registry  # the v2 codecs are numcodecs'

    registry.run_entrypoints()
    known = sorted({*registry.codec_registry, *registry.entries})
    hint = did_you_mean(codec_id, known) if isinstance(codec_id, str) else ""
    return Problem(tuple(loc), f"unknown numcodecs codec {codec_id!r}{hint}; known: {', '.join(known)}",
                   unknown_extension=True)
