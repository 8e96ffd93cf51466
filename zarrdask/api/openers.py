"""Opening nodes with zarr-python 3's modes and keywords: ``open``, ``open_array``,
``open_group`` (v2 or v3, detected).

Modes: ``"r"`` read an existing node; ``"r+"`` read/write an existing node; ``"a"``
read/write, creating the node when nothing is there; ``"w"`` create, replacing what is
there; ``"w-"`` create, failing if a node is there. Every keyword is validated before
anything is created or deleted, so a call that fails leaves the store as it was.
"""

from __future__ import annotations

from typing import Any, Union

from ..errors import ArrayNotFoundError, ContainsNodeError, GroupNotFoundError, InvalidModeError, NodeNotFoundError
from ..indexing import basic_selection
from ..keywords import Mode, check_keywords, refuse
from ..door import Resolved, resolve
from ..door.node_io import explain_missing
from ..metadata.nodes import GroupMetadata, NodeMetadata
from ..plan.fetch_plan import ReadPlan
from ..storage.base import Store, join_path
from ..storage.records import warn_interrupted
from ..nodes.array import Array, ArrayOptions
from ..nodes.units import array_options
from ..nodes.array_keywords import OPTION_NAMES, REFUSED, ArraySpec, split_array_keywords
from ..nodes.create import commit_array, plan_array
from ..nodes.group import Group, make_group, node_from_metadata

__all__ = ["array_at", "group_at", "open", "open_array", "open_group", "plan_read"]

_MODES = ("r", "r+", "a", "w", "w-")
_REPLACE_HINT = "use mode='w' to replace it, or mode='a' (or 'r+') to open it"
#: how open / open_group make a missing node (open: " (with shape=, an array)" too)
_CREATE_HINT = "mode='a' or 'w' creates a group there"
_GROUP_REFUSED = ("cache_attrs", "synchronizer", "chunk_store", "meta_array", "zarr_version")
#: what open() compares with an existing array instead of creating one
_EXPECTED = ("shape", "dtype", "chunks", "shards")


def _check_mode(function: str, mode: str) -> None:
    if mode not in _MODES:
        raise InvalidModeError(f"{function}(): mode must be one of {_MODES}, got {mode!r}")


def _where(path: str) -> str:
    return repr(path or "<root>")


def _not_an_array(function: str, store: Store, path: str, meta: GroupMetadata) -> ArrayNotFoundError:
    """A group where an array was asked for: the error lists the group's arrays."""
    group = Group(store, path, meta)
    arrays = group.array_keys()
    if arrays:
        shown = ", ".join(repr(a) for a in arrays[:10]) + (", ..." if len(arrays) > 10 else "")
        fix = (f"it holds the arrays {shown}: open one with {function}(store, "
               f"path={join_path(path, arrays[0])!r})")
    else:
        groups = group.group_keys()
        fix = ("it holds no arrays" + (f", only the groups {', '.join(repr(g) for g in groups[:10])}" if groups
                                        else "") + "; zarrdask.open_group opens it")
    return ArrayNotFoundError(f"{function}(): the node at {_where(path)} in {store!r} is a group, not an array; "
                              f"{fix}")


def without_create_hint(message: str) -> str:
    """``message`` without open's hint of its mode= keyword, for callers that have no such
    keyword to offer (the CLI, xarray's open_dataset)."""
    return message.split(f"; {_CREATE_HINT}")[0]


def _existing_array(function: str, store: Store, path: str, meta: NodeMetadata, spec: dict[str, Any],
                    options: dict[str, Any], caller: str | None = None) -> Array:
    """An existing array opened where the call could also create one: ``shape``/``dtype``/
    ``chunks``/``shards`` must match it; the other creation keywords are validated (a typo
    is an error) but, as in zarr-python, only used when the array is created."""
    array = node_from_metadata(store, path, meta, options=array_options(caller or function, options))
    assert isinstance(array, Array)
    array.check_expectations(spec.get("shape"), spec.get("dtype"), spec.get("chunks") if spec.get("chunks") != "auto"
                             else None, function=caller or function, replaceable=caller is None)
    shards = spec.get("shards")
    if shards is not None and tuple(shards) != array.shards:
        replace = "; mode='w' replaces it (its data is deleted)" if caller is None else ""
        raise ContainsNodeError(f"{caller or function}(): the array at {_where(path)} in {store!r} has shards "
                                f"{array.shards}, not the shards={tuple(shards)} given; to open it as stored, leave "
                                f"shards= out{replace}")
    if set(spec) - set(_EXPECTED) - {"attributes"}:
        full = {"shape": array.shape, "dtype": array.dtype, **{k: v for k, v in spec.items() if k != "chunks"}}
        plan_array(store, path, ArraySpec(**full), meta.zarr_format, options, function)
    warn_interrupted(store, path)
    return array


