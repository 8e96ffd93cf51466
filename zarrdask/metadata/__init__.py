"""Pure metadata model: JSON documents <-> frozen dataclasses (no I/O, no codecs).

Import from the submodules: ``v3`` (zarr.json), ``v2`` (.zarray/.zgroup/.zattrs),
``consolidated`` and ``extension``.
"""
