"""An array's codec chain split the way zarr-python names its parts (``filters``,
``serializer``, ``compressors``), and its chunk counts (``cdata_shape``)."""

from __future__ import annotations

from typing import Any, NamedTuple, cast

from ..codecs.pipeline import codec_chain
from ..codecs.protocol import ChunkPipeline
from ..codecs.sharding import ShardingCodec
from ..metadata.grid import AxisGrid, RegularAxis, ceil_div
from ..metadata.nodes import ArrayMetadata

__all__ = ["CodecParts", "codec_json", "codec_parts", "chunk_counts"]


class CodecParts(NamedTuple):
    """A chain as JSON that ``create_array`` takes back, by zarr-python's names."""

    filters: tuple[dict[str, Any], ...]
    serializer: dict[str, Any] | None
    compressors: tuple[dict[str, Any], ...]


def codec_parts(metadata: ArrayMetadata, pipeline: ChunkPipeline) -> CodecParts:
    """v3: the array->array, array->bytes and bytes->bytes codecs of ``pipeline`` (the
    array's, validated); when the chain is only the sharding codec, the chain inside the
    shards (as zarr-python's ``inner_codecs``). v2: the filters and the compressor as
    numcodecs configs, no serializer."""
    if metadata.zarr_format == 2:
        filters = tuple(dict(f) for f in metadata.filters or ())
        return CodecParts(filters, None, (dict(metadata.compressor),) if metadata.compressor is not None else ())
    chain = codec_chain(pipeline)
    sharding = cast(ShardingCodec | None, chain.sharding)  # (what the pipeline declares it to be)
    if sharding is not None and sharding.inner and not chain.array_array and not chain.bytes_bytes:
        chain = sharding.inner
    return CodecParts(tuple(c.to_json() for c in chain.array_array), chain.array_bytes.to_json(),
                      tuple(c.to_json() for c in chain.bytes_bytes))


def codec_json(metadata: ArrayMetadata, pipeline: ChunkPipeline) -> list[dict[str, Any]]:
    """v3: the codec chain as JSON. v2: one record of the numcodecs ``filters`` and
    ``compressor`` as the metadata holds them."""
    if metadata.zarr_format == 2:
        return [{"filters": [dict(f) for f in metadata.filters] if metadata.filters else None,
                 "compressor": dict(metadata.compressor) if metadata.compressor is not None else None}]
    return pipeline.to_json()


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