def array_at(function: str, found: Resolved, mode: str, zarr_format: int | None,
             spec: dict[str, Any], options: dict[str, Any], caller: str | None = None) -> Array:
    """``open_array``'s modes on what the door found (``found``, read unless ``mode``
    creates): create with ``shape``/``dtype`` in "a", "w", "w-"; an existing array must
    match ``spec``'s ``shape``/``dtype``/``chunks``/``shards``. ``caller``: the function the
    user called when it is not ``function`` (a reader: its message offers no mode='w')."""
    store, path, meta = found.store, found.path, found.metadata
    if mode in ("w", "w-"):  # validated in full before anything is deleted
        plan = plan_array(store, path, ArraySpec(**spec), zarr_format, options, function)
        return commit_array(plan, mode == "w", _REPLACE_HINT)
    if meta is None:
        if mode == "a" and "shape" in spec:
            plan = plan_array(store, path, ArraySpec(**spec), zarr_format, options, function)
            return commit_array(plan, False, _REPLACE_HINT)
        fix = (f"{function}(mode='a', shape=..., dtype=...) creates an array there" if mode != "a" or "shape" in spec
               else f"to create an array there, pass shape= and dtype= to {function}(mode='a')")
        raise ArrayNotFoundError(str(explain_missing(store, path, zarr_format, fix)))
    if meta.node_type != "array":
        raise _not_an_array(function, store, path, meta)
    return _existing_array(function, store, path, meta, spec, options, caller)


def open(store: Any, *, mode: Mode = "r", path: str | None = None,  # noqa: A001
         storage_options: dict[str, Any] | None = None, zarr_format: int | None = None,
         **kwargs: Any) -> Union[Array, Group]:
    """Open the array or group at ``path`` (v2 or v3, detected), as ``zarr.open`` does.

    ``mode`` (see the module docstring; default ``"r"``). With ``shape=`` (and the other
    keywords of :func:`zarrdask.create_array`, or of ``zarr.create``: ``chunk_shape``,
    ``compressor``, ``dimension_separator``, ``config``) the call opens or creates an
    array: ``"a"`` creates it when nothing is there, ``"w"`` replaces what is there. An
    existing array must match the given ``shape``/``dtype``/``chunks``/``shards``. Without
    ``shape=``, ``"a"``/``"w"``/``"w-"`` create a group (``attributes=``). Other keywords
    are :class:`ArrayOptions` (``missing_chunks="raise"``, ``threads=1``,
    ``cache_bytes="1 GiB"`` for the decoded-chunk cache, ...) and ``use_consolidated``
    (groups).
    """
    function = "zarrdask.open"
    _check_mode(function, mode)
    kwargs = dict(kwargs)
    use_consolidated = kwargs.pop("use_consolidated", None)
    spec, options = split_array_keywords(function, kwargs)
    if "shape" in spec and use_consolidated is not None:
        raise refuse(function, "use_consolidated", "it applies to groups, and shape= opens or creates an array")
    found = resolve(function, store, path=path, mode=mode, storage_options=storage_options, zarr_format=zarr_format,
                    consolidated=use_consolidated is not False, read=mode not in ("w", "w-"),
                    missing=ArrayNotFoundError if "shape" in spec else NodeNotFoundError)
    if "shape" in spec:
        return array_at(function, found, mode, zarr_format, spec, options)
    s, path, meta = found.store, found.path, found.metadata
    array_only = sorted(k for k in kwargs if k != "attributes" and k not in options)
    no_group = (f"{function}(mode={mode!r}) without shape= creates a group, which takes none of {array_only}: "
                "pass shape= (and dtype=) to create an array (nothing was changed)")
    if mode in ("w", "w-"):
        if array_only:
            raise InvalidModeError(no_group)
        return make_group(s, path, zarr_format, overwrite=mode == "w", attributes=spec.get("attributes"),
                          allow_reserved_names=False, exists_hint=_REPLACE_HINT,
                          options=_group_options(function, options))
    if meta is None:
        if mode != "a":
            raise explain_missing(s, path, zarr_format, f"{_CREATE_HINT} (with shape=, an array)")
        if array_only:
            raise InvalidModeError(f"nothing at {_where(path)}: {no_group}")
        return make_group(s, path, zarr_format, overwrite=False, attributes=spec.get("attributes"),
                          allow_reserved_names=False, exists_hint=_REPLACE_HINT,
                          options=_group_options(function, options))
    if meta.node_type == "array":
        if use_consolidated is not None:
            raise refuse(function, "use_consolidated", f"it applies to groups; the node at {_where(path)} is an array")
        return _existing_array(function, s, path, meta, spec, options)
    if array_only:
        raise _not_an_array(function, s, path, meta)
    group = node_from_metadata(s, path, meta, options=_group_options(function, options))
    _check_consolidated(group, use_consolidated)
    warn_interrupted(s, path)
    return group


def _group_options(function: str, options: dict[str, Any]) -> ArrayOptions | None:
    """The ArrayOptions a group hands to the arrays opened through it (None: defaults)."""
    return array_options(function, options) if options else None


