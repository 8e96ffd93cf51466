"""The Store contract: the only layer that touches bytes on disk or network.

A store maps ``/``-separated string keys to immutable byte strings. The public
methods validate every key (no ``..``, no absolute or empty segments) and the
read-only flag, then delegate to the ``_``-prefixed methods a backend implements.

Byte requests are typed: ``ByteRange(start, length)`` (``length=None`` reads to
the end) and ``SuffixRange(length)`` (the last ``length`` bytes). A range that
runs past the end of a value returns the bytes that exist; callers detect
truncation by the length. A missing key reads as ``None``.

Stores must pickle small (constructor arguments only, never contents or open
handles) and tokenize cheaply, because Dask ships them inside task graphs.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, NamedTuple, Union

from ..errors import InvalidKeyError, ReadOnlyError

__all__ = ["ByteRange", "SuffixRange", "ByteRequest", "Buffer", "Value", "Store", "Guard", "Then", "ThenRead", "Update",
           "VersionedRanges", "normalize_key", "node_path", "new_node_path", "join_path"]

Buffer = Union[bytes, bytearray, memoryview]
# A value may also be given as a list of buffers (its concatenation), so that a shard is
# written from its parts without first joining them into one more copy.
Value = Union[Buffer, list[Buffer]]


@dataclass(frozen=True, slots=True)
class ByteRange:
    """``length`` bytes starting at ``start``; ``length=None`` means to the end."""

    start: int
    length: int | None = None

    @property
    def end(self) -> int | None:
        return None if self.length is None else self.start + self.length


@dataclass(frozen=True, slots=True)
class SuffixRange:
    """The last ``length`` bytes of a value."""

    length: int


ByteRequest = Union[ByteRange, SuffixRange]


class VersionedRanges(NamedTuple):
    """What :meth:`Store.get_ranges_versioned` read: the values, in request order, and the
    version of the key each was read from (``None``: the key is absent, or the store
    cannot tell its versions). Two reads of one key saw the same value when their versions
    are equal and not ``None``."""

    values: list[bytes | None]
    versions: list[Hashable | None]


class ThenRead(NamedTuple):
    """One key's read in two steps (:meth:`Store.get_then`): its first request's value
    (``None``: none was asked for, or the key is absent), the values of the ranges asked for
    after it, the version of the key they were read from (``None``: the key is absent, or
    the store cannot tell), and whether the key changed between the two steps (its values
    then belong to another version than its first value: read it again)."""

    first: bytes | None
    values: list[bytes | None]
    version: Hashable | None
    changed: bool


#: ``then(i, first, version)``: the ranges of request ``i``'s key to read once its first
#: value (``None``: none was asked for) has been read from ``version`` of it (``None``: not
#: known yet)
Then = Callable[[int, "bytes | None", "Hashable | None"], Sequence[ByteRequest]]

def normalize_key(key: str) -> str:
    """Validate a store key and return it; reject anything that could leave the root."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"store key must be a str, got {type(key).__name__}: {key!r}")
    if key == "":
        return key
    if key.startswith("/") or "\\" in key or "\x00" in key or (len(key) > 1 and key[1] == ":"):
        raise InvalidKeyError(f"store key {key!r} is absolute or contains a forbidden character")
    wrapped = f"/{key}/"  # (a segment is empty, '.' or '..' exactly when one of these is in it)
    if "//" in wrapped or "/./" in wrapped or "/../" in wrapped:
        raise InvalidKeyError(
            f"store key {key!r} has an empty, '.' or '..' segment; keys may not leave the store root"
        )
    return key


def node_path(path: str | None) -> str:
    """A node's path in a store: ``None``/``""`` is the root; validated like a key."""
    path = (path or "").strip("/")
    return normalize_key(path) if path else path


def new_node_path(path: str | None, zarr_format: int, allow_reserved_names: bool = False) -> str:
    """The path of a node about to be created: a valid key whose names, in Zarr v3, are not
    ``zarr.json`` (the node document's name: invalid since the 2026-07-23 core rules) and do
    not start with ``__`` (the spec reserves that prefix) unless ``allow_reserved_names``.
    Existing nodes with ``__`` names (xarray writes ``__xarray_dataarray_variable__``) open."""
    path = node_path(path)
    if zarr_format == 3 and "zarr.json" in (path.split("/") if path else ()):
        raise InvalidKeyError(f"node name 'zarr.json' in {path!r}: Zarr v3 forbids a node named as the node "
                              "document (zarr-specs #375); choose another name")
    if zarr_format == 3 and not allow_reserved_names:
        for name in path.split("/") if path else ():
            if name.startswith("__"):
                raise InvalidKeyError(f"node name {name!r} in {path!r} starts with '__', a prefix the Zarr v3 "
                                      "specification reserves (allow_reserved_names=True creates it anyway)")
    return path


