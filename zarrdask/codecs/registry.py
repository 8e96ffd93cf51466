"""Codec registry: name (or alias) -> codec class, extendable by users.

``register_codec(cls)`` adds a class under ``cls.name`` and its aliases. Codecs
packaged elsewhere are found through the entry-point group ``zarrdask.codecs``
(entry name = codec name, value = the class), loaded on first lookup of that name.
An unknown name is reported with the nearest known one (``unknown_codec``, and
``unknown_numcodecs_id`` for the numcodecs ids of v2 ``compressor``/``filters``).

The registry also finds the class that answers for a codec's JSON (``class_for``: the
pipeline's own unlisted codecs too, ``register_unlisted``) or for a numcodecs id
(``numcodecs_twin``), and so whether a chain keeps a checksum (``chain_checksummed``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any

from ..errors import Problem
from ..keywords import did_you_mean
from .base import Codec

__all__ = ["chain_checksummed", "class_for", "get_codec_class", "numcodecs_checksummed", "numcodecs_twin",
           "register_codec", "register_unlisted", "registered_codecs", "unknown_codec", "unknown_numcodecs_id"]

_REGISTRY: dict[str, type[Codec]] = {}
#: codecs the pipeline builds itself (the v2 adapters): no metadata names them
_UNLISTED: dict[str, type[Codec]] = {}
_GROUP = "zarrdask.codecs"


def register_codec(cls: type[Codec]) -> type[Codec]:
    """Register a codec class (usable as a decorator)."""
    for name in (cls.name, *cls.aliases):
        _REGISTRY[name] = cls
    return cls


def register_unlisted(cls: type[Codec]) -> type[Codec]:
    """Register a codec only the pipeline builds (a decorator): ``class_for`` finds it by
    the name in its JSON, metadata cannot name it."""
    _UNLISTED[cls.name] = cls
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


def numcodecs_twin(codec_id: object) -> type[Codec] | None:
    """The class that answers for numcodecs id ``codec_id``: the codec of a v3 name that
    claims it (``numcodecs_ids``), else the ``numcodecs.<id>`` one, else None."""
    claiming = [cls for cls in _REGISTRY.values() if codec_id in cls.numcodecs_ids]
    named = [cls for cls in claiming if not cls.name.startswith("numcodecs.")]
    return next(iter(named or claiming), None)


def class_for(name: str) -> type[Codec] | None:
    """The class that answers for codec JSON named ``name``: registered (entry points are
    not loaded for this) or unlisted, else the twin of numcodecs id ``name`` (without a
    ``numcodecs.`` prefix)."""
    return _REGISTRY.get(name) or _UNLISTED.get(name) or numcodecs_twin(name.removeprefix("numcodecs."))


def numcodecs_checksummed(config: Mapping[str, Any]) -> bool:
    """Whether a numcodecs config (with its ``id``) encodes with a checksum its decoder checks."""
    twin = numcodecs_twin(config.get("id"))
    return twin is not None and twin.checksummed(config)


def chain_checksummed(codecs: Sequence[Any]) -> bool:
    """True when a codec of a JSON chain (dicts, or short-hand names) keeps a checksum of
    what it encodes, as each codec class answers for its configuration."""
    for codec in codecs:
        name, config = (codec, {}) if isinstance(codec, str) else (codec["name"], codec.get("configuration") or {})
        cls = class_for(name)
        if cls is not None and cls.checksummed(config):
            return True
    return False


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
