"""Where ``from_zarr`` reads and ``to_zarr`` writes, named as dask names it.

``url`` is a path, URL, Store (zarrdask's or zarr-python's), a zarrdask ``Array`` or
``Group``, or a zarr-python ``Array``/``Group``, recognised by its ``store`` and ``path``
(zarr-python is never imported). dask's ``component`` is the node's path inside the
store (zarrdask's ``path=``); under a group node it is relative to the group.
"""

from __future__ import annotations

from typing import Any

from ..core.api import open as open_node
from ..core.array import Array
from ..core.group import Group
from ..core.node import Node
from ..errors import ArrayNotFoundError, InvalidModeError
from ..storage.zarr_python import is_zarr_python_store

__all__ = ["Location", "group_arrays", "is_array_node", "locate", "node_path", "not_an_array"]

_MAX_LISTED = 20  # arrays named in the error for a group given where an array is expected


class Location:
    """A store-like (path, URL, Store) and the node path in it; ``array`` when ``url``
    already was an opened zarrdask Array at that path."""

    __slots__ = ("array", "path", "store")

    def __init__(self, store: Any, path: str | None, array: Array | None = None) -> None:
        self.store = store
        self.path = path
        self.array = array

    def describe(self) -> str:
        """The location as the user named it, for messages."""
        where = f"path {self.path!r} of " if self.path else ""
        store = self.store
        if hasattr(store, "__fspath__"):
            store = str(store)
        return f"{where}{store!r}"


def node_path(function: str, **aliases: str | None) -> str | None:
    """The one node path given under dask's and zarrdask's names (``component``, ``path``,
    to_zarr's ``name``): refuses two different ones."""
    given = {k: v.strip("/") for k, v in aliases.items() if v is not None}
    values = set(given.values())
    if len(values) > 1:
        named = ", ".join(f"{k}={v!r}" for k, v in given.items())
        raise InvalidModeError(f"{function}() got two node paths ({named}): pass component= alone")
    return values.pop() if values else None


def locate(function: str, url: Any, path: str | None, storage_options: dict[str, Any] | None) -> Location:
    """Where ``url`` and the node ``path`` point. A node (zarrdask or zarr-python) stands for
    its store and path; ``path`` then goes below a group and is refused for an array (dask
    would ignore it), as are non-empty ``storage_options`` (the node's store is open)."""
    if not _is_node(url):
        return Location(url, path)
    kind = type(url).__name__
    if storage_options:
        raise InvalidModeError(
            f"{function}(): storage_options= do not apply to an already opened {kind}; "
            "pass the path or URL instead of the opened node, with storage_options=")
    node_at = (getattr(url, "path", "") or "").strip("/")
    if path is not None:
        if _is_array(url):
            raise InvalidModeError(
                f"{function}(): component={path!r} does not apply to an already opened {kind} "
                f"(its path is {node_at!r}); pass its group, store or URL with component=")
        node_at = f"{node_at}/{path}".strip("/")
        return Location(url.store, node_at or None)
    return Location(url.store, node_at or None, url if isinstance(url, Array) else None)


def group_arrays(store: Any, path: str | None, storage_options: dict[str, Any] | None = None) -> list[str] | None:
    """The paths (relative to ``path``) of the arrays in the group at ``path``, or ``None``
    when no group is there."""
    try:
        node = open_node(store, mode="r", path=path, storage_options=storage_options)
    except Exception:  # noqa: BLE001 - only asked to enrich a message; the first error stands
        return None
    if not isinstance(node, Group):
        return None
    found: list[str] = []

    def visit(group: Group, prefix: str) -> None:
        for name, member in group.members():
            if len(found) > _MAX_LISTED:
                return
            if isinstance(member, Group):
                visit(member, f"{prefix}{name}/")
            else:
                found.append(f"{prefix}{name}")

    visit(node, "")
    return found


def not_an_array(function: str, location: Location, cause: ArrayNotFoundError,
                 storage_options: dict[str, Any] | None = None) -> ArrayNotFoundError:
    """The error for a group where an array is expected: ``cause``'s, naming the group's
    arrays (up to 20) and the ``component=`` that opens one."""
    arrays = group_arrays(location.store, location.path, storage_options)
    if arrays is None:
        return cause
    base = f"{location.path}/" if location.path else ""
    if not arrays:
        listed = "it holds no arrays"
    else:
        shown = ", ".join(repr(base + a) for a in arrays[:_MAX_LISTED])
        more = " ..." if len(arrays) > _MAX_LISTED else ""
        listed = f"its arrays: {shown}{more}; pass component={base + arrays[0]!r} for the first"
    return ArrayNotFoundError(f"{function}(): {location.describe()} is a group, not an array; {listed}")


def _is_node(obj: Any) -> bool:
    """A zarrdask node, or a zarr-python Array/Group (a zarr-python store and a path)."""
    if isinstance(obj, Node):
        return True
    return hasattr(obj, "path") and is_zarr_python_store(getattr(obj, "store", None))


def is_array_node(obj: Any) -> bool:
    """An opened array: a zarrdask ``Array`` or a zarr-python one (``to_zarr`` writes into it)."""
    return _is_node(obj) and _is_array(obj)


def _is_array(obj: Any) -> bool:
    return isinstance(obj, Array) or (not isinstance(obj, Node) and hasattr(obj, "shape") and hasattr(obj, "dtype"))
