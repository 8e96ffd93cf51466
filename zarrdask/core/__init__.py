"""The core: Array, Group, creation and opening (everything but Dask and xarray)."""
