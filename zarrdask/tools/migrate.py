"""``migrate``: Zarr v2 metadata rewritten as v3 in place; no chunk is read or rewritten.

Each array's ``zarr.json`` keeps its chunks where they are (the ``v2`` chunk key
encoding with the array's separator) and describes the v2 encoding as a v3 codec chain:
``order: F`` becomes a ``transpose`` (reversed axes), numcodecs filters become
``numcodecs.<id>`` codecs (array->array before the ``bytes`` codec, bytes->bytes after
it), the byte order of the dtype becomes the ``bytes`` codec's ``endian``, object arrays
become ``string`` / ``variable_length_bytes`` with their ``vlen-*`` codec, and the
compressor becomes the v3 codec of the same name (``numcodecs.<id>`` otherwise).
``_ARRAY_DIMENSIONS`` becomes ``dimension_names``; a null fill value becomes the type's
default (the value v2 readers give missing chunks). Arrays xarray can open (those with
dimension names) get the ``_FillValue`` attribute xarray writes in v3, so that the
masking xarray applied through the v2 ``fill_value`` is kept. Groups that held
consolidated metadata hold it inline afterwards.

The old formats (:mod:`zarrdask.tools.migrate_old`): a Zarr v1 array is migrated in place
like a v2 array (its ``meta``/``attrs`` replaced); a v3.0-draft store needs ``target=``,
a new store it is copied to.

Everything is converted and checked before anything is written; then every
``zarr.json`` is written, and only then are the v2 documents removed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codecs.numcodecs_adapter import BYTES_TO_BYTES
from ..nodes.array import Array
from ..nodes.codec_input import codec_json_v3
from ..nodes.group import walk
from ..door.node_io import NodeMetadata, read_node
from ..metadata.dtypes import data_type_from_numpy, parse_data_type_v3, stored_dtype_v2
from ..errors import InvalidModeError, MetadataError, Problem
from ..metadata.n5 import SOURCE_FORMAT as N5_FORMAT
from ..metadata.v2 import ArrayMetadataV2
from ..metadata.v3 import ArrayMetadataV3, GroupMetadataV3, parse_v3
from ..door import resolve
from ..storage.base import Store, join_path
from .migrate_old import copy_draft, draft_needs_copy, v1_removed

__all__ = ["MigratedNode", "array_document", "migrate", "xarray_fill_attribute"]

_V2_DOCS = (".zarray", ".zgroup", ".zattrs", ".zmetadata")
_OBJECT_CODECS = {"vlen-utf8": ("string", ""), "vlen-bytes": ("variable_length_bytes", b"")}


@dataclass(frozen=True)
class MigratedNode:
    """One node's new ``zarr.json`` (``key``, ``document``) and the v2 keys it replaces."""

    path: str
    key: str
    document: dict[str, Any]
    removed: tuple[str, ...]


