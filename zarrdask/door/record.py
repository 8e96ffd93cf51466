"""The record the front door makes of what a user passed as a store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..metadata.nodes import NodeMetadata
from ..storage.base import Store

__all__ = ["Resolved"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """A user's store argument (path, URL, mapping, store or opened node) and node path,
    resolved once.

    ``store``: the opened store, read-only where the mode or the node's format says so.
    ``path``: the node's path in it, normalised. ``metadata``: the node there, as v2 or v3
    metadata whatever format stored it (None: nothing there, or not read: see
    :func:`~zarrdask.door.resolve`). ``node``: the opened zarrdask node the user passed,
    kept as it is (its options); ``given_array``: the user passed an opened array;
    ``given``: what the user passed, as messages name it."""

    store: Store
    path: str
    metadata: NodeMetadata | None = None
    node: Any = None
    given_array: bool = False
    given: Any = field(default=None, compare=False)

    def describe(self) -> str:
        """The location as the user named it, for messages."""
        where = f"path {self.path!r} of " if self.path else ""
        given = self.store if self.given is None else self.given
        return f"{where}{str(given) if hasattr(given, '__fspath__') else given!r}"
