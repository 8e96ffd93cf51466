"""``migrate`` of N5 containers (read as v3 metadata, :mod:`zarrdask.metadata.n5`) to plain
Zarr v3, in a new store.

N5's blocks cannot stay as they are: each starts with a header (mode, number of
dimensions, the block's own shape), holds big-endian values in N5's axis order and may be
short at the array's edge, and lies under N5's block path (the chunk coordinates
reversed). The ``n5_default`` codec describes all that, but zarr-python and TensorStore's
``zarr3`` driver do not read it, and no v3 chunk key encoding gives those paths. So
migrate copies the container (or the node at ``path``) into an empty target with
:func:`zarrdask.copy`, which rewrites every array (from_zarr -> to_zarr; its record makes
an interrupted migrate resumable): each as :func:`~zarrdask.metadata.n5.plain_v3_document`
describes it, each group with its attributes. Blocks N5 does not store stay absent and
blocks holding only zeros are not written: both read as the fill value 0, as N5 readers
fill missing blocks. Attributes are kept as they are (N5 viewers' per-axis lists such as
``resolution`` stay in N5's axis order, fastest first).
"""

from __future__ import annotations

from ..door.node_io import NodeMetadata
from ..errors import ContainsNodeError, InvalidModeError
from ..metadata.n5 import SOURCE_FORMAT
from ..metadata.v3 import GroupMetadataV3
from ..nodes.array import Array
from ..nodes.group import walk
from ..storage.base import Store, join_path
from .copy_layout import Options, target_metadata

__all__ = ["migrate_n5", "n5_needs_copy"]


def n5_needs_copy(meta: NodeMetadata, where: str) -> InvalidModeError | None:
    """The error for migrating an N5 container in place (None for other formats)."""
    if meta.source_format != SOURCE_FORMAT:
        return None
    return InvalidModeError(f"{where} is an N5 container, whose blocks (a header, big-endian values in N5's axis "
                            "order, short edge blocks, under reversed block paths) no other Zarr v3 reader takes: "
                            "it needs a copy; zarrdask.migrate(source, target=new_store) (`zarrdask migrate SOURCE "
                            "--target NEW`) writes the Zarr v3 store, every block re-encoded")


def n5_documents(store: Store, path: str, meta: NodeMetadata) -> dict[str, NodeMetadata]:
    """The v3 metadata of the N5 node at ``path`` and of every node below it, by path
    relative to it ("" the node itself): what :func:`zarrdask.copy` writes of them."""
    nodes = {"": meta, **(walk(store, path, meta) if meta.node_type == "group" else {})}
    out: dict[str, NodeMetadata] = {}
    for rel, node in sorted(nodes.items()):
        if node.node_type == "group":
            out[rel] = GroupMetadataV3(attributes=dict(node.attributes))
        else:
            out[rel] = target_metadata(rel or "/", Array(store, join_path(path, rel), node), Options())
    return out


def migrate_n5(src: Store, path: str, meta: NodeMetadata, dst: Store, *, dry_run: bool) -> dict[str, NodeMetadata]:
    """Copy the N5 node at ``path`` (and everything below it) to the root of the empty
    ``dst`` as Zarr v3 (``dry_run``: only check the target and every node's conversion);
    returns the new metadata by relative path."""
    from .copy import copy  # (imports Dask)

    documents = n5_documents(src, path, meta)
    try:
        copy(src, dst, path=path, dry_run=dry_run)
    except ContainsNodeError:  # (copy's own message offers overwrite=, which migrate does not take)
        raise ContainsNodeError(f"the target {dst.url} is not empty: migrate copies an N5 container into an empty "
                                "one (or into what an interrupted migrate of it left)") from None
    return documents
