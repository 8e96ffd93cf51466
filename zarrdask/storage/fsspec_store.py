"""FsspecStore: a Store over any fsspec filesystem (s3, gcs, http, memory, local, zip ...).

On async filesystems (s3fs, gcsfs, http) every read of a key or range and every write
of a key is one request on fsspec's event loop, at most ``concurrency`` of them in
flight per store, each tried again under the store's :class:`RetryPolicy` when it
fails transiently (timeouts, dropped connections, 5xx, throttling); a missing key is
never retried and reads as None, any other failure is a StoreError naming the key and
URL. Reads can be consumed as they complete (``iter_ranges``), so a reader decodes
the first values while later ones are still in flight. A suffix range is a negative
start: async filesystems send it as one ``Range: bytes=-N`` request, sync ones seek
from the size of the open file. Sync filesystems (local, memory, zip) get one
``cat_ranges`` / ``pipe`` call; on a local filesystem writes and deletes go through a
:class:`~.local.LocalStore` on the same directory (atomic, and holding each key's lock).

How a read-modify-write is guarded (``guard``, ``update``): on local disk by the key's
lock, as LocalStore does (``"lock"``); on fsspec's memory filesystem by comparing under the
lock every zarrdask writer of it holds (``"compare"``, ``in_process.py``); on S3 (s3fs) by
conditional requests (``"compare"``, :class:`_S3Update`); anything else (HTTP, zip, GCS:
gcsfs is not installed here to test its generation preconditions) has no guard.
Versioned reads (``get_ranges_versioned``) carry each S3 object's ETag and, on
``file://``, each file's identity; other filesystems tell no versions.

Stores pickle by their constructor arguments (URL, path, storage options,
read-only flag), never by filesystem contents.
"""

from __future__ import annotations

import contextlib
import os
import time
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping
from typing import Any, TypeVar, cast
from urllib.parse import quote, unquote

import fsspec
from fsspec.implementations.zip import ZipFileSystem
from fsspec.spec import AbstractFileSystem

from ..errors import StoreError
from .base import (Buffer, ByteRange, ByteRequest, Store, StreamedReads, SuffixRange, Then, ThenRead, Update, Value,
                   VersionedRanges)
from ..compat.fsspec import async_cat_file, async_pipe_file, canonical_path, memory_files, s3_call, single_try
from .in_process import CompareUpdate, container_lock
from .link import link_to
from .local import MISSING_ERRORS, LocalStore, is_temporary_name
from .requests import Requests
from .retry import (RetriesExhausted, RetryPolicy, is_changed, is_forbidden, is_range_not_satisfiable, is_transient,
                    missing_credentials)

__all__ = ["FsspecStore", "ZipStore", "fs_protocols"]

T = TypeVar("T")
DEFAULT_CONCURRENCY = 64


def _range_header(request: ByteRequest) -> dict[str, str] | None:
    """The keywords of a GET of ``request`` (an HTTP ``Range``); None for no bytes at all."""
    if isinstance(request, SuffixRange):
        return {"Range": f"bytes=-{request.length}"} if request.length else None
    if request.length is None:
        return {"Range": f"bytes={request.start}-"} if request.start else {}
    return {"Range": f"bytes={request.start}-{request.start + request.length - 1}"} if request.length else None


def fs_protocols(fs: AbstractFileSystem) -> tuple[str, ...]:
    """The protocol names a filesystem answers to."""
    return (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)


def _protocol(url: str) -> str:
    """The protocol of the outermost filesystem of a (possibly chained) URL."""
    head = url.split("::", 1)[0]
    return head.partition("://")[0].lower() if "://" in head else ""


def _s3_options(options: dict[str, Any], concurrency: int) -> dict[str, Any]:
    """s3fs's options with zarrdask's defaults under those the user gave: whole-object reads
    as one GET (``max_concurrency=1``: no HEAD first), botocore's connection pool sized to
    the store's request bound (its default is 10), and botocore's own retries off, so the
    store's RetryPolicy is the one that retries (layered, their tries would multiply)."""
    options = dict(options)
    options.setdefault("max_concurrency", 1)
    config = dict(options.get("config_kwargs") or {})
    config.setdefault("max_pool_connections", concurrency)
    config.setdefault("retries", {"total_max_attempts": 1})
    options["config_kwargs"] = config
    return options


