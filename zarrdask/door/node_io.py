"""Reading and writing node metadata documents (the only metadata I/O).

Detecting a v3 node costs one read (``zarr.json``); a v2 node one more batched call
(``.zarray``, ``.zgroup``, ``.zattrs`` and ``.zmetadata`` together). Where neither is
found, one more batched call looks for the old formats (``old_formats.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from ..errors import MetadataError, NodeNotFoundError, StoreError
from ..metadata.n5 import N5_DOCUMENT, is_n5_container, is_n5_path, parse_n5
from ..metadata.nodes import NodeMetadata
from ..metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from ..metadata.parsed_cache import parse_v3_cached
from ..metadata.v3draft import DRAFT_FORMAT, is_draft_entry_point
from ..metadata.v3 import ArrayMetadataV3, GroupMetadataV3, flatten_consolidated, parse_json_document, parse_v3
from ..storage.base import Store, join_path
from .old_formats import read_old_formats

__all__ = ["NodeMetadata", "change_documents", "change_node", "encode_node", "consolidated_entries", "explain_missing", "forget_node", "read_node", "read_nodes", "write_node", "parse_node_documents"]

_V2_NAMES = (".zarray", ".zgroup", ".zattrs", ".zmetadata")
N = TypeVar("N", bound=NodeMetadata)


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
    ``zarr.json``, then one of the v2 documents for the paths that have none. With
    ``zarr_format=2`` the v2 documents come in the same batch (one round trip, not two); a
    node with a ``zarr.json`` is still a v3 one, its v2 documents neither decoded nor used."""
    both = zarr_format == 2
    fetched = _fetch_documents(store, paths, range(len(paths)), ("zarr.json", *_V2_NAMES) if both else ("zarr.json",))
    docs: list[dict[str, Any]] = [{} for _ in paths]
    raws: list[bytes | None] = [None] * len(paths)
    for i, got in enumerate(fetched):
        if "zarr.json" in got:
            key, raw = got.pop("zarr.json")
            docs[i]["zarr.json"] = parse_json_document(raw, key)
            raws[i] = raw
    draft = any(is_draft_entry_point(d.get("zarr.json")) for d, p in zip(docs, paths) if not p)
    for d, p in zip(docs, paths):
        if draft and not p:
            d.clear()  # the draft's entry point describes the store; the root node is in meta/root
    if zarr_format != 3:
        v2 = [i for i, d in enumerate(docs) if not d]
        if v2:
            for i, got in zip(v2, [fetched[i] for i in v2] if both else _fetch_documents(store, paths, v2, _V2_NAMES)):
                for name, (key, blob) in got.items():
                    docs[i][name] = parse_json_document(blob, key)
    found = [parse_node_documents(d, path, zarr_format, consolidated, raw) for d, path, raw in zip(docs, paths, raws)]
    missing = [i for i, m in enumerate(found) if m is None]
    if missing:
        for i, meta in zip(missing, read_old_formats(store, [paths[i] for i in missing], zarr_format, draft)):
            found[i] = meta
    return found


def _fetch_documents(store: Store, paths: Sequence[str], which: Sequence[int],
                     names: Sequence[str]) -> list[dict[str, tuple[str, bytes]]]:
    """Documents ``names`` of the nodes ``which``, in one batched fetch: per node, each
    one found as ``{name: (key, bytes)}``, undecoded."""
    keys = [join_path(paths[i], n) for i in which for n in names]
    blobs = store.get_many(keys)
    out: list[dict[str, tuple[str, bytes]]] = []
    at = 0
    for _ in which:
        got: dict[str, tuple[str, bytes]] = {}
        for name in names:
            blob = blobs[at]
            if blob is not None:
                got[name] = (keys[at], blob)
            at += 1
        out.append(got)
    return out


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
    _update_consolidated(store, path, metadata.zarr_format, created, group=metadata.node_type == "group")


#: how many times a guarded metadata change is read and applied again while other writers
#: keep changing the documents first
CHANGE_ATTEMPTS = 20


