"""Parsed ``zarr.json`` documents, shared between opens of the same bytes.

Parsing the document is most of opening an array, and a dataset's arrays are opened again
by every task and every ``open_dataset`` (a group's consolidated metadata holds all of
them). Node metadata is immutable, so one parse serves every open of a byte-identical
document. Attributes are the exception: they are plain JSON values a caller may change in
place, so every open gets those of its own freshly decoded document (a group's
consolidated members' too), and nothing a caller can reach is shared. Only documents that
parsed are kept; a bad one raises its error on every open.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Union

from .v3 import ArrayMetadataV3, GroupMetadataV3, flatten_consolidated, parse_v3

__all__ = ["CACHE_BYTES", "parse_v3_cached"]

Metadata = Union[ArrayMetadataV3, GroupMetadataV3]

#: documents kept, at most this many bytes of them in all (least recently used dropped)
CACHE_BYTES = 16 << 20

_parsed: OrderedDict[tuple[bytes, bool], Metadata] = OrderedDict()
_held = 0
_lock = threading.Lock()


def parse_v3_cached(raw: bytes, doc: Mapping[str, Any], key: str, consolidated: bool) -> Metadata:
    """``parse_v3(doc)`` for ``doc`` decoded from ``raw`` (without its consolidated metadata
    when ``consolidated`` is False), parsed once per distinct ``raw``."""
    global _held
    entry = (bytes(raw), consolidated)
    with _lock:
        hit = _parsed.get(entry)
        if hit is not None:
            _parsed.move_to_end(entry)
    if hit is not None:
        return _with_attributes_of(hit, doc)
    meta = parse_v3(doc, key)
    if len(raw) <= CACHE_BYTES // 4:
        with _lock:
            if entry not in _parsed:
                _parsed[entry] = meta
                _held += len(raw)
            while _held > CACHE_BYTES:
                (old, _), _ = _parsed.popitem(last=False)
                _held -= len(old)
    return meta


def _with_attributes_of(meta: Metadata, doc: Mapping[str, Any]) -> Metadata:
    """``meta`` holding the attributes of ``doc`` (a document that parsed to it)."""
    attributes = dict(doc.get("attributes", {}))
    if isinstance(meta, ArrayMetadataV3):
        return _copy(meta, attributes=attributes)
    members = meta.consolidated
    if members is not None:
        fresh = flatten_consolidated(doc["consolidated_metadata"].get("metadata", {}))
        members = {path: _copy(node, attributes=dict(fresh[path].get("attributes", {})))
                   for path, node in members.items()}
    return _copy(meta, attributes=attributes, consolidated=members)


_FIELDS: dict[type, tuple[str, ...]] = {}
_set = object.__setattr__


def _copy(meta: Metadata, **changes: Any) -> Metadata:
    """``dataclasses.replace(meta, **changes)`` for a parsed node's metadata, without its
    walk over the fields per call (a consolidated group's every member is copied per open).
    The metadata classes are frozen dataclasses whose ``__init__`` only stores the fields
    (no ``__post_init__``), so copying the fields is what ``replace`` does."""
    cls = type(meta)
    names = _FIELDS.get(cls)
    if names is None:
        assert not hasattr(cls, "__post_init__"), cls
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    new = object.__new__(cls)
    for name in names:
        _set(new, name, changes[name] if name in changes else getattr(meta, name))
    return new
