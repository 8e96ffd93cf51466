"""The front door: whatever a user passes as a store becomes one :class:`Resolved` record.

Every way in (``open``/``open_array``/``open_group``/``create_*``, ``from_zarr``/
``to_zarr``, the xarray engine and writer, the tools) calls :func:`resolve` once and
works on its record: the store opened, the node path, and the node's metadata read in one
batched fetch, an older format (Zarr v1, the v3.0 draft, N5) already read as the v2 or
v3 metadata it equals and, where zarrdask only reads that format, behind a read-only
store. An opened node (zarrdask's, or zarr-python's: a zarr-python store and a path,
zarr-python is never imported) stands for its store and path.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .. import arguments
from ..errors import InvalidModeError, NodeNotFoundError
from ..storage import open_store
from ..storage.base import Store, join_path, node_path
from ..storage.zarr_python import is_zarr_python_store
from .node_io import explain_missing, read_nodes
from .record import Resolved

__all__ = ["opened_node", "resolve"]


def opened_node(obj: Any) -> tuple[Any, str, bool] | None:
    """An opened node given where a store goes, as its store, its path and whether it is an
    array: a zarrdask node (a zarrdask Store, a path, metadata) or a zarr-python one (a
    zarr-python store and a path); None for anything else."""
    store = getattr(obj, "store", None)
    if not hasattr(obj, "path") or store is None:
        return None
    at = (obj.path or "").strip("/")
    if isinstance(store, Store) and hasattr(obj, "metadata"):
        return store, at, getattr(obj.metadata, "node_type", None) == "array"
    if is_zarr_python_store(store):
        return store, at, hasattr(obj, "shape") and hasattr(obj, "dtype")
    return None


def resolve(function: str, given: Any, *, path: str | None = None, mode: str = "r",
            storage_options: dict[str, Any] | None = None, zarr_format: int | None = None,
            consolidated: bool = True, read: bool = True, keyword: str = "path",
            missing: type[NodeNotFoundError] = NodeNotFoundError) -> Resolved:
    """``given`` (and the node ``path`` in it, below a group given as a node) resolved; a
    :class:`Resolved` record passes through (read-only with ``mode="r"``).

    ``mode``: zarr-python's (``"r"`` opens the store read-only). ``read``: fetch the node's
    metadata (False for calls that create the node and read what they replace
    themselves). ``zarr_format``: only a node of that format is found; a node of the other
    one is a ``missing`` error (never created over). ``consolidated=False``: a group's
    consolidated metadata is left out. ``keyword``: the caller's name for the node path
    (``component`` in dask's functions), for messages. ``function`` names the caller."""
    path = arguments.text(function, keyword, path)
    storage_options = arguments.options(function, "storage_options", storage_options)
    if isinstance(given, Resolved) and (path is None or node_path(path) == given.path):  # resolved already
        if mode == "r" and not given.store.read_only:
            return replace(given, store=open_store(given.store, mode="r"))
        return given
    user, node = given, opened_node(given)
    opened, given_array = None, False
    if node is not None:
        inner, at, given_array = node
        kind = type(given).__name__
        if storage_options:
            raise InvalidModeError(
                f"{function}(): storage_options= do not apply to an already opened {kind}; pass the path or URL "
                "instead of the opened node, with storage_options=")
        if path and given_array:
            raise InvalidModeError(
                f"{function}(): {keyword}={path!r} does not apply to an opened array ({kind}; its path is {at!r}); "
                f"pass its group, store or URL with {keyword}=")
        if not path and isinstance(inner, Store):
            opened = given
        given = user = inner
        path = join_path(at, path or "")
    store = open_store(given, mode=mode, storage_options=storage_options)
    at = node_path(path)
    if opened is not None:  # (its metadata is at hand: nothing is read again)
        return Resolved(store, at, opened.metadata, opened, given_array, user)
    if not read:
        return Resolved(store, at, None, None, given_array, user)
    meta = read_nodes(store, [at], zarr_format, consolidated)[0]
    if meta is None:
        if zarr_format is not None and read_nodes(store, [at], None, False)[0] is not None:
            raise missing(str(explain_missing(store, at, zarr_format)))
    elif not meta.writable and not store.read_only:
        store = open_store(store, mode="r")  # an old format zarrdask reads but never writes
    return Resolved(store, at, meta, opened, given_array, user)
