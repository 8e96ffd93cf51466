"""MappingStore: any mutable mapping of keys to bytes as a store (a ``dict``, ``dbm``, the
stores zarr-python 2 users hold), as zarr-python 2 took them and zarr-python 3 takes a dict.

The mapping lives in this process: the store pickles as a reference to it that only this
process can resolve, so a Dask task run in another process fails loudly (use a path or a
URL there) instead of writing into a copy that is then thrown away. Reads and writes
through zarrdask hold the mapping's lock (``in_process.py``; a ``dbm`` is not safe for
threads on its own), so a conditional commit compares the stored bytes with those read and
stores in one step (``guard = "compare"``). ``dbm`` keys come back as bytes, read as UTF-8.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from ..errors import StoreError
from .base import Buffer, ByteRequest, Store, Update, split_listing
from .in_process import CompareUpdate, container_lock
from .memory import slice_request

__all__ = ["MappingStore", "is_mapping_like"]

_METHODS = ("__getitem__", "__setitem__", "__delitem__", "__contains__", "keys")
#: by id, each mapping a store of this process uses: [mapping, stores over it]
#: (what unpickling resolves; dropped with the last store)
_LIVE: dict[int, list[Any]] = {}
_REGISTRY = threading.Lock()


def is_mapping_like(obj: object) -> bool:
    """Whether ``obj`` can hold a store's keys: a ``MutableMapping`` or a ``dbm`` object."""
    return all(callable(getattr(obj, name, None)) for name in _METHODS)


class MappingStore(Store):
    """The mutable mapping ``mapping`` (str keys, bytes values) as a store."""

    is_local = True
    guard = "compare"
    held_in = "process"

    def __init__(self, mapping: Any, *, read_only: bool = False) -> None:
        if not is_mapping_like(mapping):
            raise StoreError(f"{type(mapping).__name__} is not a mutable mapping (it lacks one of {_METHODS})")
        self.mapping = mapping
        self.read_only = read_only
        self.pid = os.getpid()
        with _REGISTRY:
            entry = _LIVE.get(id(mapping))
            if entry is None or entry[0] is not mapping:
                entry = _LIVE[id(mapping)] = [mapping, 0]
            entry[1] += 1
        self.lock = container_lock(mapping)
        weakref.finalize(self, _release, id(mapping))

    # -- reads -------------------------------------------------------------------------
    def _get(self, key: str) -> bytes | None:
        try:
            with self.lock:
                value = self.mapping[key]
        except KeyError:
            return None
        if isinstance(value, bytes):
            return value
        try:  # (any buffer; bytes(5) would be five zero bytes, so an int is refused with the rest)
            return bytes(memoryview(value))
        except TypeError:
            raise StoreError(f"{self!r}: the value at key {key!r} is of type {type(value).__name__}, not bytes: a "
                             "store maps each key to the bytes of a document or chunk; store bytes there, or use a "
                             "mapping that holds only a Zarr hierarchy") from None

    def _get_ranges(self, requests: list[tuple[str, ByteRequest]]) -> list[bytes | None]:
        out: list[bytes | None] = []
        for key, request in requests:
            value = self._get(key)
            out.append(None if value is None else slice_request(value, request))
        return out

    def _exists(self, key: str) -> bool:
        with self.lock:
            return key in self.mapping

    def _keys(self) -> list[str]:
        with self.lock:
            keys = list(self.mapping.keys())
        out = [k.decode() if isinstance(k, bytes) else k for k in keys]
        odd = next((k for k in out if not isinstance(k, str)), None)
        if odd is not None:
            raise StoreError(f"{self!r} has the key {odd!r} ({type(odd).__name__}), not a str: a store's keys are "
                             "paths such as 'zarr.json' or 'c/0/0'; use a mapping that holds only a Zarr hierarchy")
        return out

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        head = f"{prefix}/" if prefix else ""
        return iter(sorted(k for k in self._keys() if k.startswith(head)))

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return split_listing(prefix, self._list_prefix(prefix))

    # -- writes ------------------------------------------------------------------------
    def _set(self, key: str, value: Buffer) -> None:
        value = bytes(value)
        with self.lock:
            self.mapping[key] = value

    def _delete(self, key: str) -> None:
        with self.lock:
            try:
                del self.mapping[key]
            except KeyError:
                pass

    def _update(self, keys: list[str]) -> Update:
        return CompareUpdate(self, keys, self.lock)

    # -- identity ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"mapping://{type(self.mapping).__name__}-{id(self.mapping):x}"

    def __reduce__(self) -> tuple:
        return (_resolve, (id(self.mapping), self.pid, self.read_only, type(self.mapping).__name__))

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and other.mapping is self.mapping  # type: ignore[attr-defined]
                and other.read_only == self.read_only)

    def __hash__(self) -> int:
        return hash((type(self).__name__, id(self.mapping), self.read_only))


def _release(key: int) -> None:
    """A store over the mapping ``key`` is gone; the last one drops the registry's hold."""
    with _REGISTRY:
        entry = _LIVE.get(key)
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                del _LIVE[key]


def _resolve(key: int, pid: int, read_only: bool, kind: str) -> MappingStore:
    entry = _LIVE.get(key) if pid == os.getpid() else None
    mapping = None if entry is None else entry[0]
    if mapping is None:
        raise StoreError(f"a store over a {kind} lives in the process that made it (pid {pid}), not in this one "
                         f"(pid {os.getpid()}): write with the threaded scheduler, or pass a path or URL "
                         "(a LocalStore, S3, 'memory://name' in one process) instead of the mapping")
    return MappingStore(mapping, read_only=read_only)