def open_array(store: Any, *, mode: Mode = "r", path: str | None = None,
               storage_options: dict[str, Any] | None = None, zarr_format: int | None = None,
               **kwargs: Any) -> Array:
    """Open (or create) an array, as ``zarr.open_array`` does.

    ``mode`` "r"/"r+" open an existing array; "a" opens it or, given ``shape=`` and
    ``dtype=``, creates it; "w" creates it, replacing what is there; "w-" creates it,
    failing if a node is there. Keywords: those of :func:`zarrdask.create_array` (and
    ``zarr.create``'s ``chunk_shape``, ``compressor``, ``dimension_separator``,
    ``config``), which an existing array must match for ``shape``/``dtype``/``chunks``/
    ``shards``, and :class:`ArrayOptions` (``missing_chunks``, ``threads``, ``lock``,
    ``cache_bytes``: read through the process's decoded-chunk cache with this budget, an
    int or a string such as ``"512 MiB"``; 0 off, unset: the ``zarrdask.cache-bytes`` dask
    config value; :meth:`Array.cache_info`, :func:`zarrdask.cache_clear`, ...).
    """
    function = "zarrdask.open_array"
    _check_mode(function, mode)
    if "use_consolidated" in kwargs:
        raise refuse(function, "use_consolidated", "it applies to groups; use zarrdask.open_group")
    spec, options = split_array_keywords(function, kwargs)
    found = resolve(function, store, path=path, mode=mode, storage_options=storage_options, zarr_format=zarr_format,
                    read=mode not in ("w", "w-"), missing=ArrayNotFoundError)
    return array_at(function, found, mode, zarr_format, spec, options)


def open_group(store: Any, *, mode: Mode = "a", path: str | None = None,
               storage_options: dict[str, Any] | None = None, zarr_format: int | None = None,
               attributes: dict[str, Any] | None = None, use_consolidated: bool | None = None,
               **kwargs: Any) -> Group:
    """Open (or create) a group, as ``zarr.open_group`` does: ``mode`` defaults to "a"
    (created when nothing is there, with ``attributes``). Consolidated metadata is used when
    present unless ``use_consolidated=False``; ``True`` requires it. :class:`ArrayOptions`
    keywords (``cache_bytes="1 GiB"``, ``threads``, ...) apply to the arrays opened through
    the group (``g["a"]``, ``g.arrays()``)."""
    function = "zarrdask.open_group"
    _check_mode(function, mode)
    for name in kwargs:
        if name in _GROUP_REFUSED:
            raise refuse(function, name, REFUSED[name])
    check_keywords(function, kwargs, ("mode", "path", "storage_options", "zarr_format", "attributes",
                                      "use_consolidated", *OPTION_NAMES))
    options = _group_options(function, kwargs)
    if use_consolidated is not None and not isinstance(use_consolidated, bool):
        raise refuse(function, f"use_consolidated={use_consolidated!r}",
                     "zarrdask reads consolidated metadata from .zmetadata (v2) or zarr.json (v3) only; "
                     "pass True, False or None")
    found = resolve(function, store, path=path, mode=mode, storage_options=storage_options, zarr_format=zarr_format,
                    consolidated=use_consolidated is not False, read=mode not in ("w", "w-"),
                    missing=GroupNotFoundError)
    return group_at(function, found, mode, zarr_format, attributes, use_consolidated, options)


def group_at(function: str, found: Resolved, mode: str, zarr_format: int | None, attributes: dict[str, Any] | None,
             use_consolidated: bool | None, options: ArrayOptions | None) -> Group:
    """``open_group``'s modes on what the door found (``found``, read unless ``mode``
    creates): create with ``attributes`` in "a", "w", "w-"."""
    s, path, meta = found.store, found.path, found.metadata
    if mode in ("w", "w-"):
        return make_group(s, path, zarr_format, overwrite=mode == "w", attributes=attributes,
                          allow_reserved_names=False, exists_hint=_REPLACE_HINT, options=options)
    if meta is None:
        if mode == "a":
            return make_group(s, path, zarr_format, overwrite=False, attributes=attributes,
                              allow_reserved_names=False, exists_hint=_REPLACE_HINT, options=options)
        raise GroupNotFoundError(str(explain_missing(s, path, zarr_format, _CREATE_HINT)))
    if meta.node_type == "array":
        raise GroupNotFoundError(f"{function}(): the node at {_where(path)} in {s!r} is an array, not a group; "
                                 f"open it with zarrdask.open_array(store, path={path!r})"
                                 + (" (mode='w' replaces it with a group)" if mode != "r" else ""))
    group = node_from_metadata(s, path, meta, options=options)
    _check_consolidated(group, use_consolidated)
    warn_interrupted(s, path)
    return group


def _check_consolidated(group: Any, use_consolidated: bool | None) -> None:
    if use_consolidated and not group.consolidated:
        raise NodeNotFoundError(f"group {group.name!r} has no consolidated metadata; zarrdask.consolidate_metadata "
                                "writes it, or leave use_consolidated unset to read without it")


def plan_read(array: Array, selection: Any = Ellipsis) -> ReadPlan:
    """The plan of reading ``array[selection]``: which stored values, fetched whole or
    through their shard index, and which chunk goes where. Nothing is read."""
    sel, _ = basic_selection(selection, array.shape)
    return array.units.plan(sel)
