"""``copy``: a whole hierarchy (or one array) copied, keeping what it copies.

By default the copy is the source: every array's metadata document (chunks, shards, the
whole codec chain with levels and checksums, sharding index codecs and location, fill
value, dimension names, chunk key encoding, attributes) and every group's, and every
stored chunk or shard byte for byte (nothing is decoded). ``chunks``, ``shards``,
``compressors`` and ``zarr_format`` change only what they name (see
:mod:`zarrdask.tools.copy_layout`); arrays whose chunks change are then read with
:func:`zarrdask.from_zarr` and written with :func:`zarrdask.to_zarr` into a target created
from the source's metadata, all in one Dask graph (on a cluster when a client is given).
Into an Icechunk session the workers' changes are merged into it: commit it afterwards.
An N5 source is copied as plain Zarr v3 (every array rewritten, see
:mod:`zarrdask.tools.migrate_n5`); a v3.0-draft one as ``migrate`` copies it.
Every option applies or is an error, before anything is written, and so does a source or
target that worker processes cannot receive.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Union

from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.task_spec import Task

from ..api.openers import open as open_node
from ..nodes.array import Array
from ..nodes.group import Group, consolidate_metadata, walk
from ..door.node_io import write_node
from ..dask_io.transactions import check_travels, run_writes
from ..dask_io.write_graph import gathered
from ..errors import ContainsNodeError, InvalidModeError
from ..metadata.v2 import GroupMetadataV2
from ..metadata.v3 import GroupMetadataV3
from ..metadata.v3draft import SOURCE_FORMAT as DRAFT_FORMAT
from ..door import resolve
from ..storage.base import Store, join_path
from ..storage.records import WriteRecord, clear_record, keeps_records, write_record
from ..storage.transactional import changes
from .copy_layout import Options, same_bytes, target_metadata
from .migrate_old import copy_draft
from .migrate_v2 import array_document
from .copy_plan import ArrayPlan, CopyPlan, plan_array
from .copy_shapes import KEEP, ArrayShape, ShapeSpec, check_fits, check_spec

__all__ = ["copy", "KEEP"]

_GROUP_DOCS = {3: ("zarr.json",), 2: (".zgroup", ".zattrs", ".zmetadata")}
_ARRAY_DOCS = {3: ("zarr.json",), 2: (".zarray", ".zattrs")}
_BATCH = 64  # stored units per raw-copy task


def copy(source: Any, target: Any, *, path: str = "", chunks: ShapeSpec = KEEP, shards: ShapeSpec = KEEP,
         compressors: Any = KEEP, zarr_format: int | None = None, overwrite: bool = False, dry_run: bool = False,
         progress: bool = False, client: Any = None, storage_options: dict[str, Any] | None = None,
         target_storage_options: dict[str, Any] | None = None) -> Union[Array, Group, CopyPlan]:
    """Copy the node at ``path`` of ``source`` (and everything below it) to ``target``'s root.

    ``chunks`` / ``shards``: ``"keep"`` (default, the source's; ``chunks=None`` too), sizes for arrays of that
    many dimensions (one size: every dimension; -1: the whole dimension) or
    ``{dimension name: size}``; ``shards=None`` removes sharding. ``compressors``:
    ``"keep"``, ``None`` (none) or codecs as for ``create_array``; ``zarr_format``: the
    target's (default the source's). The target must be empty unless ``overwrite`` (then
    its contents are replaced) or it holds what the same copy left unfinished (its record,
    written before the first byte and deleted after the last, see
    :mod:`zarrdask.storage.records`: the copy is then redone). ``dry_run=True`` writes
    nothing and returns the :class:`~zarrdask.tools.copy_plan.CopyPlan`; else the copied
    node is returned.
    ``client``: a ``distributed.Client`` to run on; ``progress``: a progress bar."""
    chunks, shards = check_spec("chunks", chunks), check_spec("shards", shards)
    if zarr_format not in (None, 2, 3):
        raise InvalidModeError(f"zarr_format={zarr_format!r}: expected 2 or 3 (or None: the source's)")
    src = resolve("zarrdask.copy", source, storage_options=storage_options, read=False).store
    dst = resolve("zarrdask.copy", target, mode="a", storage_options=target_storage_options, read=False).store
    if src.url == dst.url:
        raise InvalidModeError(f"source and target are the same store ({src.url})")
    for store in (src, dst):
        check_travels("zarrdask.copy", store, client=client)
    root = open_node(src, path=path or None)
    found = root.metadata.source_format
    if found == DRAFT_FORMAT:
        return _copy_draft(src, dst, path, root, changed=chunks is not KEEP or shards is not KEEP
                           or compressors is not KEEP or zarr_format not in (None, 3) or dry_run or overwrite)
    nodes = _nodes(src, root)
    arrays = {rel: n for rel, n in nodes.items() if isinstance(n, Array)}
    if isinstance(root, Group):
        for name, spec in (("chunks", chunks), ("shards", shards)):
            check_fits(name, spec, [ArrayShape(rel or "/", a.ndim, a.dimension_names) for rel, a in arrays.items()])
    options = Options(chunks if chunks is not None else KEEP, shards, compressors, zarr_format,
                      single=isinstance(root, Array))
    targets = {rel: target_metadata(rel or "/", a, options) for rel, a in arrays.items()}
    plan = CopyPlan(src.url, dst.url, [plan_array(rel, a, targets[rel], dst, bytes_copied=same_bytes(a, targets[rel]),
                                                  measure=dry_run) for rel, a in arrays.items()], len(nodes) - len(arrays))
    record = WriteRecord("zarrdask.copy", "", {"source": src.url, "path": path},
                         sum(len(a.source_keys) for a in plan.arrays), sum(a.nbytes for a in arrays.values()))
    recorded = keeps_records(dst)
    stale = _check_target(dst, overwrite=overwrite or (recorded and dst.exists(record.key)))
    if dry_run:
        return plan
    dst.delete_many(stale)
    if recorded:
        write_record(dst, record)
    fmt = zarr_format or root.zarr_format
    for rel, node in nodes.items():
        if isinstance(node, Group):
            _copy_group(src, dst, node, rel, fmt)
    writes = [w for (rel, array), step in zip(arrays.items(), plan.arrays)
              for w in _copy_array(src, dst, array, rel, targets[rel], step)]
    run_writes(writes, progress, client)
    if isinstance(root, Group) and root.consolidated and (fmt != root.zarr_format or not plan.unchanged):
        consolidate_metadata(dst)
    if recorded:
        clear_record(dst, record)
    return open_node(dst)


def _nodes(store: Store, root: Union[Array, Group]) -> dict[str, Union[Array, Group]]:
    """The root and every node below it, by path relative to the root (the root first,
    then sorted by path)."""
    out: dict[str, Union[Array, Group]] = {"": root}
    for rel in sorted(walk(store, root.path, root.metadata)) if isinstance(root, Group) else ():
        out[rel] = open_node(store, path=join_path(root.path, rel))
    return out


def _check_target(dst: Store, *, overwrite: bool) -> list[str]:
    """The target's keys, which ``overwrite`` replaces (removed after every check); an
    error when there are some and ``overwrite`` was not passed."""
    keys = list(dst.list_prefix(""))
    if keys and not overwrite:
        raise ContainsNodeError(f"the target {dst.url} is not empty: pass overwrite=True (--overwrite) to replace "
                                "its contents, or choose another target")
    return keys


def _copy_documents(src: Store, dst: Store, source_path: str, rel: str, names: tuple[str, ...]) -> None:
    """A node's metadata documents, byte for byte."""
    keys = [join_path(source_path, n) for n in names]
    dst.set_many({join_path(rel, n): blob for n, blob in zip(names, src.get_many(keys)) if blob is not None})


