"""Dask graph builders: shard-aligned reads (``from_zarr``) and race-free writes (``to_zarr``)."""

from .read import from_zarr
from .write import plan_write, to_zarr

__all__ = ["from_zarr", "plan_write", "to_zarr"]
