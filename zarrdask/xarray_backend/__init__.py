"""xarray integration: ``engine="zarrdask"`` for reading, ``to_zarr`` for writing.

``import zarrdask`` registers the ``da.zarrdask`` / ``ds.zarrdask`` / ``dt.zarrdask`` accessors (module
``accessor``); the backend and the writer load on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ZarrdaskBackendEntrypoint", "datatree_to_zarr", "to_zarr"]


def __getattr__(name: str) -> Any:
    if name == "ZarrdaskBackendEntrypoint":
        from .backend import ZarrdaskBackendEntrypoint

        return ZarrdaskBackendEntrypoint
    if name in ("to_zarr", "datatree_to_zarr"):
        from . import writer

        return getattr(writer, name)
    raise AttributeError(f"module 'zarrdask.xarray_backend' has no attribute {name!r}")
