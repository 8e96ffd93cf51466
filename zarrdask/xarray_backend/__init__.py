"""xarray integration: ``engine="zarrdask"`` for reading, ``to_zarr`` for writing.

Importing this package registers the ``ds.zarrdask`` / ``dt.zarrdask`` accessors.
"""

from zarrdask.xarray_backend import accessor as _accessor  # noqa: F401  (registers accessors)
from zarrdask.xarray_backend.backend import ZarrdaskBackendEntrypoint
from zarrdask.xarray_backend.writer import datatree_to_zarr, to_zarr

__all__ = ["ZarrdaskBackendEntrypoint", "datatree_to_zarr", "to_zarr"]