def change_node(store: Store, path: str, metadata: N, change: Callable[[N], N | None]) -> tuple[N, N]:
    """Apply ``change`` to the node's metadata as stored now, not to ``metadata`` (the
    caller's copy, perhaps read long ago), and store the result: one read-modify-write of
    the node's documents (:func:`change_documents`), so another process's change (an
    append, an attribute) is kept. The stored node must still be the caller's but for what
    changes in place (shape, attributes, consolidated metadata): a node deleted or made
    anew is an error naming the field. Returns the metadata as read and as stored (a
    ``change`` giving None stores nothing: the node as stored now, checked)."""
    names = sorted({*encode_node(path, metadata), *((".zattrs",) if metadata.zarr_format == 2 else ())})
    keys = [join_path(path, n) for n in names]
    done: list[tuple[N, N]] = []

    def step(values: Mapping[str, bytes | None]) -> dict[str, bytes | None] | None:
        docs = {n: parse_json_document(blob, k) for n, k in zip(names, keys) if (blob := values[k]) is not None}
        current: NodeMetadata | None
        if names == [N5_DOCUMENT]:  # (an N5 container's node)
            current = parse_n5(docs.get(N5_DOCUMENT), keys[0])
        else:
            current = parse_node_documents(docs, path, metadata.zarr_format) if docs else None
        _check_same_node(path, next(n for n in names if n != ".zattrs"), metadata, current)
        new = change(cast(N, current))
        done[:] = [(cast(N, current), cast(N, current) if new is None else new)]
        if new is None:
            return None
        encoded = encode_node(path, new)
        return {k: encoded.get(n) for n, k in zip(names, keys)}

    change_documents(store, keys, step)
    if done[0][0] is not done[0][1]:
        _update_consolidated(store, path, metadata.zarr_format, False, group=metadata.node_type == "group")
    return done[0]


def change_documents(store: Store, keys: Sequence[str],
                     step: Callable[[Mapping[str, bytes | None]], Mapping[str, bytes | None] | None]) -> None:
    """``step(values as stored now)`` gives the new values of ``keys`` (None: delete the key;
    a step giving None changes nothing), stored in one read-modify-write guarded as the store
    guards one (``Store.update``): where another writer changed them meanwhile they are read
    and ``step`` runs again, up to :data:`CHANGE_ATTEMPTS` times."""
    for _ in range(CHANGE_ATTEMPTS):
        with store.update(keys) as update:
            new = step(update.values)
            if new is None or not update.commit(new):
                return
    raise StoreError(f"{', '.join(keys)} in {store.url} changed {CHANGE_ATTEMPTS} times while this change was made "
                     "(other writers keep changing them); make the change again")


#: the fields of a node that change in place, as stored: what another open may have changed
_IN_PLACE = {"array": ("shape", "attributes"), "group": ("attributes", "consolidated")}


def _check_same_node(path: str, name: str, mine: NodeMetadata, current: NodeMetadata | None) -> None:
    """MetadataError unless ``current`` is ``mine`` but for the fields that change in place."""
    key = join_path(path, name)
    if current is None or current.node_type != mine.node_type or current.zarr_format != mine.zarr_format:
        found = "nothing" if current is None else f"a v{current.zarr_format} {current.node_type}"
        raise NodeNotFoundError(f"{key}: the {mine.node_type} opened here is gone (the store holds {found} there "
                                "now, written by another process); open it again")
    fields = {f: getattr(mine, f) for f in _IN_PLACE[mine.node_type] if hasattr(mine, f)}
    if encode_node(path, current.evolve(**fields)) != encode_node(path, mine):
        raise MetadataError(f"the {mine.node_type} opened here was made anew since (another process changed more "
                            "than its shape and attributes: its data type, chunks or codecs); open it again",
                            key=key)


