"""Where ``from_zarr`` reads and ``to_zarr`` writes, named as dask names it.

``url`` is a path, URL, Store (zarrdask's or zarr-python's), a zarrdask ``Array`` or
``Group``, or a zarr-python ``Array``/``Group``, recognised by its ``store`` and ``path``
(zarr-python is never imported). dask's ``component`` is the node's path inside the
store (zarrdask's ``path=``); under a group node it is relative to the group.
"""

from __future__ import annotations

from typing import Any

from ..api.openers import open as open_node
from ..nodes.group import Group
from .. import arguments
from ..door import Resolved, resolve
from ..errors import ArrayNotFoundError, InvalidModeError

__all__ = ["group_arrays", "locate", "node_path", "not_an_array"]

_MAX_LISTED = 20  # arrays named in the error for a group given where an array is expected


def node_path(function: str, **aliases: str | None) -> str | None:
    """The one node path given under dask's and zarrdask's names (``component``, ``path``,
    to_zarr's ``name``): refuses two different ones."""
    given = {k: v.strip("/") for k, v in ((k, arguments.text(function, k, v)) for k, v in aliases.items())
             if v is not None}
    values = set(given.values())
    if len(values) > 1:
        named = ", ".join(f"{k}={v!r}" for k, v in given.items())
        raise InvalidModeError(f"{function}() got two node paths ({named}): pass component= alone")
    return values.pop() if values else None


def locate(function: str, url: Any, path: str | None, storage_options: dict[str, Any] | None, *,
           mode: str = "r", read: bool = True, zarr_format: int | None = None) -> Resolved:
    """Where ``url`` and the node ``path`` point, resolved by the door (read unless
    ``read=False``): a node (zarrdask or zarr-python) stands for its store and path;
    ``path`` then goes below a group and is refused for an array (dask would ignore it),
    as are non-empty ``storage_options`` (the node's store is open)."""
    return resolve(function, url, path=path, mode=mode, storage_options=storage_options, zarr_format=zarr_format,
                   read=read, keyword="component", missing=ArrayNotFoundError)


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


def not_an_array(function: str, location: Resolved, cause: ArrayNotFoundError) -> ArrayNotFoundError:
    """The error for a group where an array is expected: ``cause``'s, naming the group's
    arrays (up to 20) and the ``component=`` that opens one."""
    arrays = group_arrays(location.store, location.path)
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
