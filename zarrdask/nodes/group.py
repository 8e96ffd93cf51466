"""The Group: a node holding arrays and groups, with attributes and consolidated metadata."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Union, overload

import numpy as np

from ..errors import (
    warn,
    ContainsNodeError,
    NodeMismatchError,
    InvalidKeyError,
    InvalidValueError,
    MemberNotFoundError,
    MetadataError,
    NodeNotFoundError,
    Problem,
    ReadOnlyError,
    StaleConsolidatedMetadataWarning,
)
from ..keywords import check_keywords, missing_name, refuse
from ..metadata.consolidated import v2_documents_for, zmetadata_document
from ..metadata.nodes import ArrayMetadata, GroupMetadata, NodeMetadata
from ..metadata.v2 import GroupMetadataV2
from ..metadata.v3 import GroupMetadataV3, parse_json_document
from ..door import resolve
from ..storage.base import Store, join_path, normalize_key
from ..storage.records import RECORDS_DIR, warn_interrupted
from .array import Array, ArrayOptions
from ..runtime.cache import forget_below
from .create import GROUP_V2_COMPRESSOR, OVERWRITE_HINT, create_array, create_legacy, write_group
from .like import array_like, like_keywords
from .node import Node
from ..door.node_io import (change_documents, change_node, consolidated_entries, dumps, forget_node,
                             parse_node_documents, read_node, read_nodes)

if TYPE_CHECKING:
    from ..display.describe import NodeInfo

__all__ = ["Group", "consolidate_metadata", "create_group", "make_group", "node_from_metadata", "walk"]

Member = Union[Array, "Group"]


@overload
def node_from_metadata(store: Store, path: str, metadata: ArrayMetadata,
                       consolidated: Mapping[str, NodeMetadata] | None = None,
                       options: ArrayOptions | None = None) -> Array: ...
@overload
def node_from_metadata(store: Store, path: str, metadata: GroupMetadata,
                       consolidated: Mapping[str, NodeMetadata] | None = None,
                       options: ArrayOptions | None = None) -> Group: ...
@overload
def node_from_metadata(store: Store, path: str, metadata: NodeMetadata,
                       consolidated: Mapping[str, NodeMetadata] | None = None,
                       options: ArrayOptions | None = None) -> Member: ...


def node_from_metadata(store: Store, path: str, metadata: NodeMetadata,
                       consolidated: Mapping[str, NodeMetadata] | None = None,
                       options: ArrayOptions | None = None) -> Member:
    """An Array or Group object for already-read metadata."""
    if metadata.node_type == "array":
        return Array(store, path, metadata, options)
    return Group(store, path, metadata, consolidated, options)


def _parse_consolidated(metadata: NodeMetadata) -> dict[str, NodeMetadata] | None:
    """A group's consolidated metadata as ``{relative path: node metadata}``; an entry
    whose path is not a key below the group (``..``, absolute, ...) is a MetadataError."""
    raw = getattr(metadata, "consolidated", None)
    if raw is None:
        return None
    for key in raw:
        try:
            if not normalize_key(key):
                raise InvalidKeyError("an empty path (the group itself)")
        except InvalidKeyError as exc:
            document = "zarr.json" if metadata.zarr_format == 3 else ".zmetadata"
            raise MetadataError([Problem(("consolidated_metadata" if metadata.zarr_format == 3 else "metadata", key),
                                         f"not a path below the group: {exc}")], key=document) from None
    if metadata.zarr_format == 3:
        return dict(raw)  # parsed with the group's own metadata
    paths = {key.rsplit("/", 1)[0] if "/" in key else "" for key in raw}
    out = {}
    for path in sorted(p for p in paths if p):
        node = parse_node_documents(v2_documents_for(raw, path), path, 2)
        if node is not None:
            out[path] = node
    return out


class Group(Node[GroupMetadata]):
    """A Zarr group. ``g["a/b"]`` opens a member; ``members()`` lists direct children."""

    def __init__(self, store: Store, path: str, metadata: GroupMetadata,
                 consolidated: Mapping[str, NodeMetadata] | None = None, options: ArrayOptions | None = None) -> None:
        self._store = store
        self._options = options  # for the arrays opened through it (cache_bytes, threads, ...)
        self._path = path.strip("/")
        self._metadata = metadata
        self._consolidated = dict(consolidated) if consolidated is not None else _parse_consolidated(metadata)
        self._opened_through: Group | None = None  # (the group whose consolidated metadata listed this one)

    @property
    def consolidated(self) -> bool:
        """True when members are served from consolidated metadata."""
        return self._consolidated is not None

    def __repr__(self) -> str:
        return f"<zarrdask.Group {self.store.url} {self.name!r} v{self.zarr_format}>"

    @property
    def info(self) -> NodeInfo:
        """The group as a table: members, attributes, consolidated metadata."""
        from ..display.describe import group_info

        return group_info(self)

    def _repr_html_(self) -> str:
        from ..display.html import group_html

        return group_html(self)

    # -- members -------------------------------------------------------------------------
    def _child_consolidated(self, name: str, meta: NodeMetadata) -> dict[str, NodeMetadata] | None:
        if self._consolidated is None or meta.node_type == "array":
            return None
        prefix = name + "/"
        return {k[len(prefix):]: v for k, v in self._consolidated.items() if k.startswith(prefix)}

    def __getitem__(self, name: str) -> Member:
        if not isinstance(name, str):
            raise InvalidKeyError(f"group members are named by strings, got {type(name).__name__}: {name!r}")
        name = normalize_key(name.strip("/"))
        path = join_path(self._path, name)
        if self._consolidated is not None and name in self._consolidated:
            meta = self._consolidated[name]
        else:
            try:
                meta = read_node(self._store, path, self.zarr_format)
            except NodeNotFoundError:
                raise MemberNotFoundError(f"no member {name!r} in group {self.name!r}") from None
            if self._consolidated is not None:
                key = join_path(self._path, "zarr.json" if self.zarr_format == 3 else ".zmetadata")
                warn(f"{key}: the consolidated metadata lacks member {name!r}, which exists in the store (stale "
                     f"copy; zarrdask.consolidate_metadata refreshes it)", StaleConsolidatedMetadataWarning)
        return self._member(name, meta)

    def _member(self, name: str, meta: NodeMetadata) -> Member:
        node = node_from_metadata(self._store, join_path(self._path, name), meta, self._child_consolidated(name, meta),
                                  self._options)
        if self._consolidated is not None and name in self._consolidated:
            node.attach_consolidated(self._consolidated, name)
            if isinstance(node, Group):
                node._opened_through = self
        warn_interrupted(self._store, node.path)  # (where that is free: a stat on a local disk)
        return node

    def get(self, path: str, default: Any = None) -> Any:
        """The member at ``path``, or ``default`` when there is none."""
        try:
            return self[path]
        except MemberNotFoundError:
            return default

    def __contains__(self, member: object) -> bool:
        return isinstance(member, str) and self.get(member) is not None

    def __delitem__(self, name: str) -> None:
        """Delete the member ``name`` and everything below it (and its consolidated entries)."""
        node = self[name]
        if self.read_only:
            raise ReadOnlyError(f"group {self.name!r} is read-only; open it with mode='r+' to delete {name!r}")
        self._store.delete_prefix(node.path)
        forget_below(self._store, node.path)
        forget_node(self._store, node.path, self.zarr_format)  # (every ancestor's consolidated metadata, as stored)
        self._members_changed(deleted=node.path)
        rel = node.path[len(self._path):].strip("/")
        own = getattr(self._metadata, "consolidated", None)
        if own is not None:  # (v3: by node path; v2: by document key)
            kept = {k: v for k, v in own.items()
                    if not _below(k if self.zarr_format == 3 else k.rpartition("/")[0], rel)}
            self._metadata = self._metadata.evolve(consolidated=kept)

    def _member_metadata(self, max_depth: int | None) -> dict[str, NodeMetadata]:
        """Members down to ``max_depth`` levels below the direct ones (None: all), by
        relative path, level by level and by name within a level."""
        if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 0):
            raise InvalidValueError(f"max_depth must be None or an int >= 0, got {max_depth!r}")
        if self._consolidated is not None:
            found = {k: v for k, v in self._consolidated.items() if max_depth is None or k.count("/") <= max_depth}
        else:
            found = walk(self._store, self._path, self._metadata, max_depth)
        return dict(sorted(found.items(), key=lambda kv: (kv[0].count("/"), kv[0])))

    def members(self, max_depth: int | None = 0, *,
                use_consolidated_for_children: bool = True) -> tuple[tuple[str, Member], ...]:
        """Members as ``(relative path, node)`` pairs: direct children (``max_depth=0``), or
        down to ``max_depth`` levels further (None: all). A group opened with consolidated
        metadata lists from it, including its children
        (``use_consolidated_for_children=False`` is refused)."""
        if not use_consolidated_for_children:
            raise refuse("Group.members", "use_consolidated_for_children",
                         "open the group with zarrdask.open_group(..., use_consolidated=False) to list the store")
        return tuple((name, self._member(name, meta)) for name, meta in self._member_metadata(max_depth).items())

    def nmembers(self, max_depth: int | None = 0) -> int:
        """How many members ``members(max_depth)`` lists."""
        return len(self._member_metadata(max_depth))

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return self.nmembers()

    def keys(self) -> tuple[str, ...]:
        """The direct members' names, sorted."""
        return tuple(self._member_metadata(0))

    def arrays(self) -> tuple[tuple[str, Array], ...]:
        return tuple((n, m) for n, m in self.members() if isinstance(m, Array))

    def groups(self) -> tuple[tuple[str, Group], ...]:
        return tuple((n, m) for n, m in self.members() if isinstance(m, Group))

    def array_keys(self) -> tuple[str, ...]:
        return tuple(n for n, m in self._member_metadata(0).items() if m.node_type == "array")

    def group_keys(self) -> tuple[str, ...]:
        return tuple(n for n, m in self._member_metadata(0).items() if m.node_type == "group")

    def array_values(self) -> tuple[Array, ...]:
        return tuple(m for _, m in self.arrays())

    def group_values(self) -> tuple[Group, ...]:
        return tuple(m for _, m in self.groups())

    def _members_changed(self, deleted: str | None = None) -> None:
        """A member was made (``deleted`` None) or the node at path ``deleted`` deleted through
        this group. The consolidated copies of this group and of the groups it was opened
        through lose a deleted node's entries; after a creation they list the store from now
        on (their copies lack the new node; the stored ones have it: ``door.node_io``)."""
        group: Group | None = self
        while group is not None:
            if group._consolidated is not None and deleted is not None:
                rel = deleted[len(group._path):].strip("/")
                group._consolidated = {k: v for k, v in group._consolidated.items() if not _below(k, rel)}
            else:
                group._consolidated = None
            group = group._opened_through

    # -- creation -----------------------------------------------------------------------
    def _member_keywords(self, method: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], Literal[2, 3]]:
        """A member array's keywords with this group's options added (those not given) and
        its Zarr format (this group's: another one is refused)."""
        given = kwargs.pop("zarr_format", None)
        zarr_format: Literal[2, 3] = 2 if self.zarr_format == 2 else 3
        if given not in (None, zarr_format):
            raise InvalidValueError(f"Group.{method}(zarr_format={given!r}): a v{self.zarr_format} group "
                                    f"holds v{self.zarr_format} arrays; leave zarr_format out")
        self._members_changed()
        inherited = {} if self._options is None else {  # the group's options, unless given here
            f.name: getattr(self._options, f.name) for f in dataclasses.fields(ArrayOptions)
            if getattr(self._options, f.name) != f.default and f.name not in kwargs}
        return {**kwargs, **inherited}, zarr_format

    def _create_array(self, method: str, name: str, kwargs: dict[str, Any]) -> Array:
        check_keywords(f"Group.{method}", kwargs, _array_keywords())
        kwargs, zarr_format = self._member_keywords(method, kwargs)
        if zarr_format == 2 and kwargs.get("compressors", "auto") == "auto":
            kwargs["compressors"] = [GROUP_V2_COMPRESSOR]  # (as zarr-python's groups choose)
        return create_array(self._store, path=join_path(self._path, name), zarr_format=zarr_format, **kwargs)

    def _create_legacy(self, method: str, name: str, kwargs: dict[str, Any], data: Any = None) -> Array:
        """A member array from ``zarr.create``'s keywords (float64 unless ``dtype`` is given),
        ``data`` written into it."""
        kwargs, zarr_format = self._member_keywords(method, kwargs)
        overwrite = kwargs.pop("overwrite", False)
        return create_legacy(f"Group.{method}", self._store, join_path(self._path, name), kwargs,
                             overwrite=overwrite, zarr_format=zarr_format, data=data)

    def create_array(self, name: str, **kwargs: Any) -> Array:
        """Create an array below this group; the keywords are :func:`zarrdask.create_array`'s
        (``shape``, ``dtype``, ``data``, ``chunks``, ``shards``, ...), checked here."""
        return self._create_array("create_array", name, kwargs)

    def __setitem__(self, name: str, value: Any) -> None:
        """``g[name] = data``: an array of ``data`` with default settings, replacing what is at
        ``name`` (as zarr-python); :meth:`create_array` takes settings."""
        self._create_array("__setitem__", name, {"data": value, "overwrite": True})

    def create(self, name: str, **kwargs: Any) -> Array:
        """:meth:`create_array` under its other zarr-python name."""
        return self._create_array("create", name, kwargs)

    def require_array(self, name: str, *, shape: Any, dtype: Any = None, exact: bool = False,
                      **kwargs: Any) -> Array:
        """The member array ``name`` when its shape is ``shape`` and its dtype casts safely to
        ``dtype`` (equals it with ``exact=True``; unchecked when None), else an error;
        created with the other keywords (as :meth:`create_array`) when absent."""
        node = self.get(name)
        if node is None:
            return self._create_array("require_array", name, {"shape": shape, "dtype": dtype, **kwargs})
        check_keywords("Group.require_array", kwargs, _array_keywords())
        if not isinstance(node, Array):
            raise NodeMismatchError(f"Group.require_array({name!r}): {node.name!r} is a group, not an array")
        wanted = (shape,) if isinstance(shape, int) else tuple(shape)
        if wanted != node.shape:
            raise NodeMismatchError(f"Group.require_array({name!r}, shape={wanted}): the array has shape "
                                     f"{node.shape}; pass shape={node.shape} or use another name")
        if dtype is not None:
            want = np.dtype(dtype)
            if (node.dtype != want) if exact else not np.can_cast(node.dtype, want):
                raise NodeMismatchError(f"Group.require_array({name!r}, dtype={want}): the array's dtype is "
                                         f"{node.dtype}; pass dtype={str(node.dtype)!r}")
        return node

    def create_group(self, name: str, *, overwrite: bool = False,
                     attributes: Mapping[str, Any] | None = None) -> Group:
        self._members_changed()
        group = create_group(self._store, path=join_path(self._path, name), attributes=attributes,
                             zarr_format=self.zarr_format, overwrite=overwrite)
        group._options = self._options  # (its arrays take this group's options too)
        return group

    # zarr-python's (and h5py's) other ways to make a member array
    def zeros(self, name: str, *, shape: Any, **kwargs: Any) -> Array:
        """A member array of zeros, as zarr-python's ``Group.zeros`` (``zarr.create``'s keywords)."""
        return self._create_legacy("zeros", name, {"shape": shape, "fill_value": 0, **kwargs})

    def ones(self, name: str, *, shape: Any, **kwargs: Any) -> Array:
        """A member array of ones, as ``Group.ones``."""
        return self._create_legacy("ones", name, {"shape": shape, "fill_value": 1, **kwargs})

    def full(self, name: str, *, shape: Any, fill_value: Any, **kwargs: Any) -> Array:
        """A member array of ``fill_value``, as ``Group.full``."""
        return self._create_legacy("full", name, {"shape": shape, "fill_value": fill_value, **kwargs})

    def empty(self, name: str, *, shape: Any, **kwargs: Any) -> Array:
        """A member array with nothing written, as ``Group.empty``."""
        return self._create_legacy("empty", name, {"shape": shape, **kwargs})

    def _like(self, method: str, name: str, data: Any, fill: Any, kwargs: dict[str, Any]) -> Array:
        like = like_keywords(data, {"zarr_format": self.zarr_format, **kwargs}, keep_fill=fill is None)
        if fill is not None:
            like.setdefault("fill_value", fill)
        return self._create_legacy(method, name, like)

    def zeros_like(self, name: str, data: Any, **kwargs: Any) -> Array:
        """A member array of zeros like ``data``, as ``Group.zeros_like``."""
        return self._like("zeros_like", name, data, 0, kwargs)

    def ones_like(self, name: str, data: Any, **kwargs: Any) -> Array:
        """A member array of ones like ``data``, as ``Group.ones_like``."""
        return self._like("ones_like", name, data, 1, kwargs)

    def full_like(self, name: str, data: Any, **kwargs: Any) -> Array:
        """A member array like ``data`` of ``fill_value`` (a Zarr array's own by default), as ``Group.full_like``."""
        return self._like("full_like", name, data, None, kwargs)

    def empty_like(self, name: str, data: Any, **kwargs: Any) -> Array:
        """A member array like ``data`` with nothing written, as ``Group.empty_like``."""
        return self._like("empty_like", name, data, None, kwargs)

    def create_dataset(self, name: str, *, shape: Any = None, data: Any = None, **kwargs: Any) -> Array:
        """A member array, as zarr-python's (and h5py's) ``create_dataset``: ``shape`` and
        ``dtype`` from ``data`` when not given, which is then written."""
        if data is not None:
            data = array_like(data)
            shape = data.shape if shape is None else shape
            if kwargs.get("dtype") is None:
                kwargs["dtype"] = data.dtype
        return self._create_legacy("create_dataset", name, {"shape": shape, **kwargs}, data)

    def require_dataset(self, name: str, *, shape: Any, **kwargs: Any) -> Array:
        """:meth:`require_array` under zarr-python's (and h5py's) other name."""
        return self.require_array(name, shape=shape, **kwargs)

    def array(self, name: str, **kwargs: Any) -> Array:
        """:meth:`create_array` under zarr-python 2's name (``data=`` gives the values)."""
        return self._create_array("array", name, kwargs)

    def __getattr__(self, name: str) -> Any:
        raise missing_name("zarrdask.Group", name, _GROUP_INSTEAD,
                           f"{type(self).__name__!r} object has no attribute {name!r}")

    def require_group(self, name: str, overwrite: bool = False) -> Group:
        """The member group ``name``, created if absent (replaced by a new one with ``overwrite``)."""
        if overwrite:
            return self.create_group(name, overwrite=True)
        node = self.get(name)
        if node is None:
            return self.create_group(name)
        if not isinstance(node, Group):
            raise NodeMismatchError(f"Group.require_group({name!r}): {join_path(self._path, name)!r} is an array, not a group")
        return node

    def require_groups(self, *names: str) -> tuple[Group, ...]:
        return tuple(self.require_group(name) for name in names)

    # -- display ----------------------------------------------------------------------------
    def tree(self, expand: bool | None = None, level: int | None = None, *, max_nodes: int = 500,
             plain: bool = False) -> str:
        """The hierarchy below this group as indented text, ``level`` levels deep (None: all),
        at most ``max_nodes`` members. The text is always plain (``plain`` changes nothing)."""
        if expand is not None:
            raise refuse("Group.tree", "expand", "the tree always shows every member; leave expand out")
        found = list(self.members(max_depth=level))
        truncated = len(found) > max_nodes
        children: dict[str, list[tuple[str, Member]]] = {}
        for key, node in sorted(found[:max_nodes]):
            children.setdefault(key.rsplit("/", 1)[0] if "/" in key else "", []).append((key, node))
        lines = [self.name]

        def visit(parent: str, prefix: str) -> None:
            members = children.get(parent, [])
            for i, (key, node) in enumerate(members):
                last = i == len(members) - 1
                name = key.rsplit("/", 1)[-1]
                shown = f"{name} {node.shape} {node.dtype}" if isinstance(node, Array) else name
                lines.append(f"{prefix}{'└── ' if last else '├── '}{shown}")
                visit(key, prefix + ("    " if last else "│   "))

        visit("", "")
        text = "\n".join(lines)
        if truncated:
            return f"Truncated at max_nodes={max_nodes}, some nodes and their children may be missing\n{text}"
        return text


