"""A pytest plugin for running dask's own zarr tests with zarrdask in dask's place:
``da.to_zarr``, ``da.from_zarr`` and ``Array.to_zarr`` become zarrdask's functions."""

import dask.array as da
import dask.array.core as core

import zarrdask


def pytest_configure(config):
    da.to_zarr = core.to_zarr = zarrdask.to_zarr
    da.from_zarr = core.from_zarr = zarrdask.from_zarr
    core.Array.to_zarr = lambda self, *args, **kwargs: zarrdask.to_zarr(self, *args, **kwargs)
