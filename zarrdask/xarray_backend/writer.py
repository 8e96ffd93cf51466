"""The Dataset and DataTree writer: ``Dataset.to_zarr`` semantics, zarrdask storage.

``xarray.Dataset.to_zarr`` is hard-wired to zarr-python (xarray has no writable
backend entry point, pydata/xarray#5954), so zarrdask provides its own writer,
also reachable as ``ds.zarrdask.to_zarr(...)``. CF encoding is xarray's own
(``dump_to_store`` with the zarr coders); dask variables are written by zarrdask's
shard-safe Dask writer, so dask chunks that cut through shards are fine.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from dask.delayed import Delayed
from xarray import Dataset, DataTree
from xarray.backends.writers import dump_to_store

from zarrdask.compat.xarray import choose_default_mode, validate_dataset_names
from zarrdask.errors import DatasetError
from zarrdask.core.group import Group, consolidate_metadata
from zarrdask.storage import MemoryStore
from zarrdask.xarray_backend.array_writes import ArrayWrites
from zarrdask.xarray_backend.region import RegionArg
from zarrdask.xarray_backend.write_store import ZarrdaskWritableStore, open_group_for_write

if TYPE_CHECKING:
    from xarray.core.types import ZarrWriteModes

__all__ = ["datatree_to_zarr", "to_zarr"]


def to_zarr(
    ds: Dataset,
    store: Any = None,
    mode: ZarrWriteModes | None = None,
    group: str | None = None,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    *,
    compute: bool = True,
    consolidated: bool | None = None,
    append_dim: Hashable | None = None,
    region: RegionArg = None,
    zarr_format: Literal[2, 3] | None = None,
    storage_options: dict[str, Any] | None = None,
    write_empty_chunks: bool | None = None,
    safe_chunks: bool = True,
    align_chunks: bool = False,
    chunkmanager_store_kwargs: dict[str, Any] | None = None,
) -> Group | Delayed:
    """Write a Dataset to a Zarr group, like ``Dataset.to_zarr``.

    Parameters are those of ``Dataset.to_zarr``: ``store`` None writes to a new
    in-memory store; ``consolidated`` None or True consolidates metadata after writing;
    ``mode`` is ``"w"`` (overwrite),
    ``"w-"`` (create; the default), ``"a"`` (add or overwrite variables; default
    with ``append_dim``), ``"a-"`` (append, leave other variables alone) or
    ``"r+"`` (existing variables only; default with ``region``). ``region`` is a
    dict of dimension -> slice or ``"auto"``. ``zarr_format`` defaults to 3 for a
    new group and to the existing group's format otherwise. ``safe_chunks`` and
    ``align_chunks`` are accepted for compatibility: zarrdask's writer is always
    shard-safe, whatever the dask chunks. ``chunkmanager_store_kwargs`` go to
    ``dask.compute``.

    Returns the written group, or with ``compute=False`` a ``Delayed`` that writes
    the data (metadata is written at once).
    """
    validate_dataset_names(ds)
    if store is None:
        store = MemoryStore()
    for v in ds.variables.values():
        if v.size == 0:
            v.load()
    encoding = {} if encoding is None else encoding
    mode = choose_default_mode(mode=mode, append_dim=append_dim, region=region)
    root = open_group_for_write(
        store, mode=mode, path=group, zarr_format=zarr_format, storage_options=storage_options
    )
    zstore = ZarrdaskWritableStore(
        root, mode=mode, append_dim=append_dim, region=region, write_empty=write_empty_chunks
    )
    ds = zstore.prepare(ds, encoding)
    writes = ArrayWrites()
    dump_to_store(ds, zstore, writes, encoding=encoding)
    if consolidated is not False and mode != "r+":
        consolidate_metadata(root.store)
    return _finish(writes, root, compute, chunkmanager_store_kwargs)


def datatree_to_zarr(
    dt: DataTree,
    store: Any,
    mode: ZarrWriteModes = "w-",
    encoding: Mapping[str, Any] | None = None,
    consolidated: bool = True,
    group: str | None = None,
    write_inherited_coords: bool = False,
    compute: bool = True,
    *,
    append_dim: Hashable | None = None,
    region: RegionArg = None,
    zarr_format: Literal[2, 3] | None = None,
    storage_options: dict[str, Any] | None = None,
    write_empty_chunks: bool | None = None,
    safe_chunks: bool = True,
    align_chunks: bool = False,
    chunkmanager_store_kwargs: dict[str, Any] | None = None,
) -> Group | Delayed:
    """Write a DataTree, one Zarr group per node, like ``DataTree.to_zarr``.

    ``encoding`` maps node paths to per-variable encodings. As in xarray, ``group``
    and ``append_dim`` are not supported for trees.
    """
    if group is not None:
        raise NotImplementedError("specifying a root group for the tree has not been implemented")
    if append_dim is not None:
        raise NotImplementedError(
            "specifying ``append_dim`` with ``DataTree.to_zarr`` has not been implemented"
        )
    encoding = {} if encoding is None else encoding
    if unknown := set(encoding) - set(dt.groups):
        raise DatasetError(f"unexpected encoding group name(s) provided: {unknown}")
    mode = choose_default_mode(mode=mode, append_dim=None, region=region)
    root = open_group_for_write(
        store, mode=mode, path=None, zarr_format=zarr_format, storage_options=storage_options
    )
    root_store = ZarrdaskWritableStore(
        root, mode=mode, region=region, write_empty=write_empty_chunks
    )
    writes = ArrayWrites()
    for rel_path, node in dt.subtree_with_keys:
        at_root = node is dt
        node_store = root_store if at_root else root_store.get_child_store(rel_path)
        node_ds = node.to_dataset(inherit=write_inherited_coords or at_root)
        validate_dataset_names(node_ds)
        node_encoding = encoding.get(node.path) or {}
        node_ds = node_store.prepare(node_ds, node_encoding)
        dump_to_store(node_ds, node_store, writes, encoding=node_encoding)
    if consolidated and mode != "r+":
        consolidate_metadata(root.store)
    return _finish(writes, root, compute, chunkmanager_store_kwargs)


def _finish(
    writes: ArrayWrites,
    root: Group,
    compute: bool,
    compute_kwargs: dict[str, Any] | None,
) -> Group | Delayed:
    """Send the metadata and in-memory data held by the group's store, then run (or
    defer) the dask writes; the written group, or the deferred writes."""
    root.store.flush()
    delayed = writes.sync(compute, **(compute_kwargs or {}))
    return root if delayed is None else delayed
