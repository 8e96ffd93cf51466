"""Dask graph builders: shard-aligned reads (``from_zarr``) and race-free writes (``to_zarr``),
called as ``dask.array.from_zarr`` / ``dask.array.to_zarr`` are."""

from .read import from_zarr
from .write import plan_write, to_zarr

__all__ = ["from_zarr", "plan_write", "to_zarr"]
