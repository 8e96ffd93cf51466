"""Reading and writing node metadata documents (the only metadata I/O).

Detecting a v3 node costs one read (``zarr.json``); a v2 node one more batched call
(``.zarray``, ``.zgroup``, ``.zattrs`` and ``.zmetadata`` together). Where neither is
found, one more batched call looks for the old formats, which are read only: a Zarr v1
array (``meta`` + ``attrs``) and the v3.0 draft (the root ``zarr.json`` declares it; its
documents lie under ``meta/root``, listed once per group opened), and N5 (``attributes.json``,
``metadata/n5.py``; a directory of a container without one is a group, found by a listing).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import MetadataError, NodeNotFoundError, StoreError
from ..metadata.nodes import NodeMetadata
from ..metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from ..metadata.parsed_cache import parse_v3_cached
from ..metadata.n5 import N5_DOCUMENT, is_n5_container, parse_n5
from ..metadata.v1 import V1_DOCUMENTS, is_v1, parse_v1
from ..metadata.v3draft import (
    DRAFT_FORMAT,
    GroupMetadataDraft,
    document_key,
    is_draft_entry_point,
    parse_draft_array,
    parse_draft_group,
)
from ..metadata.v3 import ArrayMetadataV3, GroupMetadataV3, flatten_consolidated, parse_json_document, parse_v3
from ..storage.base import Store, join_path

__all__ = ["NodeMetadata", "encode_node", "explain_missing", "read_node", "read_nodes", "write_node", "parse_node_documents"]

_V2_NAMES = (".zarray", ".zgroup", ".zattrs", ".zmetadata")


def parse_node_documents(docs: Mapping[str, Any], path: str, zarr_format: int | None = None,
                         consolidated: bool = True, raw: bytes | None = None) -> NodeMetadata | None:
    """Build node metadata from already-decoded documents keyed by file name; None if no node.
    ``consolidated=False`` leaves a group's consolidated metadata out, unparsed (a stale or
    broken copy must not stop a caller who asked to ignore it). ``raw``: the bytes the
    ``zarr.json`` was decoded from, when it came from a store (parsed once per distinct
    bytes, ``metadata/parsed_cache.py``)."""
    for name, doc in docs.items():  # (documents from a store are checked on decoding, from .zmetadata here)
        if not isinstance(doc, Mapping):
            raise MetadataError(f"expected a JSON object, got {type(doc).__name__}", key=join_path(path, name))
    if "zarr.json" in docs and zarr_format in (None, 3):
        doc = docs["zarr.json"]
        if doc.get("zarr_format") == 2:
            raise MetadataError("zarr.json declares zarr_format 2", key=join_path(path, "zarr.json"))
        if doc.get("zarr_format") != 3:
            raise MetadataError(f"zarr.json declares zarr_format {doc.get('zarr_format')!r}, a format zarrdask cannot "
                                "read (it reads Zarr v3, v2, v1 and the v3.0 draft of 2019-2022, whose root "
                                f"zarr.json declares {DRAFT_FORMAT!r})", key=join_path(path, "zarr.json"))
        if not consolidated and "consolidated_metadata" in doc:
            doc = {k: v for k, v in doc.items() if k != "consolidated_metadata"}
        if raw is not None:
            return parse_v3_cached(raw, doc, join_path(path, "zarr.json"), consolidated)
        return parse_v3(doc, key=join_path(path, "zarr.json"))
    if zarr_format == 3:
        return None
    attrs = docs.get(".zattrs")
    if ".zarray" in docs:
        return ArrayMetadataV2.from_json(docs[".zarray"], attrs, key=join_path(path, ".zarray"))
    if ".zgroup" in docs:
        meta = GroupMetadataV2.from_json(docs[".zgroup"], attrs, key=join_path(path, ".zgroup"))
        zmeta = docs.get(".zmetadata") if consolidated else None
        if isinstance(zmeta, Mapping) and isinstance(zmeta.get("metadata"), Mapping):
            meta = meta.evolve(consolidated=dict(zmeta["metadata"]))
        return meta
    return None


def read_nodes(store: Store, paths: Sequence[str], zarr_format: int | None = None,
               consolidated: bool = True) -> list[NodeMetadata | None]:
    """Metadata of many nodes (``None`` where there is no node): one batched fetch of every
    ``zarr.json``, then one of the v2 documents for the paths that have none."""
    docs: list[dict[str, Any]] = [{} for _ in paths]
    raws: list[bytes | None] = [None] * len(paths)
    _fetch_documents(store, paths, range(len(paths)), ("zarr.json",), docs, raws)
    draft = any(is_draft_entry_point(d.get("zarr.json")) for d, p in zip(docs, paths) if not p)
    for d, p in zip(docs, paths):
        if draft and not p:
            d.clear()  # the draft's entry point describes the store; the root node is in meta/root
    if zarr_format != 3:
        v2 = [i for i, d in enumerate(docs) if not d]
        _fetch_documents(store, paths, v2, _V2_NAMES, docs, None)
    found = [parse_node_documents(d, path, zarr_format, consolidated, raw) for d, path, raw in zip(docs, paths, raws)]
    missing = [i for i, m in enumerate(found) if m is None]
    if missing:
        for i, meta in zip(missing, _read_old_formats(store, [paths[i] for i in missing], zarr_format, draft)):
            found[i] = meta
    return found


def _read_old_formats(store: Store, paths: Sequence[str], zarr_format: int | None,
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


def _fetch_documents(store: Store, paths: Sequence[str], which: Sequence[int], names: Sequence[str],
                     docs: list[dict[str, Any]], raws: list[bytes | None] | None) -> None:
    """Fetch and decode documents ``names`` of nodes ``which`` into ``docs`` (and, when
    ``raws`` is given, the one name's bytes into it)."""
    keys = [join_path(paths[i], n) for i in which for n in names]
    blobs = iter(store.get_many(keys))
    for i in which:
        for name in names:
            blob = next(blobs)
            if blob is not None:
                docs[i][name] = parse_json_document(blob, join_path(paths[i], name))
                if raws is not None:
                    raws[i] = blob


def read_node(store: Store, path: str, zarr_format: int | None = None, consolidated: bool = True) -> NodeMetadata:
    """Metadata of the node at ``path``; NodeNotFoundError when there is none.
    ``consolidated=False``: without a group's consolidated metadata."""
    meta = read_nodes(store, [path], zarr_format, consolidated)[0]
    if meta is None:
        raise NodeNotFoundError(f"no array or group at {path or '<root>'!r} in {store!r}")
    return meta


def encode_node(path: str, metadata: NodeMetadata) -> dict[str, bytes]:
    """The node's documents as bytes; MetadataError (nothing written) if they are not JSON."""
    try:
        return metadata.to_documents()
    except (TypeError, ValueError) as exc:
        name = "zarr.json" if metadata.zarr_format == 3 else ".zattrs"
        raise MetadataError(f"attributes: metadata is not JSON-serializable: {exc}",
                            key=join_path(path, name)) from None


def write_node(store: Store, path: str, metadata: NodeMetadata, *, created: bool = False) -> None:
    """Persist node metadata (each document atomically); v2 removes a now-empty .zattrs.

    Every ancestor group holding consolidated metadata gets the node's new entry in the
    same call (``created``: a node made anew, so entries of old nodes below it go too),
    so that zarrdask, zarr-python and xarray opening it consolidated see the change."""
    docs = {join_path(path, name): data for name, data in encode_node(path, metadata).items()}
    store.set_many(docs)
    if metadata.zarr_format == 2 and not metadata.attributes:
        store.delete(join_path(path, ".zattrs"))
    _update_consolidated(store, path, metadata, created)


def _update_consolidated(store: Store, path: str, metadata: NodeMetadata, created: bool) -> None:
    """Replace ``path``'s entry in the consolidated metadata of every ancestor group that
    has some (one batched read of the ancestors' documents; a rewrite where there is one).
    Works on the JSON: nothing else of the consolidated copy is parsed or changed."""
    if not path:
        return
    parts = path.split("/")
    ancestors = ["/".join(parts[:i]) for i in range(len(parts))]
    name = "zarr.json" if metadata.zarr_format == 3 else ".zmetadata"
    keys = [join_path(a, name) for a in ancestors]
    node_docs = {n: json.loads(d) for n, d in encode_node(path, metadata).items()}
    for ancestor, key, blob in zip(ancestors, keys, store.get_many(keys)):
        if blob is None:
            continue
        doc = parse_json_document(blob, key)
        rel = path[len(ancestor) + 1:] if ancestor else path
        if metadata.zarr_format == 3:
            cm = doc.get("consolidated_metadata") if isinstance(doc, dict) else None
            if not isinstance(cm, dict) or not isinstance(cm.get("metadata"), Mapping):
                continue
            entries = flatten_consolidated(cm["metadata"])
            if created:
                entries = {k: v for k, v in entries.items() if not k.startswith(rel + "/")}
            entry = dict(node_docs["zarr.json"])
            entry.pop("consolidated_metadata", None)
            entries[rel] = entry
            cm["metadata"] = dict(sorted(entries.items()))
        else:
            listed = doc.get("metadata") if isinstance(doc, dict) else None
            if not isinstance(listed, dict):
                continue
            gone = [k for k in listed if k.rsplit("/", 1)[0] == rel or (created and k.startswith(rel + "/"))]
            for k in gone:
                del listed[k]
            listed.update({f"{rel}/{n}": d for n, d in node_docs.items()})
        store.set(key, dumps(doc))


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=True).encode("utf-8")