def _below(key: str, rel: str) -> bool:
    """``key`` is ``rel`` or a path below it."""
    return key == rel or key.startswith(rel + "/")


#: zarr-python Group members zarrdask has no namesake for, and what to use instead
_GROUP_INSTEAD = {
    "move": "zarrdask does not rename nodes in place; zarrdask.copy('g.zarr', 'g.zarr/new', path='old') copies "
            "one, then del group['old'] removes the old",
    "create_hierarchy": "create each node: group.create_group(name) and group.create_array(name, ...)",
    "from_store": "use zarrdask.open_group(store, mode='w') or zarrdask.create_group(store)",
    "open": "use zarrdask.open_group(store, path=...)",
    "store_path": "use group.store and group.path",
    "synchronizer": "zarrdask has no synchronizers; pass lock=zarrdask.FileLock(path) to the arrays written "
                    "from several processes",
    "info_complete": "use group.info, and array.info_complete() for an array's stored bytes",
    "update_attributes_async": "zarrdask has no async API; use group.update_attributes(...)",
}


def _array_keywords() -> frozenset[str]:
    """The keywords :func:`zarrdask.create_array` takes besides the store and the place
    (its named parameters, and :class:`ArrayOptions` when it takes those as keywords)."""
    params = inspect.signature(create_array).parameters.values()
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        names |= {f.name for f in dataclasses.fields(ArrayOptions)}
    return frozenset(names - {"store", "path", "name"})


