"""An array's codec chain split the way zarr-python names its parts (``filters``,
``serializer``, ``compressors``), and its chunk counts (``cdata_shape``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..codecs.pipeline import CodecPipeline
from ..metadata.grid import AxisGrid, RegularAxis, ceil_div

if TYPE_CHECKING:
    from .array import Array

__all__ = ["codec_parts", "chunk_counts"]

Parts = tuple[tuple[dict[str, Any], ...], "dict[str, Any] | None", tuple[dict[str, Any], ...]]


def codec_parts(array: Array) -> Parts:
    """``(filters, serializer, compressors)`` as JSON that ``create_array`` takes back.

    v3: the array->array, array->bytes and bytes->bytes codecs; when the chain is only the
    sharding codec, the chain inside the shards (as zarr-python's ``inner_codecs``). v2: the
    filters and the compressor as numcodecs configs, no serializer."""
    meta = array.metadata
    if meta.zarr_format == 2:
        filters = tuple(dict(f) for f in meta.filters or ())
        return filters, None, (dict(meta.compressor),) if meta.compressor is not None else ()
    chain = array._pipeline
    assert isinstance(chain, CodecPipeline)  # (a v3 array's)
    sharding = chain.sharding
    if sharding is not None and sharding.inner is not None and not chain.array_array and not chain.bytes_bytes:
        chain = sharding.inner
    return (tuple(c.to_json() for c in chain.array_array), chain.array_bytes.to_json(),
            tuple(c.to_json() for c in chain.bytes_bytes))


def chunk_counts(grid: tuple[AxisGrid, ...], chunks: tuple[Any, ...]) -> tuple[int, ...]:
    """Read chunks per dimension: the storage units, or the inner chunks of ``chunks``
    (an int per dimension) that tile each unit."""
    counts = []
    for axis, inner in zip(grid, chunks):
        if not isinstance(inner, int):  # a rectilinear grid's own chunks
            counts.append(axis.count)
        elif isinstance(axis, RegularAxis):
            counts.append(ceil_div(axis.size, inner))
        else:
            counts.append(sum(ceil_div(e, inner) for e in axis.extents()))
    return tuple(counts)