class FsspecStore(StreamedReads, Store):
    """A store rooted at ``path`` below ``url_or_fs`` (a URL or an fsspec filesystem).

    ``storage_options`` are passed to the filesystem when a URL is given. HTTP(S)
    stores are always read-only. ``retry`` (default: ``RetryPolicy.configured()``, from
    dask's config) and ``concurrency`` (requests in flight at once, per store and process)
    apply to async filesystems. ``forbidden_is_absent``: a read the server refuses as
    forbidden (HTTP 403, S3 ``AccessDenied``) finds the key absent, as S3 answers for a key
    that does not exist where the reader may not list the bucket; every key it may not read
    is then absent (a chunk reads as the fill value), so it is off unless asked for.
    """

    def __init__(
        self,
        url_or_fs: str | os.PathLike[str] | AbstractFileSystem,
        *,
        path: str = "",
        storage_options: dict[str, Any] | None = None,
        read_only: bool = False,
        retry: RetryPolicy | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        forbidden_is_absent: bool = False,
    ) -> None:
        self.retry = retry if retry is not None else RetryPolicy.configured()
        self.forbidden_is_absent = forbidden_is_absent
        self.concurrency = concurrency
        self.storage_options = dict(storage_options or {})
        if isinstance(url_or_fs, AbstractFileSystem):
            if self.storage_options:
                raise ValueError("storage_options apply only when FsspecStore is given a URL")
            fs, root = url_or_fs, ""
            self._source: str | AbstractFileSystem = url_or_fs
        else:
            self._source = os.fspath(url_or_fs)
            if _protocol(self._source) in ("s3", "s3a"):
                self.storage_options = _s3_options(self.storage_options, concurrency)
            fs, root = fsspec.core.url_to_fs(self._source, **self.storage_options)
            if _protocol(self._source) in ("s3", "s3a"):
                single_try(fs)
        self.fs = fs
        self.path = path.strip("/")
        root = root.rstrip("/") if root != "/" else root
        if self.path:
            root = f"{root.rstrip('/')}/{self.path}" if root else self.path
        if root and isinstance(url_or_fs, AbstractFileSystem):  # (a URL's root is already the filesystem's)
            root = canonical_path(fs, root).rstrip("/") or "/"
        self._root = root
        self._base = root.rstrip("/") + "/" if root else ""
        protocols = fs_protocols(fs)
        self._local = "file" in protocols or "local" in protocols
        self._async = bool(getattr(fs, "async_impl", False)) and not self._local
        self._link = link_to(self.url) if self._async else None
        self._requests = Requests(concurrency, self.retry, self._link)
        http = bool({"http", "https"} & set(protocols))
        self.supports_writes = not http
        self._quoted = http  # (keys in URLs: percent-encoded, see _path)
        self.read_only = read_only or not self.supports_writes
        self._disk = LocalStore(root) if self._local else None
        self._s3 = s3_call(fs) if self._async else None
        files = memory_files(fs)
        self._lock = container_lock(files) if files is not None else None
        if "memory" in protocols:
            self.held_in = "process"
        self._writing = self._lock or contextlib.nullcontext()
        if self._disk is not None:
            self.guard = self._disk.guard
        elif self._s3 is not None or self._lock is not None:
            self.guard = "compare"

    @property
    def root(self) -> str:
        """The store's root path on its filesystem (no protocol)."""
        return self._root

    @property
    def key_prefix(self) -> str:
        """What a key is prefixed with to make its path on the filesystem."""
        return self._base

    @property
    def on_local_disk(self) -> bool:
        """Whether the filesystem is the local one (``file://``)."""
        return self._local

    def reach(self) -> int:
        return 0 if self._link is None else self._link.reach()

    def directory(self, prefix: str) -> str:
        """The filesystem path of the directory of keys below ``prefix``."""
        return self._path(prefix) if prefix else self._root

    def _path(self, key: str) -> str:
        """The filesystem path of ``key``. On HTTP(S) a URL, the key percent-encoded: a key
        may hold ``%``, ``?``, ``#`` or any character, which a URL's path spells encoded."""
        return self._base + (quote(key, safe="/") if self._quoted else key)

    def _key(self, name: str) -> str:
        """A key (or a part of one) from what a listing names it (see :meth:`_path`)."""
        return unquote(name) if self._quoted else name

    def _stream(self, requests: list[Callable[[], Awaitable[T]]]) -> Iterator[tuple[int, T | Exception]]:
        return self._requests.stream(self.fs.loop, requests)

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """A synchronous filesystem call (listing, deleting), under the retry policy."""
        failures = 0
        began = time.perf_counter()
        while True:
            try:
                return fn()
            except MISSING_ERRORS:
                raise
            except Exception as exc:
                failures += 1
                if not self._async or not is_transient(exc):
                    raise StoreError(f"cannot {what} in {self.url}: {exc}") from exc
                if failures >= self.retry.attempts:
                    exhausted = RetriesExhausted(exc, self.retry, time.perf_counter() - began)
                    raise StoreError(f"cannot {what} in {self.url}: {exhausted}") from exc
            time.sleep(self.retry.delay(failures))

    # -- reads -----------------------------------------------------------------
    def _iter_ranges(self, requests: list[tuple[str, ByteRequest]]) -> Iterator[tuple[int, bytes | None]]:
        if self._s3 is not None:  # (S3: the one read path, versioned reads' own)
            return ((i, value) for i, value, _ in self._s3_ranges(requests))
        return self._fs_ranges(requests)

    def _fs_ranges(self, requests: list[tuple[str, ByteRequest]]) -> Iterator[tuple[int, bytes | None]]:
        slots: list[int] = []
        paths: list[str] = []
        starts: list[int | None] = []
        ends: list[int | None] = []
        for i, (key, request) in enumerate(requests):
            if isinstance(request, ByteRange):
                start, end = request.start or None, request.end
            else:
                start, end = -request.length, None
            if request.length == 0:
                yield i, b"" if self._exists(key) else None
                continue
            slots.append(i)
            paths.append(self._path(key))
            starts.append(start)
            ends.append(end)
        if not paths:
            return
        if self._async:
            cat = async_cat_file(self.fs)
            calls = [lambda p=p, s=s, e=e: cat(p, start=s, end=e) for p, s, e in zip(paths, starts, ends)]
            results: Iterator[tuple[int, Any]] = self._stream(calls)
        else:
            try:
                results = enumerate(self.fs.cat_ranges(paths, starts, ends, on_error="return"))
            except Exception as e:
                raise StoreError(f"cannot read {len(paths)} byte ranges from {self.url}: {e}") from e
        for j, result in results:
            i = slots[j]
            if self._absent(result):
                yield i, None
            elif isinstance(result, BaseException):
                yield i, self._past_end(requests[i][0], paths[j], starts[j], result)
            else:
                yield i, result if type(result) is bytes else bytes(result)

    def _get_then(self, requests: list[tuple[str, ByteRequest | None]], then: Then) -> list[ThenRead]:
        """On ``file://``, the LocalStore's one descriptor per key; elsewhere two batched calls."""
        if self._disk is not None:
            return self._disk._get_then(requests, then)
        return super()._get_then(requests, then)

    def _get_ranges_versioned(self, requests: list[tuple[str, ByteRequest]]) -> VersionedRanges:
        """On ``file://``, the files the store's LocalStore writes, versioned as it does; on
        S3, one GET per range (a HEAD where none is asked for) whose response's ETag is the
        version; elsewhere no versions."""
        if self._disk is not None:
            return self._disk._get_ranges_versioned(requests)
        if self._s3 is None:
            return super()._get_ranges_versioned(requests)
        values: list[bytes | None] = [None] * len(requests)
        tags: list[Hashable | None] = [None] * len(requests)
        for i, value, tag in self._s3_ranges(requests):
            values[i], tags[i] = value, tag
        return VersionedRanges(values, tags)

    def _s3_ranges(self, requests: list[tuple[str, ByteRequest]]) -> Iterator[tuple[int, bytes | None, Hashable | None]]:
        """Each request's bytes (None: no such key) and the ETag of the object they came
        from, as they arrive: one GET per range, a HEAD where none is asked for."""
        assert self._s3 is not None
        call, split = self._s3, self.fs.split_path
        paths = [self._path(key) for key, _ in requests]
        tags: list[Hashable | None] = [None] * len(requests)

        async def read(i: int) -> bytes:
            bucket, key, _ = split(paths[i])
            header = _range_header(requests[i][1])
            if header is None:
                tags[i] = (await call("head_object", Bucket=bucket, Key=key))["ETag"]
                return b""
            response = await call("get_object", Bucket=bucket, Key=key, **header)
            try:
                body: bytes = await response["Body"].read()
            finally:
                response["Body"].close()
            tags[i] = response["ETag"]
            return body

        for i, result in self._stream([lambda i=i: read(i) for i in range(len(requests))]):
            if self._absent(result):
                yield i, None, None
            elif isinstance(result, BaseException):
                request = requests[i][1]
                start = request.start if isinstance(request, ByteRange) else -request.length
                yield i, self._past_end(requests[i][0], paths[i], start, result), None  # (no version: read again)
            else:
                yield i, result, tags[i]

    def _absent(self, result: object) -> bool:
        """Whether a read's outcome says its key is absent (see ``forbidden_is_absent``)."""
        return isinstance(result, MISSING_ERRORS) or (
            self.forbidden_is_absent and isinstance(result, BaseException) and is_forbidden(result))

    def _past_end(self, key: str, path: str, start: int | None, error: BaseException) -> bytes | None:
        """Recover from a failed ranged read that only started past the end.

        Object stores answer such a request (or any range of an empty object) with
        HTTP 416; the contract is to return the (empty) bytes that exist.
        """
        if is_range_not_satisfiable(error):
            try:
                size = self.fs.size(path)
            except MISSING_ERRORS:
                return None
            except Exception:
                size = None
            if size is not None and (size == 0 or (start is not None and start >= size)):
                return b""
        raise StoreError(f"cannot read key {key!r} ({self.fs.unstrip_protocol(path)}): {error}"
                         f"{self._read_hint(error)}") from error

    def _read_hint(self, error: BaseException) -> str:
        """What may fix a remote read refused for want of credentials or permission."""
        if not self._async:
            return ""
        if missing_credentials(error):
            return ("; for a public bucket pass storage_options={'anon': True}, else give credentials (the AWS_PROFILE "
                    "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables, or storage_options "
                    "{'key': ..., 'secret': ...})")
        if not is_forbidden(error) or self.forbidden_is_absent:
            return ""
        source = self._source if isinstance(self._source, str) else self.url
        return ("; the credentials in use may not read it (see storage_options), or the key does not exist and "
                "the reader may not list the bucket (S3 then answers 403, not 404): if so, pass "
                f"zarrdask.storage.FsspecStore({source!r}, forbidden_is_absent=True) (with your storage_options) "
                "instead of the URL, and every key it may not read is read as absent (a chunk as the fill value)")

    def _exists(self, key: str) -> bool:
        return self._call(f"check key {key!r}", lambda: self.fs.isfile(self._path(key)))

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        return iter([key for key, _ in self._found(prefix, detail=False)])

    def _list_sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        return iter([(key, int(info["size"])) for key, info in self._found(prefix, detail=True)])

    def _found(self, prefix: str, detail: bool) -> list[tuple[str, Any]]:
        """The keys below ``prefix`` (one ``find``), each with its file system's info when
        ``detail`` (else None); a local file system's temporary files left out."""
        top = self.directory(prefix)
        try:
            found = self._call(f"list prefix {prefix!r}", lambda: self.fs.find(top, detail=detail))
        except FileNotFoundError:
            return []
        head = self._path(prefix) + "/" if prefix else self._base
        n = len(self._base)
        items = found.items() if detail else ((p, None) for p in found)
        return [(self._key(p[n:]), info) for p, info in items
                if p.startswith(head) and not (self._local and is_temporary_name(p.rsplit("/", 1)[-1]))]

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        top = self.directory(prefix)
        try:
            self.fs.invalidate_cache(top)
            entries = self._call(f"list {prefix!r}", lambda: self.fs.ls(top, detail=True))
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        values: set[str] = set()
        dirs: set[str] = set()
        top = top.rstrip("/")
        for entry in entries:
            full = entry["name"].rstrip("/")
            if full == top:  # ``ls`` of a file lists the file itself
                continue
            name = self._key(full.rsplit("/", 1)[-1])
            if entry["type"] == "directory":
                dirs.add(name)
            elif not (self._local and is_temporary_name(name)):
                values.add(name)
        return sorted(values), sorted(dirs)

    # -- writes ----------------------------------------------------------------
    def _set(self, key: str, value: Buffer) -> None:
        self._set_many({key: value})

    def _set_many(self, items: dict[str, Buffer]) -> None:
        keys = list(items)
        data = [v if type(v) is bytes else bytes(v) for v in items.values()]
        if self._async:  # one PUT per key, concurrent; each retried on its own
            pipe = async_pipe_file(self.fs)
            calls = [lambda k=k, v=v: pipe(self._path(k), v) for k, v in zip(keys, data)]
            for i, result in self._stream(calls):
                if isinstance(result, Exception):
                    url = self.fs.unstrip_protocol(self._path(keys[i]))
                    raise StoreError(f"cannot write key {keys[i]!r} ({url}): {result}") from result
            return
        if self._disk is not None:
            self._disk.set_many(dict(zip(keys, data)))
            return
        try:
            with self._writing:
                self.fs.pipe({self._path(k): v for k, v in zip(keys, data)})
        except Exception as e:
            shown = ", ".join(repr(k) for k in keys[:5])
            raise StoreError(f"cannot write key(s) {shown} to {self.url}: {e}") from e

    def _delete(self, key: str) -> None:
        self._delete_many([key])

    def _delete_many(self, keys: list[str]) -> None:
        if self._disk is not None:
            self._disk.delete_many(keys)
            return
        paths = [self._path(k) for k in keys]
        shown = ", ".join(repr(k) for k in keys[:5])
        with self._writing:
            try:
                self._call(f"delete key(s) {shown}", lambda: self.fs.rm(paths))
            except FileNotFoundError:  # some filesystems stop at the first missing path
                for path in paths:
                    try:
                        self._call(f"delete {path!r}", lambda path=path: self.fs.rm_file(path))
                    except FileNotFoundError:
                        pass

    def _update(self, keys: list[str]) -> Update:
        if self._disk is not None:
            return self._disk.update(keys)
        if self._s3 is not None:
            return _S3Update(self, keys)
        if self._lock is not None:
            return CompareUpdate(self, keys, self._lock)
        return Update(self, keys)

    # -- identity ----------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.fs.unstrip_protocol(self._root)

    def identity(self) -> object:
        return ("fsspec", self.url, repr(sorted(self.storage_options.items())))

    def file_of(self, key: str) -> str | None:
        return None if self._disk is None else self._disk.file_of(key)

    def __reduce__(self) -> tuple:
        kwargs = {"path": self.path, "storage_options": self.storage_options, "read_only": self.read_only,
                  "retry": self.retry, "concurrency": self.concurrency, "forbidden_is_absent": self.forbidden_is_absent}
        return (_rebuild, (type(self), (self._source,), kwargs))

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.fs == self.fs  # type: ignore[attr-defined]
            and other._root == self._root  # type: ignore[attr-defined]
            and other.read_only == self.read_only
            and other.forbidden_is_absent == self.forbidden_is_absent  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.url, self.read_only))


