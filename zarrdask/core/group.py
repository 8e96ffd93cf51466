"""The Group: a node holding arrays and groups, with attributes and consolidated metadata."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Union

from ..errors import (
    ContainsNodeError,
    InvalidKeyError,
    MemberNotFoundError,
    MetadataError,
    NodeNotFoundError,
    Problem,
    StaleConsolidatedMetadataWarning,
)
from ..metadata.consolidated import v2_documents_for, zmetadata_document
from ..metadata.v3 import GroupMetadataV3
from ..storage.base import Store, join_path, normalize_key
from .array import Array, ArrayOptions
from .node import Node
from .node_io import NodeMetadata, dumps, parse_node_documents, read_node, read_nodes, write_node

if TYPE_CHECKING:
    from ..tools.describe import NodeInfo

__all__ = ["Group", "node_from_metadata", "walk", "consolidate_metadata"]

Member = Union[Array, "Group"]


def node_from_metadata(store: Store, path: str, metadata: NodeMetadata,
                       consolidated: Mapping[str, NodeMetadata] | None = None,
                       options: ArrayOptions | None = None) -> Member:
    """An Array or Group object for already-read metadata."""
    if metadata.node_type == "array":
        return Array(store, path, metadata, options)
    return Group(store, path, metadata, consolidated)


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


class Group(Node):
    """A Zarr group. ``g["a/b"]`` opens a member; ``members()`` lists direct children."""

    def __init__(self, store: Store, path: str, metadata: NodeMetadata,
                 consolidated: Mapping[str, NodeMetadata] | None = None) -> None:
        self._store = store
        self._path = path.strip("/")
        self._metadata = metadata
        self._consolidated = dict(consolidated) if consolidated is not None else _parse_consolidated(metadata)

    @property
    def consolidated(self) -> bool:
        """True when members are served from consolidated metadata."""
        return self._consolidated is not None

    def __repr__(self) -> str:
        return f"<zarrdask.Group {self.name!r} v{self.zarr_format}>"

    @property
    def info(self) -> NodeInfo:
        """The group as a table: members, attributes, consolidated metadata."""
        from ..tools.describe import group_info

        return group_info(self)

    def _repr_html_(self) -> str:
        from ..tools.html import group_html

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
                warnings.warn(f"{key}: the consolidated metadata lacks member {name!r}, which exists in the "
                              f"store (stale copy; zarrdask.consolidate_metadata refreshes it)",
                              StaleConsolidatedMetadataWarning, stacklevel=2)
        return self._member(name, meta)

    def _member(self, name: str, meta: NodeMetadata) -> Member:
        node = node_from_metadata(self._store, join_path(self._path, name), meta, self._child_consolidated(name, meta))
        if self._consolidated is not None and name in self._consolidated:
            node._parent_copy = (self._consolidated, name)
        return node

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except MemberNotFoundError:
            return default

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def members(self) -> tuple[tuple[str, Member], ...]:
        """Direct children as ``(name, node)`` pairs, sorted by name."""
        if self._consolidated is not None:
            found = {k: v for k, v in self._consolidated.items() if "/" not in k}
        else:
            _, dirs = self._store.list_dir(self._path)
            metas = read_nodes(self._store, [join_path(self._path, d) for d in dirs], self.zarr_format)
            found = {d: m for d, m in zip(dirs, metas) if m is not None}
        return tuple((name, self._member(name, meta)) for name, meta in sorted(found.items()))

    def __iter__(self) -> Iterator[str]:
        return iter(name for name, _ in self.members())

    def __len__(self) -> int:
        return len(self.members())

    def keys(self) -> list[str]:
        return list(self)

    def arrays(self) -> tuple[tuple[str, Array], ...]:
        return tuple((n, m) for n, m in self.members() if isinstance(m, Array))

    def groups(self) -> tuple[tuple[str, Group], ...]:
        return tuple((n, m) for n, m in self.members() if isinstance(m, Group))

    def array_keys(self) -> list[str]:
        return [n for n, _ in self.arrays()]

    def group_keys(self) -> list[str]:
        return [n for n, _ in self.groups()]

    # -- creation -----------------------------------------------------------------------
    def create_array(self, name: str, **kwargs: Any) -> Array:
        """Create an array below this group (arguments as :func:`zarrdask.create_array`)."""
        from .create import create_array

        kwargs.setdefault("zarr_format", self.zarr_format)
        self._consolidated = None
        return create_array(self._store, path=join_path(self._path, name), **kwargs)

    def create_group(self, name: str, *, attributes: Mapping[str, Any] | None = None,
                     overwrite: bool = False) -> Group:
        from .create import create_group

        self._consolidated = None
        return create_group(self._store, path=join_path(self._path, name), attributes=attributes,
                            zarr_format=self.zarr_format, overwrite=overwrite)

    def require_group(self, name: str) -> Group:
        """The member group ``name``, created if absent."""
        node = self.get(name)
        if node is None:
            return self.create_group(name)
        if not isinstance(node, Group):
            raise ContainsNodeError(f"{join_path(self._path, name)!r} is an array, not a group")
        return node

    # -- display ----------------------------------------------------------------------------
    def tree(self) -> str:
        """The hierarchy below this group as indented text."""
        lines = [self.name]

        def visit(group: Group, prefix: str) -> None:
            members = group.members()
            for i, (name, node) in enumerate(members):
                last = i == len(members) - 1
                branch = "└── " if last else "├── "
                if isinstance(node, Array):
                    lines.append(f"{prefix}{branch}{name} {node.shape} {node.dtype}")
                else:
                    lines.append(f"{prefix}{branch}{name}")
                    visit(node, prefix + ("    " if last else "│   "))

        visit(self, "")
        return "\n".join(lines)


def walk(store: Store, path: str, metadata: NodeMetadata) -> dict[str, NodeMetadata]:
    """Every node below ``path`` by listing (ignores consolidated metadata); relative paths."""
    found: dict[str, NodeMetadata] = {}
    level = [""]
    while level:
        children = []
        for rel in level:
            _, dirs = store.list_dir(join_path(path, rel))
            children.extend(join_path(rel, d) for d in dirs)
        metas = read_nodes(store, [join_path(path, c) for c in children], metadata.zarr_format)
        level = []
        for child, meta in zip(children, metas):
            if meta is not None:
                found[child] = meta
                if meta.node_type == "group":
                    level.append(child)
    return found


def consolidate_metadata(store: Store, path: str = "") -> Group:
    """Gather the metadata of every node below the group at ``path`` into it (v2 ``.zmetadata``,
    v3 inline ``consolidated_metadata``) and return the group opened with it."""
    root = read_node(store, path)
    if root.node_type != "group":
        raise ContainsNodeError(f"{path or '<root>'!r} is an array; only groups hold consolidated metadata")
    root = root.evolve(consolidated=None)
    nodes = walk(store, path, root)
    if root.zarr_format == 3:
        assert isinstance(root, GroupMetadataV3)
        root = root.evolve(consolidated=dict(sorted(nodes.items())))
        write_node(store, path, root)
    else:
        docs: dict[str, Any] = {".zgroup": {"zarr_format": 2}}
        if root.attributes:
            docs[".zattrs"] = dict(root.attributes)
        for rel, meta in nodes.items():
            for name, data in meta.to_documents().items():
                docs[f"{rel}/{name}"] = json.loads(data)
        store.set(join_path(path, ".zmetadata"), dumps(zmetadata_document(docs)))
        root = root.evolve(consolidated=zmetadata_document(docs)["metadata"])
    return Group(store, path, root)
