"""Reading and writing node metadata documents (the only metadata I/O).

Detecting a v3 node costs one read (``zarr.json``); a v2 node one more batched call
(``.zarray``, ``.zgroup``, ``.zattrs`` and ``.zmetadata`` together).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Union

from ..errors import MetadataError, NodeNotFoundError
from ..metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from ..metadata.v3 import ArrayMetadataV3, GroupMetadataV3, parse_json_document, parse_v3
from ..storage.base import Store, join_path

__all__ = ["NodeMetadata", "encode_node", "read_node", "read_nodes", "write_node", "parse_node_documents"]

NodeMetadata = Union[ArrayMetadataV3, GroupMetadataV3, ArrayMetadataV2, GroupMetadataV2]
_V2_NAMES = (".zarray", ".zgroup", ".zattrs", ".zmetadata")


def parse_node_documents(docs: Mapping[str, Any], path: str, zarr_format: int | None = None,
                         consolidated: bool = True) -> NodeMetadata | None:
    """Build node metadata from already-decoded documents keyed by file name; None if no node.
    ``consolidated=False`` leaves a group's consolidated metadata out, unparsed (a stale or
    broken copy must not stop a caller who asked to ignore it)."""
    if "zarr.json" in docs and zarr_format in (None, 3):
        doc = docs["zarr.json"]
        if doc.get("zarr_format") == 2:
            raise MetadataError("zarr.json declares zarr_format 2", key=join_path(path, "zarr.json"))
        if not consolidated and "consolidated_metadata" in doc:
            doc = {k: v for k, v in doc.items() if k != "consolidated_metadata"}
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
    _fetch_documents(store, paths, range(len(paths)), ("zarr.json",), docs)
    if zarr_format != 3:
        v2 = [i for i, d in enumerate(docs) if not d]
        _fetch_documents(store, paths, v2, _V2_NAMES, docs)
    return [parse_node_documents(d, path, zarr_format, consolidated) for d, path in zip(docs, paths)]


def _fetch_documents(store: Store, paths: Sequence[str], which: Sequence[int], names: Sequence[str],
                     docs: list[dict[str, Any]]) -> None:
    keys = [join_path(paths[i], n) for i in which for n in names]
    blobs = iter(store.get_many(keys))
    for i in which:
        for name in names:
            blob = next(blobs)
            if blob is not None:
                docs[i][name] = parse_json_document(blob, join_path(paths[i], name))


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


def write_node(store: Store, path: str, metadata: NodeMetadata) -> None:
    """Persist node metadata (each document atomically); v2 removes a now-empty .zattrs."""
    docs = {join_path(path, name): data for name, data in encode_node(path, metadata).items()}
    store.set_many(docs)
    if metadata.zarr_format == 2 and not metadata.attributes:
        store.delete(join_path(path, ".zattrs"))


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=True).encode("utf-8")
