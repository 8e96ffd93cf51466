"""The zarr-python-compatible functions that open nodes (``openers.py``: ``open``,
``open_array``, ``open_group``) and make them from data (``convenience.py``)."""