def create_group(store: Any, *, path: str | None = None, zarr_format: int | None = None, overwrite: bool = False,
                 attributes: Mapping[str, Any] | None = None, storage_options: dict[str, Any] | None = None,
                 allow_reserved_names: bool = False) -> Group:
    """Create a group (and any missing parents) and return it; the keywords are zarr-python
    3's ``zarr.create_group``'s (``allow_reserved_names``: as for :func:`create_array`)."""
    found = resolve("zarrdask.create_group", store, path=path, mode="a", storage_options=storage_options, read=False)
    return make_group(found.store, found.path, zarr_format,
                      overwrite=overwrite, attributes=attributes, allow_reserved_names=allow_reserved_names,
                      exists_hint=OVERWRITE_HINT)


def make_group(store: Store, path: str | None, zarr_format: Any, *, overwrite: bool,
               attributes: Mapping[str, Any] | None, allow_reserved_names: bool, exists_hint: str,
               options: ArrayOptions | None = None) -> Group:
    """Create a group in an opened store; ``exists_hint``: how the caller replaces a node;
    ``options``: for the arrays opened through it."""
    new = write_group(store, path, zarr_format, overwrite=overwrite, attributes=attributes,
                      allow_reserved_names=allow_reserved_names, exists_hint=exists_hint)
    return Group(store, new.path, new.metadata, options=options)