def join_path(*parts: str) -> str:
    """Join key segments with ``/``, skipping empty ones."""
    return "/".join([s for p in parts if p and (s := p.strip("/"))])


class StreamedReads:
    """For stores whose one read primitive is ``_iter_ranges`` (each value as it arrives):
    ``_get`` and ``_get_ranges`` in terms of it. Put it before the Store class in the bases."""

    def _get(self, key: str) -> bytes | None:
        return self._get_ranges([(key, ByteRange(0, None))])[0]

    def _get_ranges(self, requests: list[tuple[str, ByteRequest]]) -> list[bytes | None]:
        out: list[bytes | None] = [None] * len(requests)
        for i, value in self._iter_ranges(requests):  # type: ignore[attr-defined]
            out[i] = value
        return out


def split_listing(prefix: str, keys: Iterable[str]) -> tuple[list[str], list[str]]:
    """The values and the sub-directories directly below ``prefix``, from the full keys
    below it (for stores that list keys, not directories)."""
    head = f"{prefix}/" if prefix else ""
    values: set[str] = set()
    dirs: set[str] = set()
    for key in keys:
        name, sep, _ = key[len(head):].partition("/")
        (dirs if sep else values).add(name)
    return sorted(values), sorted(dirs)


#: How a store keeps a read-modify-write of a key from losing another writer's change:
#: ``"lock"``: the key is locked from the read to the commit (a lock file per key on local
#: disk); ``"compare"``: the commit is conditional on the key being unchanged (S3 ``If-Match``,
#: in-memory identity); ``"session"``: the store's own transaction detects conflicting writers
#: when it commits (Icechunk).
Guard = Literal["lock", "compare", "session"]


