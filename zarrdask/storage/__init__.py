"""The storage layer: the Store contract, its backends, and ``open_store``."""

from __future__ import annotations

import copy
import os
from typing import Any

import fsspec

from ..errors import ContainsNodeError, InvalidModeError, InvalidStoreError, StoreError
from .base import ByteRange, ByteRequest, Store, SuffixRange, join_path, normalize_key
from .coalesce import coalesce_ranges, split_coalesced
from .fsspec_store import FsspecStore, ZipStore, fs_protocols
from .retry import RetryPolicy
from .local import LocalStore
from .mapping import MappingStore, is_mapping_like
from .memory import MemoryStore
from .zarr_python import ZarrPythonStore, is_zarr_python_store
from .transformers import (
    PrefixedStore,
    ReadOnlyStore,
    WrapperStore,
    get_storage_transformer,
    register_storage_transformer,
)

__all__ = [
    "ByteRange",
    "SuffixRange",
    "ByteRequest",
    "Store",
    "normalize_key",
    "join_path",
    "LocalStore",
    "MemoryStore",
    "MappingStore",
    "FsspecStore",
    "RetryPolicy",
    "ZipStore",
    "ZarrPythonStore",
    "WrapperStore",
    "PrefixedStore",
    "ReadOnlyStore",
    "register_storage_transformer",
    "get_storage_transformer",
    "coalesce_ranges",
    "split_coalesced",
    "open_store",
    "StoreLike",
]

StoreLike = Store | str | os.PathLike[str] | Any  # Any: a zarr-python store

MODES = ("r", "r+", "a", "w", "w-")


def _holder_hint(obj: Any) -> str:
    """What to pass instead of an object that holds a store (an Icechunk session, whose
    ``.store`` is one; an Icechunk repository, whose sessions' are), as zarr-python takes them."""
    if is_zarr_python_store(getattr(obj, "store", None)):
        return f" (for this {type(obj).__name__}, pass its .store, as zarr-python and xarray take it)"
    if callable(getattr(obj, "readonly_session", None)) and callable(getattr(obj, "writable_session", None)):
        return (f" (for this {type(obj).__name__}, pass a session's store: .readonly_session('main').store to "
                "read, .writable_session('main').store to write, then commit the session)")
    return ""


