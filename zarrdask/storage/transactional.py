"""Transactional stores: writes land in a session the caller commits (an Icechunk
session's store), so a copy sent to another process must be a fork of that session, and
what the copy writes must come back and be merged into it.

Recognised by shape, never imported: a writable zarr-python store whose ``session`` has
``fork()`` and ``merge()``; a read-only one whose session names its snapshot is pinned to
it (:func:`fixed_snapshot`). :class:`~.zarr_python.ZarrPythonStore` pickles such a store
as a fork (:func:`fork_store`); a task that wrote through the fork returns
:func:`changes`, results are combined by :func:`merge_changes` and laid into the caller's
session by :func:`merge_into`, after which ``session.commit()`` holds everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..compat.icechunk import fork_session

__all__ = ["changes", "fixed_snapshot", "fork_store", "holds_chunks", "in_session", "is_transactional", "merge_changes", "merge_into"]


def _session(inner: Any) -> Any | None:
    """The writable session behind the zarr-python store ``inner``, if it has one."""
    if getattr(inner, "read_only", True):
        return None
    session = getattr(inner, "session", None)
    if callable(getattr(session, "fork", None)) and callable(getattr(session, "merge", None)):
        return session
    return None


def fixed_snapshot(inner: Any) -> tuple[str, str] | None:
    """What names the contents of the zarr-python store ``inner`` when they cannot change:
    the snapshot of a read-only session (an Icechunk session is pinned to the snapshot it
    opened); else None."""
    session = getattr(inner, "session", None) if getattr(inner, "read_only", False) else None
    snapshot = getattr(session, "snapshot_id", None) if getattr(session, "read_only", False) else None
    return ("icechunk snapshot", snapshot) if isinstance(snapshot, str) and snapshot else None


def is_transactional(inner: Any) -> bool:
    """Whether the zarr-python store ``inner`` writes into a session (forked to travel)."""
    return _session(inner) is not None


def fork_store(inner: Any) -> Any:
    """A zarr-python store writing into a fork of ``inner``'s session (it pickles): the
    fork starts from the session as it is now, uncommitted changes included."""
    return fork_session(_session(inner)).store


def _zarr_python(store: Any) -> Any | None:
    """The ``ZarrPythonStore`` under zarrdask's wrappers (``.inner``) of ``store``, if any."""
    while store is not None and not hasattr(store, "forked"):
        store = getattr(store, "inner", None)
    return store


def _caller_session(store: Any) -> Any | None:
    """The writable session behind ``store`` (a ``ZarrPythonStore``, a wrapper of it, or
    the zarr-python store itself), if it has one."""
    base = _zarr_python(store)
    return _session(store if base is None else base.inner)


def in_session(store: Any) -> bool:
    """Whether ``store`` (zarrdask's or zarr-python's) writes into a session (so it
    travels as a fork)."""
    return _caller_session(store) is not None


def changes(store: Any) -> Any | None:
    """What was written through ``store`` when it is (or wraps) a fork made by zarrdask: its
    session, to be merged back; None for every other store, whose writes are in place."""
    base = _zarr_python(store)
    return _session(base.inner) if base is not None and base.forked else None


def merge_changes(results: Iterable[Any]) -> Any | None:
    """The :func:`changes` among ``results`` merged into one (None when there are none)."""
    present = [r for r in results if r is not None]
    if not present:
        return None
    first, *rest = present
    if rest:
        first.merge(*rest)
    return first


def holds_chunks(store: Any, path: str) -> bool:
    """Whether the session behind ``store`` holds uncommitted chunk changes of the array at
    ``path``: a fork carries them, and merging forks lays them back over the chunks the
    workers rewrote, so such a session must be committed before a forked write."""
    session = _caller_session(store)
    return session is not None and bool(session.status().updated_chunks.get("/" + path.strip("/")))


def merge_into(store: Any, merged: Any) -> None:
    """Lay ``merged`` (from :func:`merge_changes`) into the session of ``store`` (the
    caller's ``ZarrPythonStore``, or a wrapper of it)."""
    session = _caller_session(store)
    if session is None:
        from ..errors import StoreError

        raise StoreError(f"{store.url} has no writable session to merge the workers' changes into")
    session.merge(merged)