def migrate(store: Any, *, path: str = "", to: int = 3, dry_run: bool = False,
            storage_options: dict[str, Any] | None = None, target: Any = None,
            target_storage_options: dict[str, Any] | None = None) -> list[MigratedNode]:
    """Convert the v2 or v1 hierarchy (or array) at ``path`` to v3 metadata in place;
    returns the new documents (written unless ``dry_run``). Chunks are not touched. A
    v3.0-draft store is copied to ``target`` (an empty store) instead."""
    if to != 3:
        raise InvalidModeError(f"migrate converts Zarr v2, v1 and the v3.0 draft to v3; to={to!r} is not supported")
    s = resolve("zarrdask.migrate", store, mode="r" if dry_run or target is not None else "a",
                storage_options=storage_options, read=False).store
    path = path.strip("/")
    try:
        root = read_node(s, path, 2)
    except MetadataError:
        raise
    except FileNotFoundError:
        found = read_node(s, path)
        if found.source_format == N5_FORMAT:
            raise InvalidModeError(f"{path or '<root>'!r} in {s!r} is an N5 container, which migrate and copy do not "
                                   "convert yet; zarrdask.to_zarr(zarrdask.from_zarr(src, component=name), dst, "
                                   "component=name) copies one array's values into Zarr v3") from None
        if found.zarr_format == 3:
            raise InvalidModeError(f"{path or '<root>'!r} in {s!r} is already Zarr v3") from None
        raise
    needs_copy = draft_needs_copy(root, f"{path or '<root>'!r} in {s!r}")
    if needs_copy is not None and target is None:
        raise needs_copy
    if needs_copy is not None:
        dst = resolve("zarrdask.migrate", target, mode="a", storage_options=target_storage_options, read=False).store
        made = copy_draft(s, path, root, dst, dry_run=dry_run, to_v3=array_document)
        return [MigratedNode(rel, join_path(rel, "zarr.json"), m.to_json(), ()) for rel, m in sorted(made.items())]
    if target is not None:
        raise InvalidModeError(f"target= is for v3.0-draft stores, which are copied; {path or '<root>'!r} in {s!r} "
                               "is migrated in place (leave target unset)")
    nodes = {path: root}
    if root.node_type == "group":
        nodes.update({join_path(path, rel): m for rel, m in walk(s, path, root).items()})
    converted = {p: _convert(s, p, m) for p, m in nodes.items()}
    for p, m in nodes.items():
        if m.node_type == "group" and getattr(m, "consolidated", None) is not None:
            below = {q[len(p) + 1:] if p else q: c for q, c in converted.items() if q != p and q.startswith(p)}
            converted[p] = converted[p].evolve(consolidated=dict(sorted(below.items())))
    present = set(_existing_v2_docs(s, list(nodes)))
    result = []
    for p in sorted(converted):
        key = join_path(p, "zarr.json")
        removed = tuple(k for k in (join_path(p, d) for d in _V2_DOCS) if k in present) + v1_removed(p, nodes[p])
        result.append(MigratedNode(p, key, converted[p].to_json(), removed))
    if not dry_run:
        s.set_many({m.key: _dumps(m.document) for m in result})
        s.delete_many([k for m in result for k in m.removed])
    return result


def _existing_v2_docs(store: Store, paths: list[str]) -> list[str]:
    keys = [join_path(p, d) for p in paths for d in _V2_DOCS]
    return [k for k, blob in zip(keys, store.get_many(keys)) if blob is not None]


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=True).encode("utf-8")


def _convert(store: Store, path: str, meta: NodeMetadata) -> Any:
    """The v3 metadata of one v2 node, validated (an array's codec chain is built)."""
    if meta.node_type == "group":
        return GroupMetadataV3(attributes=dict(meta.attributes))
    assert isinstance(meta, ArrayMetadataV2)
    key = join_path(path, ".zarray")
    doc = array_document(meta, key)
    new = parse_v3(doc, key=key)
    Array(store, path, new)  # the chain builds for this chunk shape, or a MetadataError names the key
    return new


def _byte_orders(stored: np.dtype) -> set[str]:
    """The byte orders (``<``, ``>``) of a stored dtype's multi-byte values, field by field
    for a structured one (a v3 ``struct`` is stored with one ``bytes`` endian)."""
    if stored.fields is not None:
        return set().union(*(_byte_orders(stored.fields[name][0]) for name in stored.names or ()))
    if stored.itemsize == 1 or stored.byteorder == "|":
        return set()
    big = stored.byteorder == ">" or (stored.byteorder == "=" and sys.byteorder == "big")
    return {">" if big else "<"}


