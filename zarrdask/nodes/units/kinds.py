"""Which kind of stored unit an array has, chosen from its codec chain."""

from __future__ import annotations

from collections.abc import Callable

from ...codecs.base import ChunkSpec
from ...codecs.protocol import ChunkPipeline
from ...metadata.grid import AxisGrid, ChunkKeyEncoding
from ...storage.base import Store
from ...runtime.cache import ArrayCache, ArrayKey
from .base import ChunkSource
from .chunks import PlainChunkSource
from .options import ArrayOptions
from .shards import ShardedChunkSource

__all__ = ["open_units"]


def open_units(store: Store, path: str, key_encoding: ChunkKeyEncoding,
               pipelines: Callable[[tuple[int, ...]], ChunkPipeline], spec: ChunkSpec, options: ArrayOptions,
               grid: tuple[AxisGrid, ...], *, pool_key: ArrayKey | None = None,
               decoded: ArrayCache | None = None) -> ChunkSource:
    """The stored units of an array: shards read through their index when the array->bytes
    codec is sharding and the codecs before it only permute axes; any other chain decodes
    whole stored values (shards among them). ``pool_key`` names the array in the process's
    decoded-chunk cache; ``decoded``: this open's view of it (None: reads decode straight
    into their output)."""
    pipeline = pipelines(spec.shape)
    shards = pipeline.sharding is not None
    if shards and pipeline.axis_permutation is not None:
        return ShardedChunkSource(store, path, key_encoding, pipelines, spec, options, grid, pool_key=pool_key,
                                  decoded=decoded)
    return PlainChunkSource(store, path, key_encoding, pipelines, spec, options, grid, shards=shards,
                            pool_key=pool_key, decoded=decoded)
