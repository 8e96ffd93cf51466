"""``copy``: a whole hierarchy (or one array) rewritten through the Dask layer.

Each array is read with :func:`zarrdask.from_zarr` (one task per source shard) and written
with :func:`zarrdask.to_zarr`, whose planner gives every target shard one owner task, so
any change of chunks or shards is safe; all arrays are written by one graph, on a
distributed cluster when a client is given. Chunks, shards and compressors can change,
and the format (v2 <-> v3): dimension names move between ``_ARRAY_DIMENSIONS`` and
``dimension_names``, and the fill value that xarray masks with moves between the v2
``fill_value`` and the v3 ``_FillValue`` attribute, so datasets open alike under xarray.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

from ..core.api import open as open_node
from ..dask_io.progress import compute
from ..core.array import Array
from ..core.create import create_group
from ..core.group import Group, consolidate_metadata, walk
from ..errors import ShapeMismatchError
from ..storage import open_store
from ..storage.base import join_path

__all__ = ["copy", "resolve_shape"]

#: a per-dimension shape: positional (applies to arrays of that many dimensions) or by dimension name
ShapeSpec = Union[Sequence[int], Mapping[str, int], None]


def resolve_shape(spec: ShapeSpec, array: Array, default: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """``spec`` for ``array``: a sequence of its length, one size for every dimension, or
    ``{dimension name: size}`` (others keep ``default``); -1 is the whole dimension.
    Anything else keeps ``default``."""
    if spec is None:
        return default
    if isinstance(spec, Mapping):
        names = array.dimension_names or ()
        if not any(n in spec for n in names):
            return default
        base = default if default is not None else array.shape
        sizes = [spec.get(n, b) if n is not None else b for n, b in zip(names, base)]
    else:
        if len(spec) == 1 and array.ndim:
            spec = tuple(spec) * array.ndim
        if len(spec) != array.ndim:
            return default
        sizes = list(spec)
    return tuple(n if s == -1 else min(int(s), max(n, 1)) for s, n in zip(sizes, array.shape))


def copy(source: Any, target: Any, *, path: str = "", chunks: ShapeSpec = None, shards: ShapeSpec = None,
         compressors: Any = None, zarr_format: int | None = None, overwrite: bool = False, progress: bool = False,
         client: Any = None, storage_options: dict[str, Any] | None = None,
         target_storage_options: dict[str, Any] | None = None) -> Union[Array, Group]:
    """Copy the node at ``path`` of ``source`` (and everything below it) to ``target``'s root.

    ``chunks``/``shards``: see :func:`resolve_shape` (unset: the source's read chunks, no
    shards); ``compressors``: as for ``create_array`` (unset: each array's own for the same
    format, else zarrdask's default); ``zarr_format``: the target's (unset: the source's).
    ``client``: a ``distributed.Client`` to run on; ``progress``: a progress bar."""
    src = open_store(source, storage_options=storage_options)
    dst = open_store(target, mode="a", storage_options=target_storage_options)
    root = open_node(src, path=path or None)
    fmt = zarr_format or root.zarr_format
    writes = []
    if isinstance(root, Array):
        writes.append(_copy_array(root, dst, "", fmt, chunks, shards, compressors, overwrite))
    else:
        create_group(dst, attributes=dict(root.attrs), zarr_format=fmt, overwrite=overwrite)
        for rel, meta in sorted(walk(src, root.path, root.metadata).items()):
            node = open_node(src, path=join_path(root.path, rel))
            if isinstance(node, Array):
                writes.append(_copy_array(node, dst, rel, fmt, chunks, shards, compressors, overwrite))
            else:
                create_group(dst, path=rel, attributes=dict(node.attrs), zarr_format=fmt, overwrite=overwrite)
    compute(writes, progress, client)
    if isinstance(root, Group) and root.consolidated:
        consolidate_metadata(dst)
    return open_node(dst)


def _copy_array(array: Array, dst: Any, rel: str, fmt: int, chunks: ShapeSpec, shards: ShapeSpec,
                compressors: Any, overwrite: bool) -> Any:
    """The delayed write of one array (its metadata is written now)."""
    from ..dask_io import from_zarr, to_zarr

    regular = isinstance(array.chunks[0], int) if array.ndim else True
    inner = resolve_shape(chunks, array, array.chunks if regular else None)
    outer = resolve_shape(shards, array, None)
    if outer is not None and fmt == 2:
        raise ShapeMismatchError(f"array {array.name!r}: Zarr v2 has no shards")
    if outer is not None and inner is not None and any(s % c for s, c in zip(outer, inner)):
        inner = tuple(_largest_divisor(s, c) for s, c in zip(outer, inner))
    attrs = {k: v for k, v in array.attrs.items() if k != "_ARRAY_DIMENSIONS"}
    fill = array.fill_value
    if array.dimension_names is not None and fmt != array.zarr_format:
        attrs, fill = _xarray_fill(array, attrs, fmt)
    if array.dtype.kind == "O" and not isinstance(fill, (str, bytes)):
        fill = None  # (a v2 object array's fill value may be any JSON; strings get the empty one)
    return to_zarr(from_zarr(array), dst, path=rel or None, chunks=inner if inner is not None else "dask",
                   shards=outer, compressors=_compressors(array, fmt, compressors), attributes=attrs,
                   dimension_names=array.dimension_names, fill_value=fill, zarr_format=fmt,
                   mode="w" if overwrite else "w-", compute=False)


def _largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` not above ``at_most`` (inner chunks must divide shards)."""
    return next(d for d in range(min(n, at_most), 0, -1) if n % d == 0)


def _compressors(array: Array, fmt: int, compressors: Any) -> Any:
    if compressors is not None:
        return compressors
    if fmt != array.zarr_format or array.zarr_format == 3:
        return "auto"
    compressor = array.metadata.compressor
    return [] if compressor is None else [dict(compressor)]


def _xarray_fill(array: Array, attrs: dict[str, Any], fmt: int) -> tuple[dict[str, Any], Any]:
    """The fill value xarray masks with, moved to where the target format keeps it."""
    from ..tools.migrate import xarray_fill_attribute
    from ..xarray_backend.encoding import decode_fill_value_attr

    if fmt == 3:
        return xarray_fill_attribute(attrs, array.metadata), array.fill_value
    fill = attrs.pop("_FillValue", None)
    return attrs, None if fill is None else decode_fill_value_attr(fill, array)
