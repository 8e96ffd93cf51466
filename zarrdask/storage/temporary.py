"""Leftover temporary files of atomic writes: found and removed through the store layer.

``LocalStore`` (and ``FsspecStore`` on a local filesystem) write each value to
``.<name>.<32 hex digits>.tmp`` next to its key and rename it onto the key. A process
killed between the two leaves the temporary file behind; listings hide such files, so
they are found here by walking the directory itself. Other stores write in one call and
leave nothing behind. Remove them only while no writer is running (a live write's
temporary file looks the same).
"""

from __future__ import annotations

import os
from typing import Any

from .base import Store
from .fsspec_store import FsspecStore
from .local import LocalStore, _is_temp

__all__ = ["temporary_files", "remove_temporary_files"]


def temporary_files(store: Store, prefix: str = "") -> list[str]:
    """The keys of leftover temporary files below ``prefix``, sorted."""
    prefix = prefix.strip("/")
    if isinstance(store, LocalStore):
        top = os.path.join(store.root, *prefix.split("/")) if prefix else store.root
        found = []
        for dirpath, _, filenames in os.walk(top):
            rel = os.path.relpath(dirpath, store.root).replace(os.sep, "/")
            head = "" if rel == "." else rel + "/"
            found.extend(head + name for name in filenames if _is_temp(name))
        return sorted(found)
    if isinstance(store, FsspecStore) and store._local:
        top = store._dir(prefix)
        try:
            paths = store.fs.find(top)
        except FileNotFoundError:
            return []
        n = len(store._base)
        return sorted(p[n:] for p in paths if _is_temp(p.rsplit("/", 1)[-1]))
    return []


def remove_temporary_files(store_or_path: Any) -> list[str]:
    """Delete leftover temporary files of interrupted atomic writes; returns their keys.

    ``store_or_path`` is a Store, a path or a URL (opened writable)."""
    from . import open_store

    store = open_store(store_or_path, mode="a")
    keys = temporary_files(store)
    store.delete_many(keys)
    return keys