def array_document(meta: ArrayMetadataV2, key: str) -> dict[str, Any]:
    """The v3 ``zarr.json`` of a v2 array whose chunks stay where they are (``key``: its
    ``.zarray``, for errors)."""
    dims = meta.dimension_names
    attrs = dict(meta.attributes)
    if dims is not None:
        del attrs["_ARRAY_DIMENSIONS"]
    filters = [dict(f) for f in meta.filters or ()]
    if meta.data_type.family == "object":
        codec_id = filters[0]["id"] if filters else None
        if codec_id not in _OBJECT_CODECS:
            raise MetadataError([Problem(("filters", 0, "id"), f"object codec {codec_id!r} has no Zarr v3 "
                                                               f"equivalent (expected one of {sorted(_OBJECT_CODECS)})")],
                                key=key)
        name, default = _OBJECT_CODECS[codec_id]
        data_type = parse_data_type_v3(name)
        serializer: dict[str, Any] = {"name": codec_id}
        fill = meta.fill_value if isinstance(meta.fill_value, type(default)) else default
        filters = filters[1:]
        typesize = None
    else:
        data_type = data_type_from_numpy(meta.data_type.dtype)
        stored = stored_dtype_v2(meta.data_type)
        orders = _byte_orders(stored)
        if len(orders) > 1:
            raise MetadataError([Problem(("dtype",), f"the fields of {stored} are stored in both byte orders; a "
                                                     "Zarr v3 bytes codec stores all fields in one")], key=key)
        serializer = {"name": "bytes"}
        if orders:
            serializer["configuration"] = {"endian": "big" if orders == {">"} else "little"}
        fill = data_type.cast_fill(meta.fill_value)
        typesize = stored.itemsize
    chain: list[Any] = []
    if meta.order == "F" and len(meta.shape) > 1:
        chain.append({"name": "transpose", "configuration": {"order": list(reversed(range(len(meta.shape))))}})
    after: list[Any] = []
    for i, f in enumerate(filters):
        codec = {"name": f"numcodecs.{f['id']}", "configuration": _native_order(f, serializer, key, i)}
        if f["id"] in BYTES_TO_BYTES:
            after.append(codec)
        elif after:
            raise MetadataError([Problem(("filters", i), f"filter {f['id']!r} follows a bytes filter; no v3 chain "
                                                         "runs an array filter after a bytes one")], key=key)
        else:
            chain.append(codec)
    chain.append(serializer)
    chain.extend(after)
    if meta.compressor is not None:
        compressor = codec_json_v3(meta.compressor, ("compressor",))
        if compressor.get("name") == "blosc" and typesize is not None and not filters:
            compressor["configuration"]["typesize"] = typesize
        chain.append(compressor)
    doc: dict[str, Any] = {
        "zarr_format": 3, "node_type": "array", "shape": list(meta.shape), "data_type": data_type.to_json(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(meta.chunk_shape)}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": meta.dimension_separator}},
        "fill_value": data_type.fill_to_json(fill), "codecs": chain,
        "attributes": xarray_fill_attribute(attrs, meta) if dims is not None else attrs,
    }
    if dims is not None:
        doc["dimension_names"] = list(dims)
    return doc


def _native_order(config: Mapping[str, Any], serializer: Mapping[str, Any], key: str, i: int) -> dict[str, Any]:
    """A filter's configuration for a v3 chain. In v2 a filter sees the chunk in the stored
    byte order; in v3 array filters see it in native order and the ``bytes`` codec swaps
    afterwards, so a big-endian ``dtype``/``astype`` of a big-endian array becomes
    little-endian (the encoded bytes are the same)."""
    out = {k: v for k, v in config.items() if k != "id"}
    big = serializer.get("configuration", {}).get("endian") == "big"
    for name in ("dtype", "astype"):
        value = out.get(name)
        if isinstance(value, str) and value.startswith(">"):
            if not big:
                raise MetadataError([Problem(("filters", i, name), f"big-endian {value!r} in a little-endian array "
                                                                   "has no v3 equivalent")], key=key)
            out[name] = "<" + value[1:]
    return out


def xarray_fill_attribute(attrs: dict[str, Any], meta: ArrayMetadataV2) -> dict[str, Any]:
    """``_FillValue`` as xarray keeps it in v3 attributes. Reading v2, xarray takes the
    array's ``fill_value`` as ``_FillValue`` (or the attribute when the fill value is null);
    v3 readers take the attribute, in xarray's v3 encoding (base64 for floats)."""
    from ..xarray_backend.encoding import encode_fill_value_attr

    value = meta.fill_value if meta.fill_value is not None else attrs.get("_FillValue")
    if value is None or meta.data_type.family == "object":
        return attrs
    try:
        attrs["_FillValue"] = encode_fill_value_attr(value, meta.data_type.dtype)
    except (TypeError, ValueError) as exc:
        raise MetadataError([Problem(("fill_value",), f"{value!r} cannot be written as xarray's v3 _FillValue "
                                                      f"attribute: {exc}")]) from None
    return attrs
