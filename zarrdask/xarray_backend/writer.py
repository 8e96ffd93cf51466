"""The DataArray, Dataset and DataTree writers: ``to_zarr`` semantics, zarrdask storage.

``xarray.Dataset.to_zarr`` is hard-wired to zarr-python (xarray has no writable
backend entry point, pydata/xarray#5954), so zarrdask provides its own writer,
also reachable as ``ds.zarrdask.to_zarr(...)`` (and ``da.``/``dt.zarrdask.to_zarr``).
CF encoding is xarray's own (``dump_to_store`` with the zarr coders); dask variables
are written by zarrdask's shard-safe Dask writer, so dask chunks that cut through
shards are fine. On worker processes a store they cannot receive is refused before
anything is written, and an Icechunk session's store travels as forks whose changes are
merged back into the session (see :mod:`zarrdask.dask_io.transactions`).

``to_zarr`` and ``datatree_to_zarr`` take exactly xarray's keywords; ``write_dataset``
and ``write_datatree`` do the work, with zarrdask's ``progress`` as well.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from dask.delayed import Delayed
from xarray import DataArray, Dataset, DataTree

from zarrdask.compat.xarray import (
    DATAARRAY_NAME,
    DATAARRAY_VARIABLE,
    choose_default_mode,
    dump_to_store,
    validate_dataset_names,
)
from zarrdask.nodes.group import Group, consolidate_metadata
from zarrdask.dask_io.dask_keywords import staging_choice, task_bytes
from zarrdask.dask_io.write_graph import then_cleared
from zarrdask.errors import DatasetError
from zarrdask.keywords import refuse
from zarrdask.storage import MemoryStore
from zarrdask.storage.records import WriteRecord, clear_record, keeps_records, write_record
from zarrdask.xarray_backend.array_writes import ArrayWrites
from zarrdask.xarray_backend.public import public
from zarrdask.xarray_backend.region import RegionArg
from zarrdask.xarray_backend.write_store import ZarrdaskWritableStore, open_group_for_write

if TYPE_CHECKING:
    from xarray.core.types import ZarrWriteModes

__all__ = ["dataarray_as_dataset", "datatree_to_zarr", "to_zarr", "write_dataset", "write_datatree"]


def dataarray_as_dataset(da: DataArray) -> Dataset:
    """The Dataset ``DataArray.to_zarr`` writes: an unnamed array (or one named like a
    coordinate or dimension) becomes ``__xarray_dataarray_variable__``, the name kept in
    the ``__xarray_dataarray_name__`` attribute, which ``xr.open_dataarray`` reads back."""
    if da.name is None:
        return da.to_dataset(name=DATAARRAY_VARIABLE)
    if da.name in da.coords or da.name in da.dims:
        ds = da.to_dataset(name=DATAARRAY_VARIABLE)
        ds.attrs[DATAARRAY_NAME] = da.name
        return ds
    return da.to_dataset()


@public("zarrdask.xarray_backend.to_zarr")
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
    safe_chunks: bool = True,
    align_chunks: bool = False,
    storage_options: dict[str, Any] | None = None,
    zarr_format: Literal[2, 3] | None = None,
    write_empty_chunks: bool | None = None,
    chunkmanager_store_kwargs: dict[str, Any] | None = None,
) -> Group | Delayed:
    """Write a Dataset to a Zarr group, like ``Dataset.to_zarr`` (see ``write_dataset``)."""
    return write_dataset(
        ds, store, mode, group, encoding, compute=compute, consolidated=consolidated,
        append_dim=append_dim, region=region, storage_options=storage_options, zarr_format=zarr_format,
        write_empty_chunks=write_empty_chunks, chunkmanager_store_kwargs=chunkmanager_store_kwargs,
        progress=False, function="zarrdask.xarray_backend.to_zarr", safe_chunks=safe_chunks,
    )


def write_dataset(
    ds: Dataset,
    store: Any,
    mode: ZarrWriteModes | None,
    group: str | None,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None,
    *,
    compute: bool,
    consolidated: bool | None,
    append_dim: Hashable | None,
    region: RegionArg,
    storage_options: dict[str, Any] | None,
    zarr_format: Literal[2, 3] | None,
    write_empty_chunks: bool | None,
    chunkmanager_store_kwargs: dict[str, Any] | None,
    progress: bool,
    function: str,
    task_size: int | str | None = None,
    staging: bool | None = None,
    safe_chunks: bool = True,
) -> Group | Delayed:
    """Write a Dataset to a Zarr group, like ``Dataset.to_zarr``.

    Parameters are those of ``Dataset.to_zarr``: ``store`` None writes to a new
    in-memory store; ``consolidated`` None or True consolidates metadata after writing;
    ``mode`` is ``"w"`` (overwrite),
    ``"w-"`` (create; the default), ``"a"`` (add or overwrite variables; default
    with ``append_dim``), ``"a-"`` (append, leave other variables alone) or
    ``"r+"`` (existing variables only; default with ``region``). ``region`` is a
    dict of dimension -> slice or ``"auto"``. ``zarr_format`` defaults to 3 for a
    new group and to the existing group's format otherwise. ``chunkmanager_store_kwargs``
    go to ``dask.compute``. ``progress=True`` draws a progress bar while the dask data
    is written; ``task_size`` groups whole shards into write tasks and ``staging`` says
    where the pieces of cut shards wait (both as ``zarrdask.to_zarr``'s). ``safe_chunks=False``
    lets writes of parts of shards go ahead where the store cannot guard them (no other writer
    touches those shards meanwhile). ``function`` is the name the user called, for messages.

    Returns the written group, or with ``compute=False`` a ``Delayed`` that writes
    the data (metadata is written at once).
    """
    _check_progress(function, chunkmanager_store_kwargs, progress=progress, compute=compute)
    task_bytes(function, task_size)  # (checked before anything is written)
    staging_choice(function, staging)
    validate_dataset_names(ds)
    if store is None:
        store = MemoryStore()
    for v in ds.variables.values():
        if v.size == 0:
            v.load()
    encoding = {} if encoding is None else encoding
    mode = choose_default_mode(mode=mode, append_dim=append_dim, region=region)
    root = open_group_for_write(
        store, mode=mode, path=group, zarr_format=zarr_format, storage_options=storage_options,
        function=function,
    )
    zstore = ZarrdaskWritableStore(
        root, mode=mode, append_dim=append_dim, region=region, write_empty=write_empty_chunks,
        safe_chunks=safe_chunks,
    )
    ds = zstore.prepare(ds, encoding)
    writes = ArrayWrites(task_size, staging)
    dump_to_store(ds, zstore, writes, encoding=encoding)
    if consolidated is not False and mode != "r+":
        consolidate_metadata(root.store)
    return _finish(writes, root, chunkmanager_store_kwargs, compute=compute, progress=progress, function=function)


@public("zarrdask.xarray_backend.datatree_to_zarr")
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
    safe_chunks: bool = True,
    align_chunks: bool = False,
    storage_options: dict[str, Any] | None = None,
    zarr_format: Literal[2, 3] | None = None,
    write_empty_chunks: bool | None = None,
    chunkmanager_store_kwargs: dict[str, Any] | None = None,
) -> Group | Delayed:
    """Write a DataTree, one Zarr group per node, like ``DataTree.to_zarr`` (see
    ``write_datatree``)."""
    return write_datatree(
        dt, store, mode, encoding, consolidated, group, write_inherited_coords, compute,
        append_dim=append_dim, region=region, storage_options=storage_options, zarr_format=zarr_format,
        write_empty_chunks=write_empty_chunks, chunkmanager_store_kwargs=chunkmanager_store_kwargs,
        progress=False, function="zarrdask.xarray_backend.datatree_to_zarr", safe_chunks=safe_chunks,
    )


def write_datatree(
    dt: DataTree,
    store: Any,
    mode: ZarrWriteModes,
    encoding: Mapping[str, Any] | None,
    consolidated: bool,
    group: str | None,
    write_inherited_coords: bool,
    compute: bool,
    *,
    append_dim: Hashable | None,
    region: RegionArg,
    storage_options: dict[str, Any] | None,
    zarr_format: Literal[2, 3] | None,
    write_empty_chunks: bool | None,
    chunkmanager_store_kwargs: dict[str, Any] | None,
    progress: bool,
    function: str,
    task_size: int | str | None = None,
    staging: bool | None = None,
    safe_chunks: bool = True,
) -> Group | Delayed:
    """Write a DataTree, one Zarr group per node, like ``DataTree.to_zarr``.

    ``encoding`` maps node paths to per-variable encodings; ``group`` is the group the
    tree's root is written to (xarray refuses it; here it works, and
    ``xr.open_datatree(store, engine="zarrdask", group=group)`` reads the tree back).
    ``append_dim`` is refused, as by xarray: append node by node with
    ``Dataset.zarrdask.to_zarr(store, group=<node path>, append_dim=...)``.
    """
    if append_dim is not None:
        raise refuse(function, "append_dim",
                     "trees cannot be appended to as a whole; append each node's dataset with "
                     "Dataset.zarrdask.to_zarr(store, group=<node path>, append_dim=...)")
    _check_progress(function, chunkmanager_store_kwargs, progress=progress, compute=compute)
    task_bytes(function, task_size)
    staging_choice(function, staging)
    encoding = {} if encoding is None else encoding
    if unknown := set(encoding) - set(dt.groups):
        raise DatasetError(
            f"unexpected encoding group name(s) provided: {unknown}; the tree's groups are "
            f"{sorted(dt.groups)}")
    mode = choose_default_mode(mode=mode, append_dim=None, region=region)
    root = open_group_for_write(
        store, mode=mode, path=group, zarr_format=zarr_format, storage_options=storage_options,
        function=function,
    )
    root_store = ZarrdaskWritableStore(
        root, mode=mode, region=region, write_empty=write_empty_chunks, safe_chunks=safe_chunks,
    )
    writes = ArrayWrites(task_size, staging)
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
    return _finish(writes, root, chunkmanager_store_kwargs, compute=compute, progress=progress, function=function)


def _check_progress(
    function: str, compute_kwargs: dict[str, Any] | None, *, progress: bool, compute: bool
) -> None:
    """``progress=True`` draws its bar around the compute zarrdask runs: there is none
    with ``compute=False``, and ``chunkmanager_store_kwargs`` hand it to ``dask.compute``."""
    if not progress:
        return
    if not compute:
        raise DatasetError(
            f"{function}(progress=True, compute=False): nothing is written here, so there is "
            "no bar to draw; compute the returned Delayed inside "
            "`with dask.diagnostics.ProgressBar():`, or pass compute=True")
    if compute_kwargs:
        raise DatasetError(
            f"{function}(progress=True, chunkmanager_store_kwargs=...): the writes then run "
            "in dask.compute with those keywords; drop progress=True and make the call inside "
            "`with dask.diagnostics.ProgressBar():`")


def _finish(
    writes: ArrayWrites,
    root: Group,
    compute_kwargs: dict[str, Any] | None,
    *,
    compute: bool,
    progress: bool,
    function: str,
) -> Group | Delayed:
    """Send the metadata and in-memory data held by the group's store, then run (or
    defer) the dask writes; the written group, or the deferred writes.

    The call's record (``function``, the group, every array's region; see
    :mod:`zarrdask.storage.records`) is stored before anything held is sent, so it is
    there from the first byte, and deleted after the last dask write. With
    ``compute=False`` the returned graph stores it before its first write and deletes it
    after its last: a template written with ``compute=False`` and filled by region writes
    (xarray's idiom for many independent jobs) leaves no record of a write never run."""
    held = root.store
    record = None
    if keeps_records(held):
        record = WriteRecord(function, root.path, writes.regions, writes.units, writes.nbytes)
        if compute:
            record = write_record(held, write_record(getattr(held, "inner", held), record))  # (held: it replaces a held delete)
    held.flush()
    delayed = writes.sync(compute=compute, progress=progress, record=None if compute else record,
                          **(compute_kwargs or {}))
    if record is None:
        return root if delayed is None else delayed
    if delayed is None:
        clear_record(held, record)
        return root
    return then_cleared(delayed, held, record)