def walk(store: Store, path: str, metadata: NodeMetadata, max_depth: int | None = None) -> dict[str, NodeMetadata]:
    """Every node below ``path`` by listing (ignores consolidated metadata), down to
    ``max_depth`` levels below the direct members (None: all); relative paths."""
    found: dict[str, NodeMetadata] = {}
    level = [""]
    depth = 0
    while level and (max_depth is None or depth <= max_depth):
        depth += 1
        children: list[str] = []
        for rel in level:
            _, dirs = store.list_dir(join_path(path, rel))
            children.extend(join_path(rel, d) for d in dirs if d != RECORDS_DIR)
        metas = read_nodes(store, [join_path(path, c) for c in children], metadata.zarr_format)
        level = []
        for child, meta in zip(children, metas):
            if meta is not None:
                found[child] = meta
                if meta.node_type == "group":
                    level.append(child)
    return found


def _with_listed(store: Store, path: str, zarr_format: int, walked: Mapping[str, NodeMetadata],
                 listed: Mapping[str, Any]) -> dict[str, NodeMetadata]:
    """The walk's nodes, and those the stored consolidated metadata ``listed`` (by path)
    that the walk did not meet but the store holds now: made by another process after the
    walk passed (one batched read of their documents, usually of none)."""
    extra = sorted(k for k in listed if k not in walked)
    found = read_nodes(store, [join_path(path, k) for k in extra], zarr_format, consolidated=False) if extra else []
    every = {**walked, **{k: meta for k, meta in zip(extra, found) if meta is not None}}
    return dict(sorted(every.items()))


