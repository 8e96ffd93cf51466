"""What an array "like" another takes from it (zarr-python's ``*_like`` calls and
``from_array``): shape, chunks and dtype of anything array-like, and of a Zarr array
(zarrdask's or zarr-python's) also its layout and codecs."""

from __future__ import annotations

from typing import Any

import numpy as np

from .array import Array

__all__ = ["array_like", "is_array_like", "is_array_node", "like_keywords", "regular_chunks"]


def is_array_like(data: Any) -> bool:
    """``data`` has a shape and a dtype (NumPy, dask, Zarr arrays)."""
    return hasattr(data, "shape") and hasattr(data, "dtype")


def array_like(data: Any) -> Any:
    """``data`` itself when it is array-like, else as a NumPy array (lists, scalars)."""
    return data if is_array_like(data) else np.asanyarray(data)


def is_array_node(a: Any) -> bool:
    """A zarrdask or zarr-python array (its codecs and layout are kept by ``*_like`` and
    ``from_array``)."""
    return isinstance(a, Array) or (type(a).__module__.startswith("zarr.") and hasattr(a, "metadata")
                                    and hasattr(a, "compressors"))


def regular_chunks(a: Any) -> tuple[int, ...] | None:
    """``a``'s chunk shape: its ``chunks`` when those are sizes, the first block of each
    axis when they are dask's block sizes per axis."""
    chunks = getattr(a, "chunks", None)
    if not isinstance(chunks, tuple) or not chunks:
        return None
    if all(isinstance(c, tuple) for c in chunks):  # (dask: block sizes per axis)
        return tuple(max(c[0], 1) if c else 1 for c in chunks)
    return chunks


def like_keywords(a: Any, kwargs: dict[str, Any], keep_fill: bool) -> dict[str, Any]:
    """Keywords for an array like ``a`` (its shape, chunks and dtype; for a Zarr array also
    its shards, codecs and format, and with ``keep_fill`` its fill value), under ``kwargs``."""
    like: dict[str, Any] = {}
    if isinstance(getattr(a, "shape", None), tuple):
        like["shape"] = a.shape
    chunks = a.chunks if is_array_node(a) else regular_chunks(a)  # (a Zarr array's own, rectilinear too)
    if chunks is not None:
        like["chunks"] = chunks
    if hasattr(a, "dtype"):
        like["dtype"] = a.dtype
    if is_array_node(a):
        source_format = a.metadata.zarr_format
        if kwargs.get("zarr_format", source_format) == source_format:
            like["zarr_format"] = source_format
            like["filters"] = tuple(a.filters) or None
            like["compressors"] = tuple(a.compressors) or None
            if source_format == 3:
                like["shards"] = a.shards
                like["serializer"] = a.serializer
            else:
                like["order"] = a.order
        if keep_fill:
            like["fill_value"] = a.fill_value
    return {**like, **kwargs}
