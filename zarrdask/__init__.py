"""zarrdask: a spec-complete Zarr v2/v3 engine native to Dask and xarray.

Core API (no Dask needed): :func:`open`, :func:`open_array`, :func:`open_group`,
:func:`create_array`, :func:`create_group`, :func:`consolidate_metadata`,
:func:`plan_read` (what a read will fetch, as data), and zarr-python's convenience calls
(:func:`zeros`, :func:`ones`, :func:`full`, :func:`empty` and their ``*_like``,
:func:`create`, :func:`array`, :func:`from_array`, :func:`open_like`,
:func:`open_consolidated`, :func:`group`, :func:`save`, :func:`save_array`,
:func:`save_group`, :func:`load`). Tools: :func:`verify` (an fsck),
:func:`migrate` (v2 metadata to v3 in place), :func:`copy` (keeps everything unless asked;
rechunk, re-shard, recompress, convert),
:func:`remove_temporary_files`.
Dask: :func:`from_zarr`, :func:`to_zarr`, :func:`plan_write`. xarray:
``xr.open_dataset(path, engine="zarrdask")`` and ``ds.zarrdask.to_zarr(...)``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any



def _import_numcodecs() -> None:
    """Import numcodecs without its crc32c deprecation warning.

    numcodecs >= 0.16.4 warns on import when the ``crc32c`` package (zarrdask's crc32c
    codec) is installed, through a filter of its own that outranks an "ignore" one; so the
    import's warnings are recorded and every other one is passed on.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import numcodecs  # noqa: F401
    for w in caught:
        if not str(w.message).startswith("crc32c usage is deprecated"):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


_import_numcodecs()

from . import codecs as codecs
from .api.openers import open, open_array, open_group, plan_read
from .nodes.array import Array, ArrayOptions
from .runtime.cache import CacheInfo, cache_clear
from .api.convenience import (array, create, empty, empty_like, from_array, full, full_like, group, load, ones,
                               ones_like, open_consolidated, open_like, save, save_array, save_group, zeros,
                               zeros_like)
from .nodes.create import create_array
from .nodes.group import Group, create_group
from .runtime.locks import FileLock
from .nodes.group import consolidate_metadata as _consolidate
from .door import resolve as _resolve
from .errors import ZarrdaskError
from .keywords import missing_name as _missing_name
from .storage import open_store
from .storage.temporary import remove_temporary_files
from .tools.migrate import migrate
from .tools.verify import verify
from .xarray_backend import accessor as _accessor  # noqa: F401  (registers ds.zarrdask / dt.zarrdask)

if TYPE_CHECKING:  # imported on first use (below); type checkers see their signatures
    from .dask_io import from_zarr, plan_write, to_zarr
    from .tools.copy import copy

__all__ = [
    "Array", "ArrayOptions", "CacheInfo", "FileLock", "Group", "ZarrdaskError", "consolidate_metadata", "create_array", "create_group",
    "open", "open_array", "open_group", "open_store", "plan_read", "from_zarr", "to_zarr", "plan_write",
    "verify", "migrate", "copy", "remove_temporary_files", "cache_clear",
    "array", "create", "empty", "empty_like", "from_array", "full", "full_like", "group", "load", "ones", "ones_like",
    "open_consolidated", "open_like", "save", "save_array", "save_group", "zeros", "zeros_like",
]
__version__ = "0.1.0"


def consolidate_metadata(store: Any, path: str | None = None, storage_options: dict[str, Any] | None = None) -> Group:
    """Write consolidated metadata for the group at ``path`` (v2 ``.zmetadata`` / v3 inline)."""
    found = _resolve("zarrdask.consolidate_metadata", store, path=path, mode="a", storage_options=storage_options,
                     read=False)
    return _consolidate(found.store, found.path)


def __getattr__(name: str) -> Any:
    # The Dask layer is imported on first use: ``import zarrdask`` stays light.
    if name in ("from_zarr", "to_zarr", "plan_write"):
        from . import dask_io

        return getattr(dask_io, name)
    if name == "copy":
        from .tools.copy import copy

        return copy
    raise _missing_name("zarrdask", name, _ZARR_NAMES, f"module 'zarrdask' has no attribute {name!r}")


#: zarr-python top-level names zarrdask has no namesake for, and what to use instead
_ZARR_NAMES = {
    "copy_all": "zarrdask.copy(source, target) copies a node and everything below it (zarr-python 3 has no "
                "copy_all either)",
    "copy_store": "zarrdask.copy(source, target) copies a node and everything below it (zarr-python 3 has no "
                  "copy_store either)",
    "tree": "call group.tree() on an opened group",
    "create_hierarchy": "create each node: zarrdask.create_group(store, path=...) and group.create_array(name, ...)",
    "AsyncArray": "zarrdask has no async API; zarrdask.Array's reads and writes run their I/O concurrently inside "
                  "each call (zarrdask.from_zarr gives a lazy dask array)",
    "AsyncGroup": "zarrdask has no async API; use zarrdask.Group",
    "config": "zarrdask's settings are dask config keys (dask.config.set({'zarrdask.cache-bytes': '1 GiB'})) and "
              "keywords of each call (zarrdask.ArrayOptions)",
    "set_format": "pass zarr_format= to the call that creates the array or group (zarrdask writes Zarr v3 unless "
                  "asked)",
    "set_log_level": "zarrdask does not log; its errors are exceptions and its warnings Python warnings",
    "print_debug_info": "print zarrdask.__version__ and the versions of numpy, numcodecs and dask",
}