def _copy_group(src: Store, dst: Store, group: Group, rel: str, fmt: int) -> None:
    """A group's documents byte for byte, or written anew in another format (or from N5's)."""
    if fmt == group.zarr_format and group.metadata.source_format is None:
        _copy_documents(src, dst, group.path, rel, _GROUP_DOCS[fmt])
    else:
        cls = GroupMetadataV3 if fmt == 3 else GroupMetadataV2
        write_node(dst, rel, cls(attributes=dict(group.attrs)))


def _copy_array(src: Store, dst: Store, array: Array, rel: str, meta: Any, step: ArrayPlan) -> list[Any]:
    """Write the array's metadata now; the delayed writes that copy its data (each
    computing to the changes to merge into ``dst``'s session, see
    :mod:`zarrdask.dask_io.transactions`)."""
    if step.bytes_copied:
        if meta.zarr_format == array.zarr_format and array.metadata.source_format is None:
            _copy_documents(src, dst, array.path, rel, _ARRAY_DOCS[meta.zarr_format])
        else:
            write_node(dst, rel, meta)
        keys = sorted(step.source_keys)
        moved = {k: join_path(rel, k[len(array.path):].lstrip("/")) for k in keys}
        tasks = _copy_tasks(src, dst, [{k: moved[k] for k in keys[i:i + _BATCH]} for i in range(0, len(keys), _BATCH)])
        return [gathered(tasks, dst)] if tasks else []
    from ..dask_io import from_zarr
    from ..dask_io.write import write_into

    write_node(dst, rel, meta, created=True)
    target = Array(dst, rel, meta).with_options(threads=1)
    return [write_into(from_zarr(array), target, tuple(slice(0, n) for n in target.shape))]


def _copy_tasks(src: Store, dst: Store, batches: list[dict[str, str]]) -> list[Delayed]:
    """One task per batch of keys (source key -> target key), in one layer made directly:
    ``dask.delayed`` walked and tokenized every batch's keys (a quarter of a 16,384-shard
    copy's time)."""
    name = f"zarrdask-copy-{uuid.uuid4().hex}"
    layer = {(name, i): Task((name, i), _copy_keys, src, dst, batch) for i, batch in enumerate(batches)}
    graph = HighLevelGraph({name: MaterializedLayer(layer)}, {name: set()})
    return [Delayed((name, i), graph, layer=name) for i in range(len(batches))]


def _copy_keys(src: Store, dst: Store, keys: Mapping[str, str]) -> Any:
    """Copy stored units byte for byte (source key -> target key); the changes to merge
    back when ``dst`` travelled as a session's fork (else None)."""
    blobs = src.get_many(list(keys))
    dst.set_many({keys[k]: b for k, b in zip(keys, blobs) if b is not None})
    return changes(dst)


def _copy_draft(src: Store, dst: Store, path: str, root: Union[Array, Group], *, changed: bool) -> Union[Array, Group]:
    """A v3.0-draft store, whose chunks lie apart from its documents, copied as Zarr v3.1
    as ``migrate`` copies it (every chunk byte for byte) when nothing else is asked of the copy."""
    if changed:
        raise InvalidModeError(f"{src.url} is a {DRAFT_FORMAT} store: copy takes it only as it is (no chunks=, shards=, "
                               "compressors=, zarr_format=2, dry_run= or overwrite=); copy it first, then copy "
                               "the v3.1 result with the new layout (zarrdask.migrate(source, target=..., "
                               "dry_run=True) shows the documents)")
    copy_draft(src, path, root.metadata, dst, dry_run=False, to_v3=array_document)
    return open_node(dst)