def _update_consolidated(store: Store, path: str, zarr_format: int, created: bool, *, group: bool,
                         deleted: bool = False) -> None:
    """Make ``path``'s entry in the consolidated metadata of every group that holds some and
    lists it (its ancestors, and a v2 ``group`` itself: its ``.zmetadata`` lists its own
    ``.zgroup`` and ``.zattrs``) what the store holds at ``path`` now: its documents, or, where
    there are none (``deleted``, or deleted since), no entry for it or below it. ``created``:
    a node made anew, so entries below it go. One batched read of those groups' documents,
    then for each that has consolidated metadata a guarded read-modify-write that reads the
    node's documents with it: whichever writer commits last writes what the store holds by
    then, so two writers changing nodes of one group keep both changes. Works on the JSON:
    nothing else of the consolidated copy is parsed or changed."""
    parts = path.split("/") if path else []
    groups = ["/".join(parts[:i]) for i in range(len(parts))] + ([path] if zarr_format == 2 and group else [])
    name = "zarr.json" if zarr_format == 3 else ".zmetadata"
    keys = [join_path(g, name) for g in groups]
    names = () if deleted else ("zarr.json",) if zarr_format == 3 else (".zarray", ".zgroup", ".zattrs")
    node_keys = [join_path(path, n) for n in names]  # (none for a deleted node: nothing to read, or to lock)
    for at, key, blob in zip(groups, keys, store.get_many(keys)):
        if blob is None or consolidated_entries(parse_json_document(blob, key), zarr_format) is None:
            continue
        rel = path[len(at):].strip("/")

        def step(values: Mapping[str, bytes | None], key: str = key, rel: str = rel) -> dict[str, bytes | None] | None:
            blob = values[key]
            if blob is None:  # (gone since it was read)
                return None
            doc = parse_json_document(blob, key)
            listed = consolidated_entries(doc, zarr_format)
            if listed is None:  # (no longer consolidated)
                return None
            node = {n: json.loads(b) for n, k in zip(names, node_keys) if (b := values[k]) is not None}
            below = created or not node
            if zarr_format == 3:
                flat = {k: v for k, v in flatten_consolidated(listed).items()
                        if k != rel and not (below and k.startswith(rel + "/"))}
                if node:
                    flat[rel] = {k: v for k, v in node["zarr.json"].items() if k != "consolidated_metadata"}
                doc["consolidated_metadata"]["metadata"] = dict(sorted(flat.items()))
            else:
                own = [k for k in listed if (k.rsplit("/", 1)[0] if "/" in k else "") == rel]
                gone = own + ([k for k in listed if k.startswith(rel + "/") and k not in own] if below and rel else [])
                for k in gone:
                    del listed[k]
                listed.update({join_path(rel, n): d for n, d in node.items()})
                doc["metadata"] = dict(sorted(listed.items()))  # (zarr-python cannot list some other orders)
            return {key: dumps(doc)}

        change_documents(store, [key, *node_keys], step)


def consolidated_entries(doc: Any, zarr_format: int) -> dict[str, Any] | None:
    """The entries of a group document's consolidated metadata (v3 ``zarr.json``, v2
    ``.zmetadata``), as the document holds them (changed in place), or None."""
    if not isinstance(doc, dict):
        return None
    if zarr_format == 3:
        cm = doc.get("consolidated_metadata")
        listed = cm.get("metadata") if isinstance(cm, dict) else None
    else:
        listed = doc.get("metadata")
    return listed if isinstance(listed, dict) else None


def forget_node(store: Store, path: str, zarr_format: int) -> None:
    """The node at ``path`` was deleted: its entries and those below it leave the
    consolidated metadata of every ancestor group, as stored (whatever a caller's open holds)."""
    _update_consolidated(store, path, zarr_format, False, group=False, deleted=True)


def _in_n5_container(store: Store) -> bool:
    """Whether the store is an N5 container (its root ``attributes.json`` or its location says so)."""
    try:
        blob = store.get(N5_DOCUMENT)
        doc = None if blob is None else json.loads(blob)
    except StoreError:  # (a store that takes only Zarr's keys)
        return is_n5_path(store.url)
    except (UnicodeDecodeError, ValueError):
        doc = None
    return is_n5_container(doc, store.url)


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=True).encode("utf-8")


def explain_missing(store: Store, path: str, zarr_format: int | None = None,
                    create_hint: str | None = None) -> NodeNotFoundError:
    """The error for "no node at ``path``", telling the cases apart: a node of the other
    Zarr version than ``zarr_format`` asked for, a missing path, a plain file, an empty
    directory, or a location holding other things but no Zarr metadata, or in a remote N5
    container, nothing listed (a group without attributes.json is found only by listing).
    ``create_hint`` (how the caller's function creates a node) is added where creating one
    would work. Costs one batched read and one listing (only on this error path; one read
    more where a remote store lists nothing)."""
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
    elif path and _in_n5_container(store):
        reason = ("nothing is listed under it (an N5 group without attributes.json is found only by listing; a "
                  "store that cannot list, such as an HTTP server without directory indexes, hides it)")
    else:
        reason = "nothing is stored under it"
    offered = create_hint and store.supports_writes  # (no hint to create where nothing can be written)
    return NodeNotFoundError(f"{where}: {reason}" + (f"; {create_hint}" if offered else ""))