def explain_missing(store: Store, path: str, zarr_format: int | None = None,
                    create_hint: str | None = None) -> NodeNotFoundError:
    """The error for "no node at ``path``", telling the cases apart: a node of the other
    Zarr version than ``zarr_format`` asked for, a missing path, a plain file, an empty
    directory, or a location holding other things but no Zarr metadata. ``create_hint``
    (how the caller's function creates a node) is added where creating one would work.
    Costs one batched read and one listing (only on this error path)."""
    where = f"no array or group at {path or '<root>'!r} in {store!r}"
    if zarr_format in (2, 3):
        other = 2 if zarr_format == 3 else 3
        names = _V2_NAMES[:2] if other == 2 else ("zarr.json",)
        found = [n for n, blob in zip(names, store.get_many([join_path(path, n) for n in names])) if blob is not None]
        if found:
            return NodeNotFoundError(f"{where}: it holds Zarr v{other} metadata ({found[0]}); open with "
                                     f"zarr_format={other} or leave zarr_format unset")
    local = store.file_of(path)
    if local is not None and os.path.isfile(local):
        return NodeNotFoundError(f"{where}: {local!r} is a file, not a Zarr store (a Zarr store is a directory "
                                 "holding zarr.json, or .zarray/.zgroup for Zarr v2)")
    try:
        files, dirs = store.list_dir(path)
    except (StoreError, NotImplementedError, OSError):
        return NodeNotFoundError(where)
    if files or dirs:
        shown = ", ".join([*files[:5], *(d + "/" for d in dirs[:5])])
        return NodeNotFoundError(f"{where}: not a Zarr store: it holds {shown} but no zarr.json (Zarr v3) "
                                 "or .zarray/.zgroup (Zarr v2)")
    if local is not None and not os.path.exists(local):
        reason = f"the path {local!r} does not exist"
    elif local is not None:
        reason = f"{local!r} is an empty directory"
    else:
        reason = "nothing is stored under it"
    return NodeNotFoundError(f"{where}: {reason}" + (f"; {create_hint}" if create_hint else ""))
