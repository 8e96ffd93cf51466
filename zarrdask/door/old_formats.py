"""The old formats of Zarr's family, found where no v3 or v2 node is: a Zarr v1 array
(``meta`` + ``attrs``), the v3.0 draft (the root ``zarr.json`` declares it; its documents
lie under ``meta/root``, listed once per group opened) and N5 (``attributes.json``; a
directory of a container without one is a group, found by a listing). Each is read as
the v2 or v3 metadata it equals (``metadata/v1.py``, ``v3draft.py``, ``n5.py``), so
nothing past the door asks which format a node came from."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..errors import StoreError
from ..metadata.n5 import N5_DOCUMENT, is_n5_container, parse_n5
from ..metadata.nodes import NodeMetadata
from ..metadata.v1 import V1_DOCUMENTS, is_v1, parse_v1
from ..metadata.v3 import parse_json_document
from ..metadata.v3draft import (
    GroupMetadataDraft,
    document_key,
    is_draft_entry_point,
    parse_draft_array,
    parse_draft_group,
)
from ..storage.base import Store, join_path

__all__ = ["read_old_formats"]


def read_old_formats(store: Store, paths: Sequence[str], zarr_format: int | None,
                      draft: bool) -> list[NodeMetadata | None]:
    """Nodes of the old formats at ``paths`` (None where there is none): one batched fetch
    of each path's v1 ``meta``/``attrs`` and N5 ``attributes.json``, and of the root
    ``zarr.json`` (unless ``draft`` already says the store is a v3.0 draft) and
    ``attributes.json``, then the draft's documents."""
    names = (*V1_DOCUMENTS, N5_DOCUMENT)
    keys = [join_path(p, n) for p in paths for n in names] + ([] if draft else ["zarr.json"]) + [N5_DOCUMENT]
    try:
        blobs = store.get_many(keys)
    except StoreError:  # a store that takes only today's Zarr keys (Icechunk) holds no old format
        return [None] * len(paths)
    if not draft:
        draft = is_draft_entry_point(_lenient_json(blobs[-2]))
    n5 = not draft and zarr_format in (None, 3) and is_n5_container(_lenient_json(blobs[-1]), store.url)
    out: list[NodeMetadata | None] = [None] * len(paths)
    for i, p in enumerate(paths):
        meta_blob, attrs_blob, n5_blob = blobs[3 * i:3 * i + 3]
        doc = _lenient_json(meta_blob)
        if is_v1(doc) and zarr_format in (None, 2):
            key = join_path(p, "meta")
            attrs = parse_json_document(attrs_blob, join_path(p, "attrs")) if attrs_blob is not None else {}
            out[i] = parse_v1(doc, attrs, key)
        elif n5 and (n5_blob is not None or _holds_anything(store, p)):
            key = join_path(p, N5_DOCUMENT)
            out[i] = parse_n5(parse_json_document(n5_blob, key) if n5_blob is not None else None, key)
    if draft:
        todo = [i for i, m in enumerate(out) if m is None]
        for i, meta in zip(todo, _read_draft_nodes(store, [paths[i] for i in todo])):
            out[i] = meta
    return out


def _holds_anything(store: Store, path: str) -> bool:
    """Whether anything is stored under ``path`` (False where the store cannot list)."""
    try:
        return any(store.list_dir(path))
    except (StoreError, NotImplementedError, OSError):
        return False


def _lenient_json(blob: bytes | None) -> Any:
    """A document that may be one (a v1 ``meta``, the root ``zarr.json``): None unless JSON."""
    if blob is None:
        return None
    try:
        return json.loads(blob)
    except (UnicodeDecodeError, ValueError):
        return None


def _read_draft_nodes(store: Store, paths: Sequence[str]) -> list[NodeMetadata | None]:
    """Nodes of a v3.0 draft store by hierarchy path: one batched fetch of their array and
    group documents; a group (explicit, or implicit: documents below it but none of its
    own) lists ``meta/root`` below it once and parses every node there."""
    keys = [document_key(p, kind) for p in paths for kind in ("array", "group")]
    blobs = store.get_many(keys)
    out: list[NodeMetadata | None] = []
    for i, p in enumerate(paths):
        array_blob, group_blob = blobs[2 * i], blobs[2 * i + 1]
        if array_blob is not None:
            out.append(parse_draft_array(parse_json_document(array_blob, keys[2 * i]), keys[2 * i]))
            continue
        group_doc = parse_json_document(group_blob, keys[2 * i + 1]) if group_blob is not None else None
        out.append(_draft_group(store, p, group_doc, keys[2 * i + 1]))
    return out


def _draft_group(store: Store, path: str, doc: dict[str, Any] | None, key: str) -> GroupMetadataDraft | None:
    """The draft group at ``path`` with every node below it; None when nothing is there."""
    prefix = document_key(path, "group")[:-len(".group.json")] + "/"
    docs: dict[str, tuple[str, str]] = {}  # relative path -> (kind, key)
    for k in store.list_prefix(prefix):
        for kind in ("array", "group"):
            if k.endswith(f".{kind}.json"):
                docs[k[len(prefix):-len(f".{kind}.json")]] = (kind, k)
    if doc is None and not docs:
        return None
    blobs = dict(zip([k for _, k in docs.values()], store.get_many([k for _, k in docs.values()])))
    nodes: dict[str, Any] = {}
    groups: dict[str, dict[str, Any] | None] = {}
    for rel, (kind, k) in docs.items():
        blob = blobs[k]
        if blob is None:
            continue
        if kind == "array":
            nodes[rel] = parse_draft_array(parse_json_document(blob, k), k)
        else:
            groups[rel] = parse_json_document(blob, k)
    for rel in list(nodes) + list(groups):  # implicit groups: every directory above a document
        parts = rel.split("/")
        for j in range(1, len(parts)):
            groups.setdefault("/".join(parts[:j]), None)
    for rel in sorted(groups, key=lambda g: -g.count("/")):  # deepest first: members before their group
        below = {q[len(rel) + 1:]: m for q, m in nodes.items() if q.startswith(rel + "/")}
        nodes[rel] = parse_draft_group(groups[rel], below, document_key(join_path(path, rel), "group"))
    return parse_draft_group(doc, nodes, key)
