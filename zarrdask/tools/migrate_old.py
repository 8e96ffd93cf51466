"""``migrate`` of the old formats: Zarr v1 and the v3.0 draft of 2019-2022, to Zarr v3.1.

A v1 array keeps its chunks where they are (``0.0`` is the ``v2`` chunk key encoding with
``.``): its ``meta``/``attrs`` become a ``zarr.json`` as a v2 array's would. A draft store
keeps its chunks under ``data/root/<path>/c0/1``, a prefix no v3.1 chunk key encoding
expresses, so it is copied to a new store: every node's ``zarr.json`` (implicit groups
become explicit ones) and every chunk byte for byte under its v3.1 key (``c/0/1``, the
``default`` encoding with the draft's separator); nothing is decoded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..nodes.array import Array
from ..door.node_io import NodeMetadata
from ..errors import ContainsNodeError, InvalidModeError
from ..metadata.v1 import V1_DOCUMENTS, ArrayMetadataV1
from ..metadata.v2 import ArrayMetadataV2
from ..metadata.v3 import ArrayMetadataV3, GroupMetadataV3, parse_v3
from ..metadata.v3draft import SOURCE_FORMAT, ArrayMetadataDraft, GroupMetadataDraft
from ..storage.base import Store, join_path

__all__ = ["draft_needs_copy", "copy_draft", "v1_removed"]

_BATCH = 256  # chunks per batched copy


def v1_removed(path: str, meta: NodeMetadata) -> tuple[str, ...]:
    """The documents a v1 array's ``zarr.json`` replaces (none for other nodes)."""
    return tuple(join_path(path, n) for n in V1_DOCUMENTS) if isinstance(meta, ArrayMetadataV1) else ()


def draft_needs_copy(meta: NodeMetadata, where: str) -> InvalidModeError | None:
    """The error for migrating a draft store in place (None for other formats)."""
    if not isinstance(meta, (ArrayMetadataDraft, GroupMetadataDraft)):
        return None
    return InvalidModeError(f"{where} holds {SOURCE_FORMAT} (zarr_format "
                            "'https://purl.org/zarr/spec/protocol/core/3.0'), whose chunks lie under data/root/, "
                            "where no Zarr v3.1 chunk key encoding can find them: it needs a copy; "
                            "zarrdask.migrate(source, target=new_store) (`zarrdask migrate SOURCE --target NEW`) "
                            "writes the v3.1 store, copying every chunk byte for byte")


#: the v3 ``zarr.json`` of a v2 array (``migrate_v2.array_document``), passed in by ``migrate``
ToV3 = Callable[[ArrayMetadataV2, str], dict[str, Any]]


def _draft_array_v3(meta: ArrayMetadataDraft, key: str, to_v3: ToV3) -> ArrayMetadataV3:
    doc = to_v3(meta, key)
    doc["chunk_key_encoding"] = {"name": "default", "configuration": {"separator": meta.dimension_separator}}
    new = parse_v3(doc, key=key)
    assert isinstance(new, ArrayMetadataV3)
    return new


def draft_documents(path: str, meta: NodeMetadata, to_v3: ToV3) -> dict[str, Any]:
    """The v3.1 metadata of the draft node at ``path`` and of every node below it, by path
    relative to it ("" the node itself); groups (implicit ones too) keep their attributes."""
    key = f"meta/root/{path}"
    if isinstance(meta, ArrayMetadataDraft):
        return {"": _draft_array_v3(meta, key, to_v3)}
    assert isinstance(meta, GroupMetadataDraft)
    out: dict[str, Any] = {"": GroupMetadataV3(attributes=dict(meta.attributes))}
    for rel, node in sorted((meta.consolidated or {}).items()):
        if isinstance(node, ArrayMetadataDraft):
            out[rel] = _draft_array_v3(node, f"meta/root/{join_path(path, rel)}", to_v3)
        else:
            out[rel] = GroupMetadataV3(attributes=dict(node.attributes))
    return out


def copy_draft(src: Store, path: str, meta: NodeMetadata, dst: Store, *, dry_run: bool,
               to_v3: ToV3) -> dict[str, Any]:
    """Copy the draft node at ``path`` (and everything below it) to the root of ``dst`` as
    Zarr v3.1: documents first checked (each array's chain built), then chunks byte for
    byte, then the documents. Returns the new metadata by relative path."""
    converted = draft_documents(path, meta, to_v3)
    for rel, new in converted.items():
        if isinstance(new, ArrayMetadataV3):
            Array(dst, rel, new)  # the chain builds for this chunk shape, or a MetadataError names the key
    if any(True for _ in dst.list_prefix("")):
        raise ContainsNodeError(f"the target {dst.url} is not empty: migrate copies a draft store into an empty one")
    if dry_run:
        return converted
    nodes = {"": meta, **(meta.consolidated or {})} if isinstance(meta, GroupMetadataDraft) else {"": meta}
    for rel, node in nodes.items():
        if isinstance(node, ArrayMetadataDraft):
            _copy_chunks(src, node.chunk_prefix(join_path(path, rel)), dst, rel, node.dimension_separator)
    dst.set_many({join_path(rel, name): blob for rel, new in converted.items()
                  for name, blob in new.to_documents().items()})
    return converted


def _copy_chunks(src: Store, prefix: str, dst: Store, rel: str, separator: str) -> None:
    """Every stored chunk of one draft array (keys ``<prefix>/c0/1``) to ``<rel>/c/0/1``."""
    keys = sorted(k for k in src.list_prefix(prefix) if k[len(prefix) + 1:].startswith("c"))
    for i in range(0, len(keys), _BATCH):
        batch = keys[i:i + _BATCH]
        moved = {}
        for k, blob in zip(batch, src.get_many(batch)):
            name = k[len(prefix) + 1:]
            if blob is not None:
                moved[join_path(rel, "c" + (separator + name[1:] if len(name) > 1 else ""))] = blob
        dst.set_many(moved)
