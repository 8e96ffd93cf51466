"""Private APIs of zarrdask's dependencies, one module each (``dask.py``, ``xarray.py``).

Every entry names the release it was checked on, falls back to public API when the
private one is gone or changed, and has a test in ``tests/test_compat.py`` that fails
loudly (not silently falls back) when a new release breaks it.
"""
