"""``ds.zarrdask.to_zarr(...)`` and ``dt.zarrdask.to_zarr(...)``: the writer as accessors.

Imported by ``import zarrdask`` (xarray is a dependency), so it imports only xarray; the
writer and Dask load when an accessor is first used.
"""

from __future__ import annotations

from typing import Any

import xarray as xr

__all__ = ["ZarrdaskDataTreeAccessor", "ZarrdaskDatasetAccessor"]


@xr.register_dataset_accessor("zarrdask")
class ZarrdaskDatasetAccessor:
    """zarrdask methods on a Dataset."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def to_zarr(self, store: Any = None, *args: Any, **kwargs: Any) -> Any:
        """Write this Dataset with zarrdask; see ``zarrdask.xarray_backend.to_zarr``."""
        from zarrdask.xarray_backend.writer import to_zarr  # the writer (and Dask) load on first use

        return to_zarr(self._ds, store, *args, **kwargs)


@xr.register_datatree_accessor("zarrdask")
class ZarrdaskDataTreeAccessor:
    """zarrdask methods on a DataTree."""

    def __init__(self, dt: xr.DataTree) -> None:
        self._dt = dt

    def to_zarr(self, store: Any, *args: Any, **kwargs: Any) -> Any:
        """Write this tree with zarrdask; see ``zarrdask.xarray_backend.datatree_to_zarr``."""
        from zarrdask.xarray_backend.writer import datatree_to_zarr

        return datatree_to_zarr(self._dt, store, *args, **kwargs)
