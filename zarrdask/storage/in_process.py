"""Stores over one container in this process's memory (fsspec's memory filesystem, a
zarr-python ``MemoryStore``): every zarrdask write into the container holds the
container's lock, so a read-modify-write can commit where each key still holds what it
read (``guard = "compare"``).

The lock belongs to the container, whichever store objects over it write; writers that
do not go through zarrdask are not excluded (as on local disk). The commit compares bytes,
not identity: the merged value is a function of the bytes read, so a key that changed and
changed back is merged as well as if it had been read at the commit. A lock is kept per
container for the life of the process (containers need not be weakly referenceable).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from .base import Store, Update, Value

__all__ = ["CompareUpdate", "container_lock"]

_LOCKS: dict[int, threading.RLock] = {}
_REGISTRY = threading.Lock()


def container_lock(container: object) -> threading.RLock:
    """The lock every zarrdask writer of ``container`` holds while it writes (reentrant: a
    commit holds it around the store's own writes)."""
    with _REGISTRY:
        return _LOCKS.setdefault(id(container), threading.RLock())


class CompareUpdate(Update):
    """Commits, holding the container's lock, the keys whose bytes are still those read."""

    def __init__(self, store: Store, keys: Sequence[str], lock: threading.RLock) -> None:
        super().__init__(store, keys)
        self.lock = lock

    def commit(self, values: Mapping[str, Value | None]) -> set[str]:
        with self.lock:
            now = dict(zip(values, self.store.get_many(list(values))))
            changed = {k for k in values if now[k] != self.values[k]}
            super().commit({k: v for k, v in values.items() if k not in changed})
        return changed