class Update:
    """A read-modify-write of some keys, made safe the way the store can (``Store.guard``).

    ``values`` holds each key's value (``None``: absent) as the update began; ``commit`` stores
    each new value (``None``: delete) where the key is still that value and returns the keys
    another writer changed meanwhile (nothing was stored for them: read and merge them again).
    Use it as a context manager: leaving it releases what it holds. This base class guards
    nothing: it is what a store without a guard does when the caller accepts that."""

    #: each key may be committed alone, from any thread, as soon as its value is ready (the
    #: keys are held apart while the update lasts, not compared when it commits)
    commits_each = False

    def __init__(self, store: Store, keys: Sequence[str]) -> None:
        self.store = store
        self.keys = list(keys)
        self.values: dict[str, bytes | None] = {}

    def begin(self) -> None:
        """Read the keys (and take what guards them)."""
        self.values = dict(zip(self.keys, self.store.get_many(self.keys)))

    def commit(self, values: Mapping[str, Value | None]) -> set[str]:
        """Store ``values`` (a subset of ``keys``); the keys that changed since ``begin``."""
        self.store.set_many({k: v for k, v in values.items() if v is not None})
        self.store.delete_many([k for k, v in values.items() if v is None])
        return set()

    def close(self) -> None:
        """Release what the update holds (nothing, here)."""

    def __enter__(self) -> Update:
        self.begin()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class Store(ABC):
    """Abstract key/value byte store. Backends override the ``_`` methods."""

    read_only: bool = False
    #: how this store guards a read-modify-write of a key against other writers (``None``:
    #: it cannot; partial writes of chunks and shards are then refused unless asked for)
    guard: Guard | None = None
    #: where the contents live when the store travels to another process: ``"process"``
    #: (this process's memory: another process finds it empty, or cannot open it),
    #: ``"copied"`` (it pickles with its contents: another process writes into a copy), or
    #: None (any process that opens it sees the same contents)
    held_in: Literal["process", "copied"] | None = None
    #: whether a stored key can be deleted (zarr-python's name; a zip archive: False, it is
    #: only ever added to), so that what a write leaves behind for a while (its record) is
    #: kept only where it can be taken away
    supports_deletes: bool = True
    #: whether the store can be written when opened for writing (zarr-python's name; an HTTP
    #: server: False), so that a hint to create a node is offered only where it can work
    supports_writes: bool = True
    #: True when ``_set`` accepts a list of buffers (and writes them without joining).
    writes_parts: bool = False
    #: True for stores in this process's memory or on local disk: a request costs microseconds,
    #: so readers fetch from several threads instead of batching everything into one call.
    is_local: bool = False

    # -- reads -----------------------------------------------------------------
    def get(self, key: str) -> bytes | None:
        """The whole value at ``key``, or ``None`` when it does not exist."""
        return self._get(normalize_key(key))

    def get_ranges(self, requests: Sequence[tuple[str, ByteRequest]]) -> list[bytes | None]:
        """Fetch many byte ranges (possibly of different keys) in one batched call.

        Results are in request order; ``None`` where the key does not exist.
        Async backends issue the requests concurrently.
        """
        checked = [(normalize_key(k), r) for k, r in requests]
        if not checked:
            return []
        return self._get_ranges(checked)

    def get_ranges_versioned(self, requests: Sequence[tuple[str, ByteRequest]]) -> VersionedRanges:
        """:meth:`get_ranges`, with the version of the key each value was read from where
        the store can tell (a local file's identity and times), so that a reader combining
        reads of one key made at different times (a shard's index, later its chunks) knows
        whether the key changed in between; ``None`` elsewhere."""
        checked = [(normalize_key(k), r) for k, r in requests]
        if not checked:
            return VersionedRanges([], [])
        return self._get_ranges_versioned(checked)

    def get_then(self, requests: Sequence[tuple[str, ByteRequest | None]], then: Then) -> list[ThenRead]:
        """Read each key in two steps: its first request (``None``: none), then the ranges
        ``then(i, value, version)`` asks for once it has seen that value (a shard's index,
        then the chunks it points to). ``then`` is not called for a key found absent. A
        store that holds a key open between the steps (local files) reads both from one
        version of it; the others make two batched calls, every key's first request and
        then every key's ranges (two round trips in all on an object store), and tell from
        the versions whether a key changed in between (``ThenRead.changed``)."""
        checked = [(normalize_key(k), r) for k, r in requests]
        if not checked:
            return []
        return self._get_then(checked, then)

    def iter_ranges(self, requests: Sequence[tuple[str, ByteRequest]]) -> Iterator[tuple[int, bytes | None]]:
        """Fetch like :meth:`get_ranges`, yielding ``(position in requests, value)`` as each
        value arrives (remote stores: in completion order, so a reader can decode early
        values while later ones are in flight)."""
        checked = [(normalize_key(k), r) for k, r in requests]
        if not checked:
            return iter(())
        return self._iter_ranges(checked)

    def identity(self) -> object | None:
        """What names this store's contents for the decoded-chunk cache (hashable), or None
        where the URL may not name one state of them (a session, held writes): not cached."""
        return None

    def file_of(self, key: str) -> str | None:
        """The local file that holds (or would hold) ``key``, where keys are files on this
        machine's disk; None elsewhere."""
        return None

    def holds_under(self, prefix: str) -> bool | None:
        """Whether any key lies under the directory ``prefix``, where the store can tell
        without a request or a scan of its keys (a stat on a local disk, an index in
        memory); None where it cannot (a remote store, a mapping listed only key by key)."""
        directory = self.file_of(normalize_key(prefix))
        return None if directory is None else os.path.isdir(directory)

    def reach(self) -> int:
        """How many bytes one request may ask for beyond what a reader needs, when the rest
        could save it another request: about what the store sends in the time of a round
        trip (remote stores measure it: ``link.py``); 0 where requests cost next to nothing."""
        return 0

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Fetch many whole values in one batched call (``None`` where missing)."""
        return self.get_ranges([(k, ByteRange(0, None)) for k in keys])

    def exists(self, key: str) -> bool:
        return self._exists(normalize_key(key))

    def size(self, key: str) -> int | None:
        """The size in bytes of the value at ``key`` (``None`` when missing)."""
        return self._size(normalize_key(key))

    def _size(self, key: str) -> int | None:
        value = self._get(key)
        return None if value is None else len(value)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Every key below ``prefix`` (recursively), as full keys."""
        prefix = prefix.strip("/")
        if prefix:
            normalize_key(prefix)
        return self._list_prefix(prefix)

    def list_sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        """Every key below ``prefix`` (as :meth:`list_prefix`) with its value's size in
        bytes: one listing where the store lists sizes (object stores, fsspec file systems),
        else a size asked per key."""
        prefix = prefix.strip("/")
        if prefix:
            normalize_key(prefix)
        return self._list_sizes(prefix)

    def _list_sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        for key in self._list_prefix(prefix):
            size = self._size(key)
            if size is not None:
                yield key, size

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """The direct children of ``prefix``: (value names, sub-directory names)."""
        prefix = prefix.strip("/")
        if prefix:
            normalize_key(prefix)
        return self._list_dir(prefix)

    # -- writes ----------------------------------------------------------------
    def set(self, key: str, value: Value) -> None:
        """Store ``value`` (bytes, or a list of parts) at ``key`` atomically: a reader sees the
        old or the new value."""
        self._check_writable(key)
        self._set(normalize_key(key), self._joined(value))

    def set_many(self, items: Mapping[str, Value]) -> None:
        """Store many values; each one atomically. Async backends write concurrently."""
        for key in items:
            self._check_writable(key)
            normalize_key(key)
        if items:
            self._set_many({k: self._joined(v) for k, v in items.items()})

    def _joined(self, value: Value) -> Any:
        if isinstance(value, list) and not self.writes_parts:
            return b"".join(value)
        return value

    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""
        self._check_writable(key)
        self._delete(normalize_key(key))

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = [normalize_key(k) for k in keys]
        for key in keys:
            self._check_writable(key)
        if keys:
            self._delete_many(keys)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key below ``prefix`` (the whole store for ``""``)."""
        self._check_writable(prefix)
        self.delete_many(list(self.list_prefix(prefix)))

    def update(self, keys: Iterable[str]) -> Update:
        """A read-modify-write of ``keys`` (``with store.update(keys) as u: ... u.commit(new)``),
        guarded as ``guard`` says; unguarded (a plain read, then plain writes) where it is None."""
        checked = sorted({normalize_key(k) for k in keys})
        for key in checked:
            self._check_writable(key)
        return self._update(checked)

    def _update(self, keys: list[str]) -> Update:
        return Update(self, keys)

    def _check_writable(self, key: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"cannot write {key!r}: store {self!r} is opened read-only")

    # -- backend hooks -----------------------------------------------------------
    @abstractmethod
    def _get(self, key: str) -> bytes | None: ...

    @abstractmethod
    def _get_ranges(self, requests: list[tuple[str, ByteRequest]]) -> list[bytes | None]: ...

    def _get_ranges_versioned(self, requests: list[tuple[str, ByteRequest]]) -> VersionedRanges:
        """``_get_ranges`` and each key's version; stores that can tell override it."""
        return VersionedRanges(self._get_ranges(requests), [None] * len(requests))

    def _iter_ranges(self, requests: list[tuple[str, ByteRequest]]) -> Iterator[tuple[int, bytes | None]]:
        return enumerate(self._get_ranges(requests))

    def _get_then(self, requests: list[tuple[str, ByteRequest | None]], then: Then) -> list[ThenRead]:
        """``get_then`` in two batched versioned calls; stores that hold a key open override it."""
        asked = [i for i, (_, first) in enumerate(requests) if first is not None]
        firsts = self._get_ranges_versioned([requests[i] for i in asked]  # type: ignore[misc]
                                            ) if asked else VersionedRanges([], [])
        values: list[bytes | None] = [None] * len(requests)
        versions: list[Hashable | None] = [None] * len(requests)
        absent = [False] * len(requests)
        for i, value, version in zip(asked, firsts.values, firsts.versions):
            values[i], versions[i], absent[i] = value, version, value is None
        later: list[tuple[str, ByteRequest]] = []
        counts = [0] * len(requests)
        for i, (key, _) in enumerate(requests):
            if not absent[i]:
                ranges = then(i, values[i], versions[i])
                later.extend((key, r) for r in ranges)
                counts[i] = len(ranges)
        seconds = self._get_ranges_versioned(later) if later else VersionedRanges([], [])
        out, pos = [], 0
        for i, n in enumerate(counts):
            if absent[i]:
                out.append(ThenRead(None, [], None, False))
                continue
            seen = seconds.versions[pos: pos + n]
            known = versions[i] if requests[i][1] is not None or not seen else seen[0]
            changed = known is not None and any(v != known for v in seen)
            out.append(ThenRead(values[i], seconds.values[pos: pos + n], known, changed))
            pos += n
        return out

    @abstractmethod
    def _set(self, key: str, value: Buffer) -> None: ...

    def _set_many(self, items: dict[str, Buffer]) -> None:
        for key, value in items.items():
            self._set(key, value)

    @abstractmethod
    def _delete(self, key: str) -> None: ...

    def _delete_many(self, keys: list[str]) -> None:
        for key in keys:
            self._delete(key)

    @abstractmethod
    def _exists(self, key: str) -> bool: ...

    @abstractmethod
    def _list_prefix(self, prefix: str) -> Iterator[str]: ...

    @abstractmethod
    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]: ...

    # -- identity ----------------------------------------------------------------
    @property
    @abstractmethod
    def url(self) -> str:
        """A URL (or description) that identifies this store's root."""

    def __dask_tokenize__(self) -> object:
        return (type(self).__name__, self.url, self.read_only)

    def __repr__(self) -> str:
        mode = "r" if self.read_only else "rw"
        return f"{type(self).__name__}({self.url!r}, mode={mode!r})"