def _rebuild(cls: type, args: tuple, kwargs: dict[str, Any]) -> Store:
    return cls(*args, **kwargs)


class _S3Update(Update):
    """A read-modify-write on S3 made conditional on what was read (``guard = "compare"``).

    ``begin`` GETs each key (concurrently, retried like every request of the store) and keeps
    the ETag of that very response; ``commit`` PUTs each value with ``If-Match: <ETag>``, or
    ``If-None-Match: *`` where the key was absent, and deletes with a conditional
    DeleteObject (``If-Match``: AWS general-purpose buckets since 2025-09, moto). A key S3
    refuses (412 PreconditionFailed, 409 ConditionalRequestConflict, NoSuchKey: deleted
    since) is returned as changed; any other failure is a StoreError naming the key. A key
    absent when read and deleted now needs no request: the update changes nothing there,
    as if it had run at its read. Values go in one PUT (S3 takes up to 5 GB): s3fs's
    multipart upload would not carry ``If-Match``. An S3-compatible server that ignores the
    conditions (some do, on DELETE especially) makes these plain writes."""

    store: FsspecStore

    def begin(self) -> None:
        got = self.store._get_ranges_versioned([(k, ByteRange(0, None)) for k in self.keys])
        self.values = dict(zip(self.keys, got.values))
        self.tags: dict[str, str | None] = {k: cast("str | None", tag) for k, tag in zip(self.keys, got.versions)}

    def commit(self, values: Mapping[str, Value | None]) -> set[str]:
        store, call = self.store, self.store._s3
        assert call is not None

        async def conditional(path: str, value: bytes | None, tag: str | None) -> None:
            bucket, key, _ = store.fs.split_path(path)
            if value is not None:
                condition = {"IfNoneMatch": "*"} if tag is None else {"IfMatch": tag}
                await call("put_object", Bucket=bucket, Key=key, Body=value, **condition)
            elif tag is not None:
                await call("delete_object", Bucket=bucket, Key=key, IfMatch=tag)

        keys = list(values)
        paths = [store.key_prefix + k for k in keys]
        data = [None if v is None else b"".join(v) if isinstance(v, list) else bytes(v) for v in values.values()]
        calls = [lambda p=p, v=v, t=self.tags[k]: conditional(p, v, t) for p, v, k in zip(paths, data, keys)]
        changed = set()
        try:
            for i, result in store._stream(calls):
                if isinstance(result, Exception):
                    if not is_changed(result):
                        raise StoreError(f"cannot write key {keys[i]!r} ({store.fs.unstrip_protocol(paths[i])}): "
                                         f"{result}") from result
                    changed.add(keys[i])
        finally:
            for path in paths:
                store.fs.invalidate_cache(path)
        return changed


