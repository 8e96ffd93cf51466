"""LocalStore: keys are files under a root directory, read and written with plain os calls.

This is the benchmark hot path, so it avoids fsspec: whole values are read with
one ``open``/``read``, byte ranges with ``os.pread`` on one descriptor per key per
batch, and a write goes into the key's lock file (``key_lock.py``: one name per key,
locked with ``flock``), which is then ``os.replace``-d onto the key, so a reader sees the
old or the new value, never a torn one, and no two writers of a key interleave. (Writes
are not fsync-ed: atomic, not durable across a crash.) A write is a few system calls on
a bare descriptor (open, lock, two stats, one gathered write, rename, close): Python's file
object added a stat, a terminal check, a seek and its buffer (benchmarks/README.md, issue 28).
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
import stat
from collections.abc import Callable, Hashable, Iterator, Mapping

from ..errors import InvalidStoreError, StoreError
from .base import (Buffer, ByteRange, ByteRequest, Store, Then, ThenRead, Update, Value, VersionedRanges,
                   normalize_key)
from .key_lock import SUPPORTED, KeyLock, is_lock_name

__all__ = ["LocalStore", "MISSING_ERRORS", "is_temporary_name", "temporary_name"]

_TMP_NAME = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")
#: the errors an absent key raises on a local file system
MISSING_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError)


def is_temporary_name(name: str) -> bool:
    """Whether a file name is one of an atomic write in progress: a key's lock file
    (``key_lock.py``) or a uniquely named temporary file (``.<name>.<hex>.tmp``)."""
    return name[:1] == "." and name.endswith(".tmp") and (is_lock_name(name) or _TMP_NAME.match(name) is not None)


class _Names:
    """Unique temporary names: a random token of the process (new in a forked child) and a
    count, where a random name per write cost a system call (``uuid4``) of its own."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.token = secrets.token_hex(8)
        self.count = itertools.count()


_NAMES = _Names()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_NAMES.reset)


def temporary_name(name: str) -> str:
    """A new temporary file name for writing ``name`` (``.<name>.<32 hex>.tmp``), unique
    across threads and processes."""
    return f".{name}.{_NAMES.token}{next(_NAMES.count):016x}.tmp"


if hasattr(os, "pread"):
    _pread = os.pread
else:  # Windows: the descriptor is private to one batch, so seek + read is safe.

    def _pread(fd: int, n: int, offset: int) -> bytes:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, n)


#: how a temporary file is created: new (never an existing name), write-only, binary
_CREATE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_BINARY", 0))
#: the most buffers one gathered write takes (POSIX guarantees at least 16; Linux 1024)
_IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 16


def _write_first(fd: int, buffers: list[memoryview]) -> int:
    """Windows has no gathered write: as many bytes of the first buffer as one write takes."""
    return os.write(fd, buffers[0])


_writev: Callable[[int, list[memoryview]], int] = getattr(os, "writev", _write_first)


def _write_all(fd: int, value: Value) -> None:
    """Write every byte of ``value`` (one buffer or a list of parts) to ``fd``: gathered
    writes of up to ``_IOV_MAX`` parts, resumed after a short write."""
    views = [_bytes_view(p) for p in (value if isinstance(value, list) else [value])]
    parts = [v for v in views if len(v)]
    first = 0  # parts before this one are written
    while first < len(parts):
        written = _writev(fd, parts[first: first + _IOV_MAX])
        while written and written >= len(parts[first]):
            written -= len(parts[first])
            first += 1
        if written:  # a short write inside a part: the rest of it next
            parts[first] = parts[first][written:]