def open_store(store_like: StoreLike, *, mode: str = "r", storage_options: dict[str, Any] | None = None) -> Store:
    """Turn a store, path or URL into a Store.

    * a ``Store`` passes through; with ``mode="r"`` a writable one is replaced by a
      read-only view (a read-only copy of the same class for the built-in stores).
    * a zarr-python store (``zarr.storage.MemoryStore``, ``LocalStore``, an Icechunk
      session's store, ...) -> ``ZarrPythonStore`` over it.
    * an fsspec ``FSMap`` (``fsspec.get_mapper(url)``, ``s3fs.S3Map``) -> the store of its
      filesystem and root (``LocalStore`` on local disk, else ``FsspecStore``).
    * any other mutable mapping (a ``dict``, ``dbm``) -> ``MappingStore`` over it.
    * a local path or ``file://`` URL -> ``LocalStore`` (``FsspecStore`` if
      ``storage_options`` are given).
    * ``memory://name`` -> ``MemoryStore(name)`` (``memory://`` alone, or None as in
      zarr-python: a new anonymous one).
    * ``*.zip`` (local or remote) or ``zip://[path-in-zip::]archive`` -> ``ZipStore``:
      ``"r"`` reads; ``"w"`` creates a new archive, ``"w-"`` too unless it exists,
      ``"a"`` only when it does not exist yet (a zip is never updated in place).
    * any other URL (``s3://``, ``gs://``, ``http(s)://``, chained ``a::b`` ...) ->
      ``FsspecStore`` with ``storage_options`` (and its defaults for ``s3://``).

    ``mode="r"`` makes the store read-only; every other mode is writable. Node-level
    meaning ("w" overwrites, "w-" fails if present, "r+" must exist) is applied by
    the caller to the node path, not here (except for zip archives, see above).
    """
    if mode not in MODES:
        raise InvalidModeError(f"mode must be one of {MODES}, got {mode!r}")
    read_only = mode == "r"
    if isinstance(store_like, Store):
        if storage_options:
            raise InvalidModeError("storage_options cannot be applied to an already opened Store")
        if read_only and not store_like.read_only:
            return _read_only_view(store_like)
        return store_like
    if is_zarr_python_store(store_like):
        if storage_options:
            raise InvalidModeError("storage_options cannot be applied to a zarr-python store")
        return open_store(ZarrPythonStore(store_like), mode=mode)
    if store_like is None:  # (zarr-python's default store: a new one in memory)
        return open_store(MemoryStore(), mode=mode, storage_options=storage_options)
    if isinstance(store_like, fsspec.FSMap):
        if storage_options:
            raise InvalidModeError("storage_options cannot be applied to an FSMap: its filesystem is already "
                                   "made; pass the URL with storage_options instead")
        return _from_fsmap(store_like, read_only)
    if is_mapping_like(store_like) and not isinstance(store_like, (str, os.PathLike)):
        if storage_options:
            raise InvalidModeError(f"storage_options cannot be applied to a {type(store_like).__name__} store")
        return MappingStore(store_like, read_only=read_only)
    if not isinstance(store_like, (str, os.PathLike)):
        raise InvalidStoreError(f"expected a store, path or URL, got {type(store_like).__name__}: pass a path, a URL "
                                "(with storage_options), an fsspec mapper, a mutable mapping, or a zarrdask or "
                                f"zarr-python store{_holder_hint(store_like)}")
    url = os.fspath(store_like)
    options = dict(storage_options or {})
    protocol, sep, rest = url.partition("://")
    protocol = protocol.lower() if sep else ""
    if protocol == "zip":
        inner, chained, archive = rest.partition("::")
        return _open_zip(archive if chained else rest, inner if chained else "", mode, options)
    if "::" not in url and url.rstrip("/").lower().endswith(".zip"):
        return _open_zip(url, "", mode, options)
    if protocol == "memory" and not options:
        return MemoryStore(rest.strip("/") or None, read_only=read_only)
    if protocol in ("", "file", "local") and not options and "::" not in url:
        return LocalStore(rest if sep else url, read_only=read_only)
    try:
        return FsspecStore(url, storage_options=options, read_only=read_only)
    except (ValueError, ImportError, TypeError) as exc:
        raise InvalidStoreError(f"cannot open store {url!r}: {exc}") from exc


def _from_fsmap(mapper: fsspec.FSMap, read_only: bool) -> Store:
    """The store of an FSMap's filesystem, rooted where the mapper is."""
    if "file" in fs_protocols(mapper.fs) or "local" in fs_protocols(mapper.fs):
        return LocalStore(mapper.root, read_only=read_only)
    return FsspecStore(mapper.fs, path=mapper.root, read_only=read_only)


def _read_only_view(store: Store) -> Store:
    if type(store) in (LocalStore, MemoryStore, FsspecStore):
        view = copy.copy(store)  # rebuilt from constructor arguments: shares the data
        view.read_only = True
        return view
    return ReadOnlyStore(store)


def _open_zip(archive: str, inner: str, mode: str, options: dict[str, Any]) -> ZipStore:
    if mode != "r":
        fs, path = fsspec.core.url_to_fs(archive, **options)
        exists = fs.exists(path)
        if exists and mode == "w-":
            raise ContainsNodeError(f"zip archive {archive!r} already exists (mode 'w-')")
        if mode == "r+" or (exists and mode == "a"):
            raise StoreError(
                f"zip archive {archive!r} cannot be updated in place (mode {mode!r}); "
                "open it with mode 'r' to read or 'w' to write a new archive"
            )
    return ZipStore(archive, path=inner, mode="r" if mode == "r" else "w", storage_options=options)
