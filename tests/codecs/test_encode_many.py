"""A write encodes a run of a shard's inner chunks with one call (``CodecPipeline.encode_many``;
zstd: ``multi_compress_to_buffer``, which holds no GIL for the whole run). That must store
exactly the bytes encoding each chunk on its own gives: these properties prove it over
generated batches (sizes from one value to several zstd blocks, RLE and random values,
strided chunks, every zstd level kind, with and without checksum, chains of several
bytes->bytes codecs; gzip is left out: its header holds the time). A whole shard written
against the sharding codec's own encode is test_sharding_paths.py's.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.codecs.pipeline import CodecPipeline, codec_chain
from zarrdask.storage.memory import MemoryStore


def _pipeline(compressors: list[dict], shape: tuple[int, ...], dtype: str) -> CodecPipeline:
    """The chunk pipeline of an array of one chunk of ``shape`` with these bytes->bytes codecs."""
    a = zarrdask.create_array(MemoryStore(), shape=shape, chunks=shape, dtype=dtype, fill_value=0,
                              compressors=compressors or None)
    return codec_chain(a.units.pipeline)


@st.composite
def batches(draw):
    shape = draw(st.sampled_from([(1,), (7,), (64, 64), (4, 64, 64), (3, 200, 100)]))
    dtype = draw(st.sampled_from(["uint8", "int16", "float32", "float64"]))
    n = draw(st.integers(0, 9))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    chunks = []
    for _ in range(n):
        kind = draw(st.sampled_from(["random", "few", "constant"]))
        if kind == "random":
            raw = rng.integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
            chunk = raw.view(dtype).reshape(shape)
        elif kind == "few":
            chunk = rng.integers(0, 3, shape).astype(dtype)
        else:
            chunk = np.full(shape, rng.integers(0, 100), dtype=dtype)
        if draw(st.booleans()) and chunk.ndim > 1:  # a strided view, as a shard's chunk is
            chunk = np.concatenate([chunk, chunk], axis=-1)[..., ::2]
        chunks.append(chunk)
    level = draw(st.sampled_from([-7, 1, 3, 9]))
    zstd = {"name": "zstd", "configuration": {"level": level, "checksum": draw(st.booleans())}}
    tail = draw(st.sampled_from([[zstd], [zstd, {"name": "crc32c"}], [{"name": "crc32c"}, zstd],
                                 []]))
    return _pipeline(tail, shape, dtype), chunks


@settings(max_examples=150, deadline=None)
@given(batches())
def test_encode_many_is_encode_of_each(batch):
    pipeline, chunks = batch
    many = pipeline.encode_many(chunks)
    assert all(memoryview(item).readonly for item in many)  # (never a view of the values)
    assert [bytes(item) for item in many] == [pipeline.encode(chunk) for chunk in chunks]
