"""The sharding codec used whole (``ShardingCodec.decode``/``encode``: a shard inside a
chain that cannot be addressed, after value-changing array->array codecs or inside
another shard) and the chunk source that addresses inner chunks (``nodes/units/shards.py``)
are two readers and writers of one format: each reads what the other writes, bit for bit,
for generated geometries, values and missing chunks."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from _util import draw_shard_geometry
from zarrdask.codecs.base import ChunkSpec
from zarrdask.codecs.sharding import ShardingCodec
from zarrdask.metadata.grid import all_chunk_coords, chunk_slices
from zarrdask.storage import MemoryStore
from zarrdask.storage.base import join_path


@st.composite
def sharded(draw):
    ndim, inner, shard, shape = draw_shard_geometry(draw, st, max_per_shard=3, min_extent=1, spare=3)
    size = int(np.prod(shape))
    values = np.asarray(draw(st.lists(st.integers(-3, 3), min_size=size, max_size=size)), dtype="int16").reshape(shape)
    compressed = draw(st.booleans())
    return inner, shard, values, compressed


def _array(inner, shard, values, compressed):
    a = zarrdask.create_array(MemoryStore(), shape=values.shape, chunks=inner, shards=shard, dtype="int16",
                              fill_value=0, compressors=[{"name": "zstd", "configuration": {"level": 1}}] if compressed
                              else None)
    return a


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sharded())
def test_each_reads_what_the_other_writes(case):
    inner, shard, values, compressed = case
    a = _array(*case)
    a[...] = values  # written by the chunk source (empty inner chunks left out)
    codec = a.units.pipeline.sharding
    assert isinstance(codec, ShardingCodec)
    spec = ChunkSpec(shard, a.metadata.data_type, 0)
    grid = a.metadata.chunk_grid.axes(a.shape)
    for coords in all_chunk_coords(grid):
        key = join_path(a.path, a.units.key(coords))
        blob = a.store.get(key)
        region = chunk_slices(grid, coords)
        padded = np.zeros(shard, "int16")
        padded[tuple(slice(0, s.stop - s.start) for s in region)] = values[region]
        if blob is not None:  # the codec reads the source's shard
            assert np.array_equal(codec.decode(a.units.pipeline.decode_bytes_stage(blob), spec), padded)
        # the source reads the codec's shard
        a.store.set(key, bytes(a.units.pipeline.encode_bytes_stage(codec.encode(padded, spec))))
    assert np.array_equal(a[...], values)
