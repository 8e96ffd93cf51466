"""Codecs as users pass them to ``create_array`` -> codec JSON for v3 or v2 metadata.

Accepted: a codec name (``"zstd"``), a v3 dict (``{"name": ..., "configuration": ...}``),
a numcodecs config dict (``{"id": ...}``), a numcodecs codec object (``get_config()``),
a zarr-python codec object (recognised by ``to_dict()`` giving v3 JSON; zarr is never
imported) and a zarrdask :class:`~zarrdask.codecs.base.Codec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..codecs.base import codec_json_of
from ..codecs.registry import class_for, get_codec_class, numcodecs_twin, registered_codecs
from ..compat.zarr_python import tunable_settings
from ..errors import MetadataError, Problem, UnknownExtensionError
from ..keywords import did_you_mean

__all__ = ["as_list", "codec_json_v2", "codec_json_v3"]

_ACCEPTED = ("a codec name ('zstd'), a dict {'name': ..., 'configuration': ...}, a numcodecs codec "
             "(numcodecs.Zstd(level=3)) or a zarr.codecs object (zarr.codecs.ZstdCodec(level=3))")


def as_list(value: Any) -> list[Any]:
    """None -> [], a list/tuple -> list, one codec -> [codec]."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _plain(value: Any) -> Any:
    """JSON-shaped copy: tuples (zarr-python's ``to_dict`` gives some) become lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _bad(obj: Any, where: tuple[str | int, ...]) -> MetadataError:
    return MetadataError([Problem(where, f"cannot interpret {obj!r} as a codec; expected {_ACCEPTED}")])


def _check_name(name: Any, where: tuple[str | int, ...]) -> None:
    """An unknown v3 codec name is refused here, naming the keyword and the nearest known name."""
    if not isinstance(name, str):
        raise MetadataError([Problem((*where, "name"), f"a codec name must be a string, got {name!r}")])
    if get_codec_class(name) is not None:
        return
    known = registered_codecs()
    hint = did_you_mean(name, known)
    if not hint and get_codec_class(f"numcodecs.{name}") is not None:
        hint = f" (did you mean 'numcodecs.{name}'?)"
    raise UnknownExtensionError([Problem(where, f"unknown codec {name!r}{hint}; known: {', '.join(known)}")])


def codec_json_v3(obj: Any, where: tuple[str | int, ...]) -> dict[str, Any]:
    """One codec -> v3 JSON ``{"name": ..., "configuration": ...}``; ``where`` names the
    keyword and position for errors (``("compressors", 0)``)."""
    own = codec_json_of(obj)
    if own is not None:
        return own
    if hasattr(obj, "to_dict") and not isinstance(obj, Mapping):
        obj = _zarr_python_codec(obj)
    elif hasattr(obj, "get_config"):
        obj = obj.get_config()  # a numcodecs codec
    if isinstance(obj, str):
        obj = {"name": obj}
    if isinstance(obj, Mapping) and "name" in obj:
        _check_name(obj["name"], where)
        plain: dict[str, Any] = _plain(obj)
        return plain
    if isinstance(obj, Mapping) and "id" in obj:
        return _numcodecs_to_v3(obj)
    raise _bad(obj, where)


def _zarr_python_codec(obj: Any) -> Any:
    """A zarr-python codec object's JSON, without the settings it leaves to the data type."""
    doc = obj.to_dict()
    tunable = tunable_settings(obj)
    if tunable and isinstance(doc, Mapping) and isinstance(doc.get("configuration"), Mapping):
        doc = {**doc, "configuration": {k: v for k, v in doc["configuration"].items() if k not in tunable}}
    return doc


def _numcodecs_to_v3(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A numcodecs config -> the v3 codec its twin class names (``Codec.from_numcodecs``),
    else ``numcodecs.<id>`` with the same settings."""
    config = {k: v for k, v in obj.items() if k != "id"}
    codec_id = obj["id"]
    twin = numcodecs_twin(codec_id)
    v3 = twin.from_numcodecs(config) if twin is not None else None
    return v3 if v3 is not None else {"name": f"numcodecs.{codec_id}", "configuration": _plain(config)}


def codec_json_v2(obj: Any, where: tuple[str | int, ...]) -> dict[str, Any]:
    """One codec -> a numcodecs config ``{"id": ...}`` for v2 metadata."""
    if hasattr(obj, "to_dict") and not isinstance(obj, Mapping):
        obj = obj.to_dict()
    elif hasattr(obj, "get_config"):
        return dict(obj.get_config())
    if isinstance(obj, str):
        obj = {"id": obj}
    obj = codec_json_of(obj) or obj
    if isinstance(obj, Mapping) and "id" in obj:
        plain: dict[str, Any] = _plain(obj)
        return plain
    if isinstance(obj, Mapping) and "name" in obj:
        name, config = obj["name"], _plain(obj.get("configuration") or {})
        cls = class_for(name) if isinstance(name, str) else None
        if cls is not None and cls.numcodecs_ids:  # (its twin's config: Codec.to_numcodecs)
            return cls.to_numcodecs(config)
        return {"id": name.removeprefix("numcodecs."), **config}
    raise _bad(obj, where)
