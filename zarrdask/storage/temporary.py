"""Leftover temporary files of atomic writes and of staged writes: found and removed
through the store layer.

``LocalStore`` (and ``FsspecStore`` on a local filesystem) write each value to
``.<name>.<32 hex digits>.tmp`` next to its key and rename it onto the key. A process
killed between the two leaves the temporary file behind; listings hide such files, so
they are found here by walking the directory itself. Other stores write in one call and
leave nothing behind, except S3: a value of 100 MB or more is a multipart upload, and
one interrupted stays stored (invisible) until aborted. Remove temporary files only while
no writer is running (a live write's temporary file looks the same), or only those not
written to for ``older_than`` seconds.

A Dask write that stages the pieces of cut blocks (``to_zarr(..., staging=...)``) keeps
them below ``<array>/.zarrdask-staging/`` and removes them as it goes; a job killed
midway leaves them there, in any store. They are found by listing the store.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .base import Store
from .fsspec_store import FsspecStore, fs_protocols
from .local import LocalStore, is_temporary_name

__all__ = ["STAGING_DIR", "atomic_files", "is_staged", "temporary_files", "remove_temporary_files"]

STAGING_DIR = ".zarrdask-staging"  # below an array's path: the staged pieces of a Dask write in progress


def temporary_files(store: Store, prefix: str = "") -> list[str]:
    """The keys of leftover temporary files below ``prefix`` (atomic writes' and staged
    pieces), sorted."""
    prefix = prefix.strip("/")
    return sorted({*atomic_files(store, prefix), *(k for k in store.list_prefix(prefix) if is_staged(k))})


def is_staged(key: str) -> bool:
    """Whether ``key`` lies inside a ``.zarrdask-staging`` directory (a staged piece)."""
    return STAGING_DIR in key.split("/")


def atomic_files(store: Store, prefix: str) -> list[str]:
    """The leftover temporary files of atomic writes below ``prefix`` (local stores only)."""
    if isinstance(store, LocalStore):
        top = os.path.join(store.root, *prefix.split("/")) if prefix else store.root
        found = []
        for dirpath, _, filenames in os.walk(top):
            rel = os.path.relpath(dirpath, store.root).replace(os.sep, "/")
            head = "" if rel == "." else rel + "/"
            found.extend(head + name for name in filenames if is_temporary_name(name))
        return sorted(found)
    if isinstance(store, FsspecStore) and store.on_local_disk:
        top = store.directory(prefix)
        try:
            paths = store.fs.find(top)
        except FileNotFoundError:
            return []
        n = len(store.key_prefix)
        return sorted(p[n:] for p in paths if is_temporary_name(p.rsplit("/", 1)[-1]))
    return []


def remove_temporary_files(store_or_path: Any, *, older_than: float = 0.0) -> list[str]:
    """Delete leftover temporary files of interrupted atomic writes; returns their keys
    (sorted), then the keys of the incomplete S3 multipart uploads it aborted.

    ``store_or_path`` is a Store, a path or a URL (opened writable). ``older_than``: only
    files last written at least that many seconds ago (sparing writes in progress)."""
    from . import open_store

    store = open_store(store_or_path, mode="a")
    keys = temporary_files(store)
    if older_than:
        keys = [k for k in keys if _age(store, k) >= older_than]
    store.delete_many(keys)
    return keys + _abort_s3_uploads(store)


def _age(store: Store, key: str) -> float:
    """Seconds since the temporary file ``key`` was last written (-1 when unknown: kept)."""
    try:
        if isinstance(store, LocalStore):
            return time.time() - os.stat(store.path_of(key)).st_mtime
        if isinstance(store, FsspecStore):
            return time.time() - store.fs.modified(store.key_prefix + key).timestamp()
    except (FileNotFoundError, NotImplementedError):  # renamed onto its key meanwhile: a write completing
        pass
    return -1.0


def _abort_s3_uploads(store: Store) -> list[str]:
    """Abort the incomplete multipart uploads below an S3 store's root; their keys."""
    if not (isinstance(store, FsspecStore) and "s3" in fs_protocols(store.fs)):
        return []
    bucket, _, root = store.root.strip("/").partition("/")
    base = f"{root}/" if root else ""
    aborted = []
    for upload in store.fs.list_multipart_uploads(bucket):
        if upload["Key"].startswith(base):
            store.fs.call_s3("abort_multipart_upload", Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
            aborted.append(upload["Key"][len(base):])
    return sorted(aborted)
