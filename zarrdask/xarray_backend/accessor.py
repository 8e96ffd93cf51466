"""``ds.zarrdask.to_zarr(...)`` and ``dt.zarrdask.to_zarr(...)``: the writer as accessors."""

from __future__ import annotations

from typing import Any

import xarray as xr
from dask.delayed import Delayed

from zarrdask.core.group import Group
from zarrdask.xarray_backend.writer import datatree_to_zarr, to_zarr

__all__ = ["ZarrdaskDataTreeAccessor", "ZarrdaskDatasetAccessor"]


@xr.register_dataset_accessor("zarrdask")
class ZarrdaskDatasetAccessor:
    """zarrdask methods on a Dataset."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def to_zarr(self, store: Any, *args: Any, **kwargs: Any) -> Group | Delayed:
        """Write this Dataset with zarrdask; see ``zarrdask.xarray_backend.to_zarr``."""
        return to_zarr(self._ds, store, *args, **kwargs)


@xr.register_datatree_accessor("zarrdask")
class ZarrdaskDataTreeAccessor:
    """zarrdask methods on a DataTree."""

    def __init__(self, dt: xr.DataTree) -> None:
        self._dt = dt

    def to_zarr(self, store: Any, *args: Any, **kwargs: Any) -> Group | Delayed:
        """Write this tree with zarrdask; see ``zarrdask.xarray_backend.datatree_to_zarr``."""
        return datatree_to_zarr(self._dt, store, *args, **kwargs)