def consolidate_metadata(store: Store, path: str = "") -> Group:
    """Gather the metadata of every node below the group at ``path`` into it (v2 ``.zmetadata``,
    v3 inline ``consolidated_metadata``) and return the group opened with it."""
    found = read_node(store, path)
    if not isinstance(found, (GroupMetadataV2, GroupMetadataV3)):
        raise ContainsNodeError(f"{path or '<root>'!r} is an array; only groups hold consolidated metadata")
    nodes = walk(store, path, found.evolve(consolidated=None))
    # (written as a guarded read-modify-write of the group's documents as stored then, so
    # attributes another process set meanwhile stay, and so do the entries another process
    # added after the walk: ``_with_listed``)
    root: GroupMetadata
    if isinstance(found, GroupMetadataV3):
        _, root = change_node(store, path, found, lambda m: m.evolve(
            consolidated=_with_listed(store, path, 3, nodes, m.consolidated or {})))
    else:
        key, attrs_key = join_path(path, ".zmetadata"), join_path(path, ".zattrs")
        made: list[dict[str, Any]] = []

        def step(values: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
            attrs, stored = values[attrs_key], values[key]
            listed = None if stored is None else consolidated_entries(parse_json_document(stored, key), 2)
            before = {k.rpartition("/")[0] for k in listed or {} if "/" in k}
            every = _with_listed(store, path, 2, nodes, dict.fromkeys(before))
            own = {} if attrs is None else {".zattrs": parse_json_document(attrs, attrs_key)}
            made[:] = [zmetadata_document({".zgroup": {"zarr_format": 2}, **own, **{
                f"{rel}/{name}": json.loads(data) for rel, meta in every.items()
                for name, data in meta.to_documents().items()}})]
            return {key: dumps(made[0])}

        change_documents(store, [key, attrs_key], step)
        listed = made[0]["metadata"]
        root = found.evolve(consolidated=listed, attributes=dict(listed.get(".zattrs", {})))
    return Group(store, path, root)
