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
like a v2 array (its ``meta``/``attrs`` replaced; one with blosc-snappy chunks is refused, the
error naming the re-encoding copy instead); a v3.0-draft store needs ``target=``,
a new store it is copied to. So does an N5 container (:mod:`zarrdask.tools.migrate_n5`),
whose blocks are re-encoded as plain Zarr v3 on the way.

Everything is converted and checked before anything is written; then every
``zarr.json`` is written, and only then are the v2 documents removed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from ..nodes.array import Array
from ..nodes.group import walk
from ..door.node_io import NodeMetadata, read_node
from ..codecs.decompress import blosc_format
from ..errors import InvalidModeError, MetadataError
from ..metadata.n5 import SOURCE_FORMAT as N5_FORMAT
from ..metadata.v2 import ArrayMetadataV2
from ..metadata.v3 import GroupMetadataV3, parse_v3
from ..door import resolve
from ..storage.base import Store, join_path
from .migrate_n5 import migrate_n5, n5_needs_copy
from .migrate_old import copy_draft, draft_needs_copy, v1_removed
from .migrate_v2 import array_document, xarray_fill_attribute

__all__ = ["MigratedNode", "array_document", "migrate", "xarray_fill_attribute"]

_V2_DOCS = (".zarray", ".zgroup", ".zattrs", ".zmetadata")


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
    v3.0-draft store (chunks byte for byte) or an N5 container (every block re-encoded)
    is copied to ``target`` (an empty store) instead."""
    if to != 3:
        raise InvalidModeError(f"migrate converts Zarr v2, v1, the v3.0 draft and N5 to v3; to={to!r} is not "
                               "supported")
    s = resolve("zarrdask.migrate", store, mode="r" if dry_run or target is not None else "a",
                storage_options=storage_options, read=False).store
    path = path.strip("/")
    try:
        root = read_node(s, path, 2)
    except MetadataError:
        raise
    except FileNotFoundError:
        found = read_node(s, path)
        if found.source_format != N5_FORMAT:
            if found.zarr_format == 3:
                raise InvalidModeError(f"{path or '<root>'!r} in {s!r} is already Zarr v3") from None
            raise
        root = found
    where = f"{path or '<root>'!r} in {s!r}"
    needs_copy = draft_needs_copy(root, where) or n5_needs_copy(root, where)
    if needs_copy is not None and target is None:
        raise needs_copy
    if needs_copy is not None:
        dst = resolve("zarrdask.migrate", target, mode="a", storage_options=target_storage_options, read=False).store
        if root.source_format == N5_FORMAT:
            made = migrate_n5(s, path, root, dst, dry_run=dry_run)
        else:
            made = copy_draft(s, path, root, dst, dry_run=dry_run, to_v3=array_document)
        return [MigratedNode(rel, join_path(rel, "zarr.json"), m.to_json(), ()) for rel, m in sorted(made.items())]
    if target is not None:
        raise InvalidModeError(f"target= is for v3.0-draft stores and N5 containers, which are copied; {where} "
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
    _check_zstd_07(store, path, meta)
    doc = array_document(meta, key)
    new = parse_v3(doc, key=key)
    try:
        Array(store, path, new)  # the chain builds for this chunk shape, or a MetadataError names the key
    except MetadataError as exc:
        compressor = meta.compressor or {}
        if compressor.get("id") != "blosc" or compressor.get("cname") != "snappy":
            raise
        raise MetadataError([replace(p, message=p.message + _SNAPPY) if p.loc[-1:] == ("cname",) else p
                             for p in exc.problems], exc.key) from None
    return new


_CHUNK_NAME = re.compile(r"\d+(?:\.\d+)*")  # a v1 chunk's key below its array


def _check_zstd_07(store: Store, path: str, meta: ArrayMetadataV2) -> None:
    """Refuse a v1 blosc-zstd array whose chunks hold zstd 0.7 frames (zarr 1.1.0's c-blosc
    wrote them; its chunks all come from one writer, so one tells): migrate keeps the chunks,
    and only zarrdask with its legacy extra reads them, zarr-python and TensorStore fail."""
    compressor = meta.compressor or {}
    if meta.source_format is None or compressor.get("id") != "blosc" or compressor.get("cname") != "zstd":
        return
    files, _ = store.list_dir(path)
    chunk = next((join_path(path, name) for name in files if _CHUNK_NAME.fullmatch(name)), None)
    if chunk is not None and blosc_format(store.get(chunk) or b"") == "zstd 0.7":
        raise MetadataError(f"{join_path(path, 'meta')}: its blosc chunks hold zstd 0.7 frames (zarr 1.1.0's "
                            "c-blosc), which migrate would keep and zarr-python and TensorStore cannot decode: copy "
                            "the array re-encoded instead, zarrdask.copy(source, new_store, compressors='zstd', "
                            "zarr_format=3) (`zarrdask copy SRC NEW --codecs zstd --zarr-format 3`), which reads them "
                            "through imagecodecs (pip install 'zarrdask[legacy]')")


#: why a blosc-snappy array (zarr 1.x wrote them) is not migrated, and the way instead: its v3
#: document would name a cname zarrdask's chain refuses (its c-blosc cannot write it) and
#: zarr-python cannot read (numcodecs' c-blosc, -5); only TensorStore of the peers reads it (measured)
_SNAPPY = ("; migrate keeps the chunks, and numcodecs' c-blosc (zarrdask's and zarr-python's) has no snappy to "
           "write or read them: copy the array re-encoded instead, zarrdask.copy(source, new_store, "
           "compressors='zstd', zarr_format=3) (`zarrdask copy SRC NEW --codecs zstd --zarr-format 3`), which "
           "reads snappy-compressed chunks through imagecodecs (pip install 'zarrdask[legacy]')")
