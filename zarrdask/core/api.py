"""Opening nodes: ``open``, ``open_array``, ``open_group`` (v2 or v3, detected)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

from ..errors import ArrayNotFoundError, GroupNotFoundError, InvalidModeError, NodeNotFoundError
from ..indexing import basic_selection
from ..plan.fetch_plan import ReadPlan
from ..storage import open_store
from ..storage.base import node_path
from .array import Array, ArrayOptions
from .create import create_group
from .group import Group, node_from_metadata
from .node_io import read_node

__all__ = ["open", "open_array", "open_group", "plan_read"]

_MODES = ("r", "r+", "a", "w", "w-")


def open(store: Any, *, mode: str = "r", path: str | None = None, storage_options: dict[str, Any] | None = None,
         zarr_format: int | None = None, **options: Any) -> Union[Array, Group]:  # noqa: A001
    """Open the array or group at ``path`` (v2 or v3, detected).

    ``mode``: ``"r"`` read-only, ``"r+"`` read/write an existing node, ``"a"`` read/write
    (a group is created when nothing exists), ``"w"`` create a group, replacing what is
    there, ``"w-"`` create a group, failing if something exists. Keyword ``options`` are
    :class:`ArrayOptions` for arrays (``missing_chunks="raise"``, ``threads=1``, ...).
    """
    return _open(store, mode, path, storage_options, zarr_format, True, options)


def _open(store: Any, mode: str, path: str | None, storage_options: dict[str, Any] | None,
          zarr_format: int | None, consolidated: bool, options: dict[str, Any]) -> Union[Array, Group]:
    """``open``; ``consolidated=False`` leaves a group's consolidated metadata unread."""
    if mode not in _MODES:
        raise InvalidModeError(f"mode must be one of {_MODES}, got {mode!r}")
    path = node_path(path)
    s = open_store(store, mode=mode, storage_options=storage_options)
    if mode in ("w", "w-"):
        return create_group(s, path=path, zarr_format=zarr_format or 3, overwrite=mode == "w")
    try:
        meta = read_node(s, path, zarr_format, consolidated)
    except NodeNotFoundError:
        if mode == "a":
            return create_group(s, path=path, zarr_format=zarr_format or 3)
        raise
    return node_from_metadata(s, path, meta, options=ArrayOptions(**options) if options else None)


def open_array(store: Any, *, mode: str = "r", path: str | None = None,
               storage_options: dict[str, Any] | None = None, zarr_format: int | None = None,
               shape: Sequence[int] | None = None, dtype: Any = None, chunks: Sequence[int] | None = None,
               **options: Any) -> Array:
    """Open an existing array; ``shape``/``dtype``/``chunks`` are checked when given."""
    node = open(store, mode="r" if mode == "r" else "r+", path=path, storage_options=storage_options,
                zarr_format=zarr_format, **options)
    if not isinstance(node, Array):
        raise ArrayNotFoundError(f"the node at {path or '<root>'!r} is a group, not an array")
    node.check_expectations(shape, dtype, chunks)
    return node


def open_group(store: Any, *, mode: str = "r", path: str | None = None,
               storage_options: dict[str, Any] | None = None, zarr_format: int | None = None,
               use_consolidated: bool | None = None) -> Group:
    """Open (or with ``mode`` "a"/"w"/"w-" create) a group. Consolidated metadata is used when
    present unless ``use_consolidated=False``; ``True`` requires it."""
    node = _open(store, mode, path, storage_options, zarr_format, use_consolidated is not False, {})
    if not isinstance(node, Group):
        raise GroupNotFoundError(f"the node at {path or '<root>'!r} is an array, not a group")
    if use_consolidated and not node.consolidated:
        raise NodeNotFoundError(f"group {node.name!r} has no consolidated metadata")
    return node


def plan_read(array: Array, selection: Any = Ellipsis) -> ReadPlan:
    """The plan of reading ``array[selection]``: which stored values, fetched whole or
    through their shard index, and which chunk goes where. Nothing is read."""
    sel, _ = basic_selection(selection, array.shape)
    return array._source.plan(sel)