def _version(st: os.stat_result) -> Hashable:
    """A file's version: every write replaces the file (a new inode, written then renamed),
    and the times and size tell apart an inode number the file system gave out again."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _bytes_view(part: Buffer) -> memoryview:
    view = memoryview(part)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _read_request(fd: int, request: ByteRequest, size: int) -> tuple[bytes, int]:
    """What ``request`` reads of the open file ``fd``, and the file's size (``size``: known,
    or -1, then read from the descriptor when the request needs it)."""
    if isinstance(request, ByteRange) and request.length is not None:
        start, length = request.start, request.length
    else:
        if size < 0:
            size = os.fstat(fd).st_size
        if isinstance(request, ByteRange):
            start, length = request.start, size - request.start
        else:
            length = min(request.length, size)
            start = size - length
    return (_read_at(fd, start, length) if length > 0 else b""), size


def _read_at(fd: int, offset: int, length: int) -> bytes:
    """Up to ``length`` bytes at ``offset`` (fewer only at end of file)."""
    data = _pread(fd, length, offset)
    if len(data) == length or not data:
        return data
    parts = [data]
    got = len(data)
    while got < length:
        more = _pread(fd, length - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class _LockedUpdate(Update):
    """The keys locked (in sorted order, so writers of overlapping sets never deadlock) before
    they are read, each unlocked by its commit or when the update ends."""

    store: LocalStore
    commits_each = True

    def __init__(self, store: LocalStore, keys: list[str]) -> None:
        super().__init__(store, keys)
        self._locks: dict[str, KeyLock] = {}

    def begin(self) -> None:
        try:
            for key in self.keys:
                self._locks[key] = KeyLock(self.store.path_of(key)).acquire()
        except BaseException as e:
            self.close()
            if isinstance(e, OSError):
                raise StoreError(f"cannot lock key {key!r} in {self.store.root!r}: {e}") from e
            raise
        self.values = dict(zip(self.keys, self.store.get_many(self.keys)))

    def commit(self, values: Mapping[str, Value | None]) -> set[str]:
        parents = set()
        for key, value in values.items():
            lock = self._locks.pop(key)
            try:
                if value is None:
                    lock.remove()
                    parents.add(os.path.dirname(lock.path))
                else:
                    lock.publish(lambda fd, v=value: _write_all(fd, v))  # type: ignore[misc]
            except OSError as e:
                raise StoreError(f"cannot write key {key!r} in {self.store.root!r}: {e}") from e
        self.store._prune(parents)
        return set()

    def close(self) -> None:
        for lock in self._locks.values():
            lock.release()
        self._locks.clear()


class LocalStore(Store):
    """A directory on the local filesystem; key ``a/b/c`` is the file ``root/a/b/c``.

    Every write of a key holds the key's lock (``key_lock.py``), and a read-modify-write
    holds it from its read to its commit (``guard = "lock"``)."""

    writes_parts = True
    is_local = True
    guard = "lock" if SUPPORTED else None

    def __init__(self, root: str | os.PathLike[str], read_only: bool = False) -> None:
        path = os.fspath(root)
        if "\x00" in path:  # (no file system takes it: every os call would raise a bare ValueError)
            raise InvalidStoreError(f"local path {path!r} contains a NUL character ('\\x00'), which no file system "
                                    "allows in a name; pass the path without it")
        self.root = os.path.abspath(path)
        self.read_only = read_only
        self._prefix = os.path.join(self.root, "")

    def path_of(self, key: str) -> str:
        """The file of ``key``."""
        if os.sep != "/":
            key = key.replace("/", os.sep)
        return self._prefix + key

    # -- reads -----------------------------------------------------------------
    def _get(self, key: str) -> bytes | None:
        try:
            with open(self.path_of(key), "rb") as f:
                return f.read()
        except MISSING_ERRORS:
            return None
        except OSError as e:
            raise StoreError(f"cannot read key {key!r} from {self.root!r}: {e}") from e

    def _get_ranges(self, requests: list[tuple[str, ByteRequest]]) -> list[bytes | None]:
        return self._read_ranges(requests, None)

    def _get_ranges_versioned(self, requests: list[tuple[str, ByteRequest]]) -> VersionedRanges:
        versions: list[Hashable | None] = [None] * len(requests)
        return VersionedRanges(self._read_ranges(requests, versions), versions)

    def _read_ranges(self, requests: list[tuple[str, ByteRequest]],
                     versions: list[Hashable | None] | None) -> list[bytes | None]:
        """The values, each key's ranges read on one descriptor; with ``versions``, each
        request's key's version there (:func:`_version`, from the descriptor read)."""
        out: list[bytes | None] = [None] * len(requests)
        by_key: dict[str, list[int]] = {}
        for i, (key, _) in enumerate(requests):
            by_key.setdefault(key, []).append(i)
        for key, indices in by_key.items():
            try:
                fd = os.open(self.path_of(key), os.O_RDONLY)
            except MISSING_ERRORS:
                continue
            except OSError as e:
                raise StoreError(f"cannot open key {key!r} in {self.root!r}: {e}") from e
            try:
                size = -1
                if versions is not None:
                    st = os.fstat(fd)
                    size, version = st.st_size, _version(st)
                    for i in indices:
                        versions[i] = version
                for i in indices:
                    out[i], size = _read_request(fd, requests[i][1], size)
            except IsADirectoryError:
                for i in indices:
                    out[i] = None
                    if versions is not None:
                        versions[i] = None
            except OSError as e:
                raise StoreError(f"cannot read key {key!r} in {self.root!r}: {e}") from e
            finally:
                os.close(fd)
        return out

    def _get_then(self, requests: list[tuple[str, ByteRequest | None]], then: Then) -> list[ThenRead]:
        """Each key's two steps on one descriptor (one open, one size), its version taken
        before the first and after the ranges: another writer that replaced the file in
        between (a rename moves the old file's change time) or rewrote it in place is told
        (``changed``)."""
        out = []
        for i, (key, first) in enumerate(requests):
            try:
                fd = os.open(self.path_of(key), os.O_RDONLY)
            except MISSING_ERRORS:
                out.append(ThenRead(None, [], None, False))
                continue
            except OSError as e:
                raise StoreError(f"cannot open key {key!r} in {self.root!r}: {e}") from e
            try:
                try:
                    st = os.fstat(fd)
                    if stat.S_ISDIR(st.st_mode):  # (a directory: no value)
                        out.append(ThenRead(None, [], None, False))
                        continue
                    size, version = st.st_size, _version(st)
                    value = None if first is None else _read_request(fd, first, size)[0]
                except OSError as e:
                    raise StoreError(f"cannot read key {key!r} in {self.root!r}: {e}") from e
                ranges = then(i, value, version)  # (the caller's own errors pass as they are)
                try:
                    values = [_read_request(fd, r, size)[0] for r in ranges]
                    changed = bool(ranges) and _version(os.fstat(fd)) != version
                except OSError as e:
                    raise StoreError(f"cannot read key {key!r} in {self.root!r}: {e}") from e
            finally:
                os.close(fd)
            out.append(ThenRead(value, values, version, changed))
        return out

    def _size(self, key: str) -> int | None:
        try:
            st = os.stat(self.path_of(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _exists(self, key: str) -> bool:
        return os.path.isfile(self.path_of(key))

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        top = self.path_of(prefix) if prefix else self.root
        base = prefix + "/" if prefix else ""
        for dirpath, _, filenames in os.walk(top):
            rel = os.path.relpath(dirpath, top)
            head = base if rel == "." else base + rel.replace(os.sep, "/") + "/"
            for name in filenames:
                if not is_temporary_name(name):
                    yield head + name

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        values: list[str] = []
        dirs: list[str] = []
        try:
            with os.scandir(self.path_of(prefix) if prefix else self.root) as it:
                for entry in it:
                    if entry.is_dir():
                        dirs.append(entry.name)
                    elif not is_temporary_name(entry.name):
                        values.append(entry.name)
        except MISSING_ERRORS:
            pass
        return sorted(values), sorted(dirs)

    # -- writes ----------------------------------------------------------------
    def _set(self, key: str, value: Value) -> None:
        if not SUPPORTED:
            self._set_unlocked(key, value)
            return
        try:
            KeyLock(self.path_of(key)).acquire().publish(lambda fd: _write_all(fd, value))
        except OSError as e:
            raise StoreError(f"cannot write key {key!r} in {self.root!r}: {e}") from e

    def _set_unlocked(self, key: str, value: Value) -> None:
        """Where keys cannot be locked: a uniquely named temporary file renamed onto the key."""
        path = self.path_of(key)
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, temporary_name(name))
        try:
            for attempt in range(1000):
                try:
                    fd = os.open(tmp, _CREATE_FLAGS, 0o666)
                    break
                except FileNotFoundError:
                    if attempt == 999:
                        raise
                    # A concurrent delete may prune the directory (or a parent, while it is
                    # made) between these calls.
                    try:
                        os.makedirs(directory, exist_ok=True)
                    except FileNotFoundError:
                        pass
            try:
                try:
                    _write_all(fd, value)
                finally:
                    os.close(fd)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
                raise
        except OSError as e:
            raise StoreError(f"cannot write key {key!r} in {self.root!r}: {e}") from e

    def _delete(self, key: str) -> None:
        self._delete_many([key])

    def _delete_many(self, keys: list[str], *, locked: bool = True) -> None:
        parents: set[str] = set()
        for key in keys:
            path = self.path_of(key)
            if not os.path.lexists(path):
                continue
            try:
                if SUPPORTED and locked:
                    KeyLock(path).acquire().remove()
                else:
                    os.unlink(path)
            except MISSING_ERRORS:
                continue
            except OSError as e:
                raise StoreError(f"cannot delete key {key!r} in {self.root!r}: {e}") from e
            parents.add(os.path.dirname(path))
        self._prune(parents)

    def _update(self, keys: list[str]) -> Update:
        return _LockedUpdate(self, keys) if SUPPORTED else Update(self, keys)

    def delete_prefix(self, prefix: str) -> None:
        """Remove a node and everything below it without taking each key's lock: the whole
        node goes (a writer of its chunks meanwhile conflicts with the deletion itself),
        where a delete of one key waits for its lock like any write of it."""
        self._check_writable(prefix)
        self._delete_many(list(self.list_prefix(prefix)), locked=False)

    def _prune(self, directories: set[str]) -> None:
        """Remove directories left empty by a delete, deepest first, up to (not including) root."""
        for directory in sorted(directories, key=len, reverse=True):
            while directory.startswith(self._prefix):
                try:
                    os.rmdir(directory)
                except OSError:
                    break
                directory = os.path.dirname(directory)

    # -- identity ----------------------------------------------------------------
    @property
    def url(self) -> str:
        return "file://" + self.root.replace(os.sep, "/")

    def identity(self) -> object:
        return ("LocalStore", self.url)

    def file_of(self, key: str) -> str:
        return self.path_of(normalize_key(key)) if key else self.root

    def __reduce__(self) -> tuple:
        return (LocalStore, (self.root, self.read_only))

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.root == self.root  # type: ignore[attr-defined]
            and other.read_only == self.read_only
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.root, self.read_only))