class ZipStore(FsspecStore):
    """A zip archive (local or remote URL) through fsspec's zip filesystem.

    ``mode="r"`` reads (read-only, picklable). ``mode="w"`` creates a new archive:
    it is written once, from one process, and is only valid after ``close()`` (or
    leaving a ``with`` block; garbage collection also finalises it). A zip being
    written cannot be read, updated in place, deleted from or pickled; writing a
    key twice stores a duplicate entry (readers see the last one).
    """

    supports_deletes = False

    def __init__(
        self,
        archive: str | os.PathLike[str],
        *,
        path: str = "",
        mode: str = "r",
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        if mode not in ("r", "w"):
            raise ValueError(f"zip archives are opened with mode 'r' or 'w', not {mode!r}")
        archive = os.fspath(archive)
        if "://" not in archive:
            archive = os.path.abspath(archive)
        self.archive = archive
        self.mode = mode
        options = dict(storage_options or {})
        try:
            if mode == "w":
                handle = fsspec.open(archive, "wb", **options).open()
                fs = ZipFileSystem(fo=handle, mode="w")
                self._finalizer = weakref.finalize(self, _close_zip, fs, handle)
            else:
                fs = ZipFileSystem(fo=archive, mode="r", target_options=options)
        except Exception as e:
            raise StoreError(f"cannot open zip archive {archive!r} (mode {mode!r}): {e}") from e
        super().__init__(fs, path=path, read_only=mode == "r")
        self.storage_options = options

    def close(self) -> None:
        """Finalise an archive being written (writes the zip directory); idempotent."""
        if self.mode == "w":
            self._finalizer()

    def __enter__(self) -> ZipStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fresh(self) -> None:
        # fsspec caches the zip's listing on first use; a zip being written grows.
        if self.mode == "w":
            self.fs.dir_cache = None

    def _exists(self, key: str) -> bool:
        self._fresh()
        return super()._exists(key)

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        self._fresh()
        return super()._list_prefix(prefix)

    def _list_sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        self._fresh()
        return super()._list_sizes(prefix)

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        self._fresh()
        return super()._list_dir(prefix)

    @property
    def url(self) -> str:
        return f"zip://{self._root}::{self.archive}"

    def __reduce__(self) -> tuple:
        if self.mode == "w":
            raise StoreError(
                f"zip archive {self.archive!r} is being written and cannot be pickled; "
                "write it from one process, close() it, then reopen it for reading"
            )
        kwargs = {"path": self.path, "mode": "r", "storage_options": self.storage_options}
        return (_rebuild, (ZipStore, (self.archive,), kwargs))

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.archive == self.archive  # type: ignore[attr-defined]
            and other._root == self._root  # type: ignore[attr-defined]
            and other.mode == self.mode  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.url, self.mode))


def _close_zip(fs: ZipFileSystem, handle: Any) -> None:
    fs.close()
    handle.close()
