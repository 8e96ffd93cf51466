"""MemoryStore: a process-local dict of byte strings, for tests and scratch arrays.

Named stores share one dict per name within the process, so ``memory://name``
reopens the same content. A store pickles by name only: another process (a Dask
worker) unpickles an *empty* store of that name, never the contents.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Iterator, Mapping

from .base import Buffer, ByteRange, ByteRequest, Store, Update, Value, normalize_key

__all__ = ["MemoryStore", "slice_request"]


class _Bucket(dict):
    """A dict that can be weakly referenced (for anonymous stores), with the lock its
    writes take so that a conditional write compares and stores in one step, and an index
    of its directories (kept by :meth:`put` and :meth:`remove`, the only writes, under the
    lock): how many keys lie under each, and the names directly in each, so that a
    directory is listed, or asked whether it holds anything, without a scan of every key."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}  # directory -> keys below it ("" not counted)
        self.values: dict[str, set[str]] = {}  # directory -> the names of its keys
        self.dirs: dict[str, set[str]] = {}  # directory -> the names of its sub-directories

    def put(self, key: str, value: bytes) -> None:
        if key not in self:
            parent, _, name = key.rpartition("/")
            self.values.setdefault(parent, set()).add(name)
            for directory in _directories(key):
                count = self.counts.get(directory, 0)
                self.counts[directory] = count + 1
                if not count:
                    up, _, sub = directory.rpartition("/")
                    self.dirs.setdefault(up, set()).add(sub)
        self[key] = value

    def remove(self, key: str) -> None:
        if self.pop(key, None) is None:
            return
        parent, _, name = key.rpartition("/")
        _discard(self.values, parent, name)
        for directory in _directories(key):
            left = self.counts[directory] - 1
            if left:
                self.counts[directory] = left
            else:
                del self.counts[directory]
                up, _, sub = directory.rpartition("/")
                _discard(self.dirs, up, sub)


def _discard(index: dict[str, set[str]], directory: str, name: str) -> None:
    names = index[directory]
    names.discard(name)
    if not names:
        del index[directory]


def _directories(key: str) -> Iterator[str]:
    """The directories ``key`` lies under: ``a``, ``a/b`` for ``a/b/c``."""
    end = key.find("/")
    while end >= 0:
        yield key[:end]
        end = key.find("/", end + 1)


class _IdentityUpdate(Update):
    """Commits where the key still holds the very object read (no ABA: the update keeps it)."""

    store: MemoryStore

    def commit(self, values: Mapping[str, Value | None]) -> set[str]:
        data = self.store._data
        changed = set()
        with data.lock:
            for key, value in values.items():
                if data.get(key) is not self.values[key]:
                    changed.add(key)
                elif value is None:
                    data.remove(key)
                else:
                    data.put(key, bytes(b"".join(value) if isinstance(value, list) else value))
        return changed


_NAMED: dict[str, _Bucket] = {}
_ANONYMOUS: weakref.WeakValueDictionary[str, _Bucket] = weakref.WeakValueDictionary()


def slice_request(data: bytes, request: ByteRequest) -> bytes:
    """The bytes of ``data`` selected by ``request``; short (or empty) past the end."""
    if isinstance(request, ByteRange):
        return data[request.start : request.end]
    if request.length <= 0:
        return b""
    return data[-request.length :]


class MemoryStore(Store):
    """An in-memory store.

    ``MemoryStore()`` is anonymous: its contents live as long as some instance
    holding them does (an unpickled copy in the same process shares them).
    ``MemoryStore("name")`` is registered for the life of the process.
    """

    is_local = True
    guard = "compare"
    held_in = "process"

    def __init__(self, name: str | None = None, *, read_only: bool = False) -> None:
        if name is None:
            name = f"anonymous-{uuid.uuid4().hex}"
            self._data = _ANONYMOUS[name] = _Bucket()
        else:
            bucket = _NAMED.get(name)
            if bucket is None:
                bucket = _ANONYMOUS.get(name)
            if bucket is None:
                bucket = _NAMED[name] = _Bucket()
            self._data = bucket
        self.name = name
        self.read_only = read_only

    def _get(self, key: str) -> bytes | None:
        return self._data.get(key)

    def _get_ranges(self, requests: list[tuple[str, ByteRequest]]) -> list[bytes | None]:
        data = self._data
        out: list[bytes | None] = []
        for key, request in requests:
            value = data.get(key)
            out.append(None if value is None else slice_request(value, request))
        return out

    def _set(self, key: str, value: Buffer) -> None:
        value = bytes(value)
        with self._data.lock:
            self._data.put(key, value)

    def _delete(self, key: str) -> None:
        with self._data.lock:
            self._data.remove(key)

    def holds_under(self, prefix: str) -> bool:
        prefix = normalize_key(prefix)
        return prefix in self._data.counts if prefix else bool(self._data)

    def _update(self, keys: list[str]) -> Update:
        return _IdentityUpdate(self, keys)

    def _exists(self, key: str) -> bool:
        return key in self._data

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        if not prefix:
            return iter(list(self._data))
        start = prefix + "/"
        return iter([k for k in list(self._data) if k.startswith(start)])

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        data = self._data
        with data.lock:
            return sorted(data.values.get(prefix, ())), sorted(data.dirs.get(prefix, ()))

    @property
    def url(self) -> str:
        return f"memory://{self.name}"

    def identity(self) -> object:
        return ("MemoryStore", self.url)

    def __reduce__(self) -> tuple:
        return (_reopen, (self.name, self.read_only))

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.name == self.name  # type: ignore[attr-defined]
            and other.read_only == self.read_only
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name, self.read_only))


def _reopen(name: str, read_only: bool) -> MemoryStore:
    return MemoryStore(name, read_only=read_only)
