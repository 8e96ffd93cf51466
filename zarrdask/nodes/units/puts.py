"""Where a write's encoded units go, as each one is ready.

On a local store the thread that encoded a unit puts it at once, so the file writes of
one unit overlap the encoding of the next instead of running one after another at the
end of the call. A remote store gets them together in one ``set_many`` at the end, whose
requests run concurrently. Units that encode to nothing (fill value, empty shard) are
deleted at the end either way. The puts of a guarded read-modify-write go to its
``update``: each committed at once where the update holds its keys apart (a local store's
key locks), else held and committed together (``held``).
"""

from __future__ import annotations

import threading

from ...storage.base import Store, Update, Value

__all__ = ["UnitPuts"]


class UnitPuts:
    """The puts and deletes of one write call (thread-safe)."""

    def __init__(self, store: Store, update: Update | None = None) -> None:
        self.store = store
        self.update = update
        self.hold = update is not None and not update.commits_each
        self._pending: dict[str, Value | None] = {}
        self._deletes: list[str] = []
        self._lock = threading.Lock()

    def put(self, key: str, value: Value | None) -> None:
        """Store ``value`` at ``key`` (now on a local store), or delete the key when None."""
        if self.update is not None and not self.hold:
            self.update.commit({key: value})  # (nothing changed it: the update holds it)
            return
        if value is not None and self.store.is_local and not self.hold:
            self.store.set(key, value)
            return
        with self._lock:
            if value is None and not self.hold:
                self._deletes.append(key)
            else:
                self._pending[key] = value

    @property
    def held(self) -> dict[str, Value | None]:
        """What a held write stores at each key (None: delete)."""
        return self._pending

    def finish(self) -> None:
        """The puts gathered for a remote store, then the deletes."""
        self.store.set_many({k: v for k, v in self._pending.items() if v is not None})
        self.store.delete_many(self._deletes)
