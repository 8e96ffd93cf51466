"""Any zarr-python store (``zarr.abc.store.Store``: Memory, Local, Fsspec, Object, Icechunk ...)
as a zarrdask Store, recognised by its shape and never imported.

A zarr-python store is asynchronous: ``get(key, prototype, byte_range)``,
``get_partial_values``, ``set(key, buffer)``, ``exists``, ``delete``, ``list_prefix``,
``list_dir``. :class:`ZarrPythonStore` runs those coroutines on zarrdask's background
event loop, many at once (``concurrency``), and answers in zarrdask's contract. The byte
request and buffer classes it needs come from the modules of zarr-python that the store
itself was made with, so the library imports nothing of zarr-python.

A store writing into a session (an Icechunk session's, see :mod:`.transactional`) pickles
as a fork of the session, so it can travel to worker processes; the copy is ``forked``
and its writes come back through :func:`.transactional.changes`. A read-only session's
store is pinned to one snapshot: it names the snapshot as its ``identity`` and as every
key's version, so shard indexes serve later reads and the decoded-chunk cache may hold it.

How a read-modify-write is guarded (``guard``): a session's store (Icechunk) by the session
(``"session"``, the plain update): Icechunk refuses a commit whose branch moved since the
session began (``ConflictError``); rebasing with ``ConflictDetector`` fails
(``ChunkDoubleUpdate``) where both sessions wrote one chunk key, and succeeds where they
wrote different ones (checked on icechunk 1.1.21). zarr-python's ``MemoryStore`` by
comparing under the lock every zarrdask writer of that store object holds (``"compare"``,
``in_process.py``). zarr-python's ``LocalStore`` is a directory like zarrdask's: its
writes and deletes go through a zarrdask ``LocalStore`` on the same root (``"lock"``, each
key's lock file; the same files, the same bytes). Any other (fsspec, obstore) has no guard:
zarr-python writes neither conditionally nor under a lock.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Iterator
from typing import Any

from ..compat.zarr_python import ensure_open
from ..errors import StoreError
from .base import Buffer, ByteRange, ByteRequest, Store, StreamedReads, Update, VersionedRanges, split_listing
from .in_process import CompareUpdate, container_lock
from .local import LocalStore
from .requests import Requests, background_loop
from .transactional import fixed_snapshot, fork_store, is_transactional

__all__ = ["ZarrPythonStore", "is_zarr_python_store"]

#: the names of metadata documents, deleted after the keys they describe
_DOCUMENTS = frozenset({"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"})

_METHODS = ("get", "get_partial_values", "set", "exists", "delete", "list_prefix", "list_dir")


def is_zarr_python_store(obj: object) -> bool:
    """Whether ``obj`` looks like a zarr-python ``Store`` (async get/set/list)."""
    return not isinstance(obj, Store) and all(hasattr(obj, m) for m in _METHODS) and (
        inspect.iscoroutinefunction(obj.get)  # type: ignore[attr-defined]
    )


def _in_memory(inner: Any) -> bool:
    """Whether ``inner`` is (a subclass of) zarr-python's ``MemoryStore``."""
    return any(c.__name__ == "MemoryStore" and c.__module__.startswith("zarr.") for c in type(inner).__mro__)


def _on_disk(inner: Any) -> LocalStore | None:
    """A zarrdask store on the directory of zarr-python's ``LocalStore`` ``inner`` (else None)."""
    if any(c.__name__ == "LocalStore" and c.__module__.startswith("zarr.") for c in type(inner).__mro__):
        return LocalStore(os.fspath(inner.root), read_only=bool(getattr(inner, "read_only", False)))
    return None


def _zarr_module(name: str) -> Any:
    module = sys.modules.get(name)
    if module is None:  # a store of zarr-python means zarr-python is loaded
        raise StoreError(f"a zarr-python store without {name} loaded")
    return module


