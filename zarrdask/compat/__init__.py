"""Private APIs of other libraries, one module each (``dask.py``, ``xarray.py``, and
``zarr_python.py`` for zarr-python objects users pass in).

Every entry names the release it was checked on, falls back to public API when the
private one is gone or changed, and has a test in ``tests/project/test_compat.py`` that fails
loudly (not silently falls back) when a new release breaks it.
"""
