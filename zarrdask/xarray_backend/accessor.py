"""``da.zarrdask.to_zarr``, ``ds.zarrdask.to_zarr`` and ``dt.zarrdask.to_zarr``: the
writer as accessors.

Each takes the keywords of xarray's own ``to_zarr`` for that type (the same names,
defaults and kinds; ``tests/interop/test_dropin_xarray.py`` compares the signatures) plus
zarrdask's ``progress``. Imported by ``import zarrdask`` (xarray is a dependency), so it
imports only xarray; the writer and Dask load when an accessor is first used.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import xarray as xr

from zarrdask.xarray_backend.public import public

if TYPE_CHECKING:
    from dask.delayed import Delayed
    from xarray.core.types import ZarrWriteModes

    from zarrdask.nodes.group import Group
    from zarrdask.xarray_backend.region import RegionArg

__all__ = ["ZarrdaskDataArrayAccessor", "ZarrdaskDataTreeAccessor", "ZarrdaskDatasetAccessor"]

_KEYWORDS = """
        Every keyword has the meaning it has in xarray's ``to_zarr``. ``align_chunks`` has
        nothing left to do: zarrdask's writer gathers dask chunks per shard, so no alignment
        can make its writes race. ``safe_chunks``: writes of parts of shards (a region or an
        append that cuts a shard) are safe against other writers wherever the store guards
        them (local files, S3, memory, Icechunk) and refused where it cannot; False lets them
        go ahead there (no other writer touches those shards meanwhile). Refused:
        ``progress=True`` with ``compute=False`` or with ``chunkmanager_store_kwargs``
        (wrap the call, or compute the returned Delayed, in
        ``with dask.diagnostics.ProgressBar():`` instead).
        ``progress=True`` (zarrdask's own) draws a progress bar while dask data is written.
        ``task_size`` (zarrdask's own, as ``zarrdask.to_zarr``'s): group whole shards of dask
        variables into write tasks of about that size (``"auto"``: dask's
        ``array.chunk-size``; bytes or ``"64 MiB"``), for tiny shards on a cluster.
        ``staging`` (zarrdask's own, as ``zarrdask.to_zarr``'s): where the pieces of dask
        chunks that cut shards wait for the rest of their shard (None: in the store only
        where they would outweigh one thread's work; True: in the store; False: in memory).
        Returns the written zarrdask ``Group``, or with ``compute=False`` a ``Delayed``.
"""


@xr.register_dataset_accessor("zarrdask")
class ZarrdaskDatasetAccessor:
    """zarrdask methods on a Dataset."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    @public("Dataset.zarrdask.to_zarr")
    def to_zarr(
        self,
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
        progress: bool = False,
        task_size: int | str | None = None,
        staging: bool | None = None,
    ) -> Group | Delayed:
        from zarrdask.xarray_backend.writer import write_dataset  # the writer (and Dask) load on first use

        return write_dataset(
            self._ds, store, mode, group, encoding, compute=compute, consolidated=consolidated,
            append_dim=append_dim, region=region, storage_options=storage_options, zarr_format=zarr_format,
            write_empty_chunks=write_empty_chunks, chunkmanager_store_kwargs=chunkmanager_store_kwargs,
            progress=progress, task_size=task_size, staging=staging, safe_chunks=safe_chunks, function="Dataset.zarrdask.to_zarr",
        )

    to_zarr.__doc__ = "Write this Dataset with zarrdask, like ``Dataset.to_zarr``.\n" + _KEYWORDS


@xr.register_dataarray_accessor("zarrdask")
class ZarrdaskDataArrayAccessor:
    """zarrdask methods on a DataArray."""

    def __init__(self, da: xr.DataArray) -> None:
        self._da = da

    @public("DataArray.zarrdask.to_zarr")
    def to_zarr(
        self,
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
        progress: bool = False,
        task_size: int | str | None = None,
        staging: bool | None = None,
    ) -> Group | Delayed:
        from zarrdask.xarray_backend.writer import dataarray_as_dataset, write_dataset

        return write_dataset(
            dataarray_as_dataset(self._da), store, mode, group, encoding, compute=compute,
            consolidated=consolidated, append_dim=append_dim, region=region, storage_options=storage_options,
            zarr_format=zarr_format, write_empty_chunks=write_empty_chunks,
            chunkmanager_store_kwargs=chunkmanager_store_kwargs, progress=progress, task_size=task_size, staging=staging,
            safe_chunks=safe_chunks, function="DataArray.zarrdask.to_zarr",
        )

    to_zarr.__doc__ = (
        "Write this DataArray with zarrdask, like ``DataArray.to_zarr``: as a one-variable\n"
        "        Dataset named as xarray names it (``__xarray_dataarray_variable__`` when unnamed),\n"
        "        so ``xr.open_dataarray`` reads it back.\n" + _KEYWORDS
    )


@xr.register_datatree_accessor("zarrdask")
class ZarrdaskDataTreeAccessor:
    """zarrdask methods on a DataTree."""

    def __init__(self, dt: xr.DataTree) -> None:
        self._dt = dt

    @public("DataTree.zarrdask.to_zarr")
    def to_zarr(
        self,
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
        progress: bool = False,
        task_size: int | str | None = None,
        staging: bool | None = None,
    ) -> Group | Delayed:
        from zarrdask.xarray_backend.writer import write_datatree

        return write_datatree(
            self._dt, store, mode, encoding, consolidated, group, write_inherited_coords, compute,
            append_dim=append_dim, region=region, storage_options=storage_options, zarr_format=zarr_format,
            write_empty_chunks=write_empty_chunks, chunkmanager_store_kwargs=chunkmanager_store_kwargs,
            progress=progress, task_size=task_size, staging=staging, safe_chunks=safe_chunks, function="DataTree.zarrdask.to_zarr",
        )

    to_zarr.__doc__ = (
        "Write this tree with zarrdask, one Zarr group per node, like ``DataTree.to_zarr``.\n"
        "        ``group`` writes the tree's root there (xarray refuses it). Refused, as by\n"
        "        xarray: ``append_dim`` (append node by node with\n"
        "        ``Dataset.zarrdask.to_zarr(store, group=<node path>, append_dim=...)``).\n" + _KEYWORDS
    )
