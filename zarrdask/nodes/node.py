"""What arrays and groups share: a place in a store, metadata, and persisted attributes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, cast

from ..errors import ReadOnlyError
from ..storage.base import Store
from ..metadata.nodes import NodeMetadata
from .attributes import Attributes
from ..door.node_io import change_node

__all__ = ["Node"]

_N = TypeVar("_N", bound="Node[Any]")
#: the metadata type of a kind of node (an array's or a group's, either Zarr format)
M = TypeVar("M", bound=NodeMetadata)


class Node(Generic[M]):
    """A node (array or group) at ``path`` in ``store``, described by its metadata."""

    _store: Store
    _path: str
    _metadata: M
    #: the in-memory consolidated copy of the group this node was opened through, and the
    #: node's name in it: kept current when this node's metadata changes
    _parent_copy: tuple[dict[str, Any], str] | None = None

    @property
    def store(self) -> Store:
        return self._store

    @property
    def path(self) -> str:
        return self._path

    @property
    def name(self) -> str:
        return "/" + self._path

    @property
    def basename(self) -> str:
        return self._path.rsplit("/", 1)[-1]

    @property
    def metadata(self) -> M:
        return self._metadata

    @property
    def zarr_format(self) -> int:
        return self._metadata.zarr_format

    @property
    def read_only(self) -> bool:
        return self._store.read_only

    @property
    def attrs(self) -> Attributes:
        """User attributes; every change is written at once."""
        return Attributes(lambda: self._metadata.attributes, self._set_attributes)

    def update_attributes(self: _N, new_attributes: Mapping[str, Any]) -> _N:
        """Merge ``new_attributes`` into the attributes (one write); returns this node, as
        zarr-python."""
        self.attrs.update(new_attributes)
        return self

    def attach_consolidated(self, copy: dict[str, Any], name: str) -> None:
        """Keep ``copy[name]`` current when this node's metadata changes: ``copy`` is the
        in-memory consolidated metadata of the group this node was opened through."""
        self._parent_copy = (copy, name)

    def _set_attributes(self, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._change_metadata(lambda m: cast(M, m.evolve(attributes=edit(dict(m.attributes)))))

    def _change_metadata(self, change: Callable[[M], M]) -> tuple[M, M]:
        """Apply ``change`` to the metadata as stored now (another process may have changed
        it since this node was opened: ``door.node_io.change_node``) and keep the result;
        the metadata as read and as stored."""
        if self.read_only:
            raise ReadOnlyError(f"{type(self).__name__.lower()} {self.name!r} is read-only: it was opened with "
                                f"mode='r'; open it with mode='r+' to change it")
        before, metadata = change_node(self._store, self._path, self._metadata, change)
        self._metadata = metadata
        if self._parent_copy is not None:
            copy, name = self._parent_copy
            copy[name] = metadata if metadata.node_type == "array" else metadata.evolve(consolidated=None)
        self._metadata_changed()
        return before, metadata

    def _metadata_changed(self) -> None:
        """Hook for subclasses that derive state from the metadata."""