class ZarrPythonStore(StreamedReads, Store):
    """zarrdask's view of the zarr-python store ``inner``. Pickles as ``inner`` does, or as
    a fork of its session when it writes into one (``forked``: this is such a copy)."""

    def __init__(self, inner: Any, *, concurrency: int = 64, forked: bool = False) -> None:
        if not is_zarr_python_store(inner):
            raise StoreError(f"{type(inner).__name__} is not a zarr-python store")
        self.inner = inner
        self.concurrency = concurrency
        self.forked = forked
        self.read_only = bool(getattr(inner, "read_only", False))
        self.supports_deletes = bool(getattr(inner, "supports_deletes", True))
        self.supports_writes = bool(getattr(inner, "supports_writes", True))
        self._requests = Requests(concurrency, None)
        store_module = _zarr_module("zarr.abc.store")
        self._range, self._offset, self._suffix = (
            store_module.RangeByteRequest, store_module.OffsetByteRequest, store_module.SuffixByteRequest)
        self._prototype = _zarr_module("zarr.core.buffer").default_buffer_prototype()
        self._run("open the store", lambda: ensure_open(inner))  # (zarr-python opens a store before its first request)
        self._lock = container_lock(inner) if _in_memory(inner) else None
        if self._lock is not None:
            self.held_in = "copied"  # (zarr-python's MemoryStore pickles with its contents)
        self._writing = self._lock or contextlib.nullcontext()
        self._disk = _on_disk(inner)
        self._snapshot = fixed_snapshot(inner)
        if forked or is_transactional(inner):
            self.guard = "session"
        elif self._lock is not None:
            self.guard = "compare"
        elif self._disk is not None:
            self.guard = self._disk.guard

    # -- running coroutines --------------------------------------------------------------
    def _run(self, what: str, request: Any) -> Any:
        try:
            return self._requests.run(background_loop(), request)
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise StoreError(f"cannot {what} in {self.url}: {exc}") from exc

    def _request(self, request: ByteRequest) -> Any:
        if isinstance(request, ByteRange):
            if request.length is None:
                return None if request.start == 0 else self._offset(request.start)
            return self._range(request.start, request.start + request.length)
        return self._suffix(request.length)

    # -- reads -------------------------------------------------------------------------
    def _iter_ranges(self, requests: list[tuple[str, ByteRequest]]) -> Iterator[tuple[int, bytes | None]]:
        get, prototype = self.inner.get, self._prototype
        calls = [lambda k=k, r=self._request(r): get(k, prototype, r) for k, r in requests]
        for i, result in self._requests.stream(background_loop(), calls):
            key, request = requests[i]
            if isinstance(result, Exception):
                if isinstance(result, FileNotFoundError):
                    yield i, None
                    continue
                raise StoreError(f"cannot read key {key!r} from {self.url}: {result}") from result
            if result is None:
                yield i, None
                continue
            value = result.to_bytes()
            if request.length == 0:
                value = b""
            yield i, value

    def _get_ranges_versioned(self, requests: list[tuple[str, ByteRequest]]) -> VersionedRanges:
        """The values, and on a fixed snapshot its name as every key's version (nothing in
        it changes: a shard index read once serves later reads)."""
        values = self._get_ranges(requests)
        return VersionedRanges(values, [None if self._snapshot is None or v is None else self._snapshot
                                        for v in values])

    def _exists(self, key: str) -> bool:
        return self._run(f"check key {key!r}", lambda: self.inner.exists(key))

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        head = f"{prefix}/" if prefix else ""

        async def listing() -> list[str]:
            return [k async for k in self.inner.list_prefix(head)]

        return iter(sorted(k for k in self._run(f"list prefix {prefix!r}", listing) if k.startswith(head)))

    def _list_sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        """The listing, then every listed key's size asked at once (zarr-python's
        ``getsize``, which its stores answer without reading the value; only for keys
        listed: a local store's ``getsize`` of a directory is the directory's size)."""
        keys = list(self._list_prefix(prefix))
        calls = [lambda k=k: self.inner.getsize(k) for k in keys]
        for i, result in self._requests.stream(background_loop(), calls):
            if isinstance(result, FileNotFoundError):
                continue
            if isinstance(result, Exception):
                raise StoreError(f"cannot ask the size of key {keys[i]!r} in {self.url}: {result}") from result
            yield keys[i], int(result)

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """Values and sub-directories: zarr-python lists both as names, so they are told
        apart by the full keys below ``prefix``."""
        return split_listing(prefix, self._list_prefix(prefix))

    # -- writes ------------------------------------------------------------------------
    def _set(self, key: str, value: Buffer) -> None:
        self._set_many({key: value})

    def _set_many(self, items: dict[str, Buffer]) -> None:
        if self._disk is not None:
            self._disk._set_many(items)
            return
        keys = list(items)
        make = self._prototype.buffer.from_bytes
        calls = [lambda k=k, v=items[k]: self.inner.set(k, make(bytes(v))) for k in keys]
        with self._writing:
            for i, result in self._requests.stream(background_loop(), calls):
                if isinstance(result, Exception):
                    raise StoreError(f"cannot write key {keys[i]!r} to {self.url}: {result}") from result

    def _delete(self, key: str) -> None:
        self._delete_many([key])

    def _delete_many(self, keys: list[str]) -> None:
        # chunks before the metadata documents of their nodes: a transactional store
        # (Icechunk) refuses to delete the chunks of an array whose zarr.json is gone
        if self._disk is not None:
            self._disk._delete_many(keys)
            return
        documents = [k for k in keys if k.rsplit("/", 1)[-1] in _DOCUMENTS]
        with self._writing:
            for batch in ([k for k in keys if k.rsplit("/", 1)[-1] not in _DOCUMENTS], documents):
                calls = [lambda k=k: self.inner.delete(k) for k in batch]
                for i, result in self._requests.stream(background_loop(), calls):
                    if isinstance(result, Exception) and not isinstance(result, FileNotFoundError):
                        raise StoreError(f"cannot delete key {batch[i]!r} from {self.url}: {result}") from result

    def _update(self, keys: list[str]) -> Update:
        if self._disk is not None:
            return self._disk._update(keys)
        return Update(self, keys) if self._lock is None else CompareUpdate(self, keys, self._lock)

    # -- identity ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        return str(self.inner)

    def identity(self) -> object | None:
        """A fixed snapshot's name (its contents cannot change, so the decoded-chunk cache
        may hold them); None for any other zarr-python store."""
        return self._snapshot

    def __reduce__(self) -> tuple:
        if not self.forked and is_transactional(self.inner):
            return (_rebuild, (fork_store(self.inner), self.concurrency, True))
        return (_rebuild, (self.inner, self.concurrency, self.forked))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.inner == self.inner  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.url))


def _rebuild(inner: Any, concurrency: int, forked: bool) -> ZarrPythonStore:
    return ZarrPythonStore(inner, concurrency=concurrency, forked=forked)
