"""Shards read whole are decoded a slab at a time straight into a stack and placed with one
copy per slab (``nodes/units/block_placement.py``); partly read shards go chunk by chunk. The
slab path is a shortcut kept for its benchmark (benchmarks/README.md), so these
properties prove it equal to the chunk-by-chunk path and to the values written, over
generated arrays: 1-3 dimensions, shards clipped at the array's edge, transposes before
the sharding codec and inside it, several inner chains and data types, absent chunks,
inner chunks in any order in the shard's bytes (zarr-python writes Morton order), and slab
limits from one chunk to the whole shard. ``decode_into`` is proved equal to
``decode`` for every chain, bad input included.
"""

from __future__ import annotations

import functools
import itertools
import threading

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
import zarrdask.nodes.units.shards as shards
from _util import draw_shard_geometry
from zarrdask.codecs import decompress
from zarrdask.codecs.base import ChunkSpec
from zarrdask.codecs.sharding import MISSING
from zarrdask.codecs.pipeline import CodecPipeline
from zarrdask.runtime import output
from zarrdask.nodes.units import block_placement
from zarrdask.nodes.units import chunks as chunks_module
from zarrdask.metadata.dtypes import parse_data_type_v3
from zarrdask.metadata.extension import parse_named_config
from zarrdask.errors import CorruptChunkError, MissingChunkError, ZarrdaskError
from zarrdask.storage import MemoryStore

BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
BYTES_BE = {"name": "bytes", "configuration": {"endian": "big"}}
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
ZSTD_SUM = {"name": "zstd", "configuration": {"level": 1, "checksum": True}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}
INNER_CHAINS = [[BYTES_LE], [BYTES_LE, ZSTD], [BYTES_BE, ZSTD], [BYTES_LE, GZIP], [BYTES_LE, ZSTD, CRC],
                [BYTES_LE, CRC, ZSTD_SUM], [BYTES_LE, {"name": "blosc", "configuration": {
                    "cname": "lz4", "clevel": 1, "shuffle": "shuffle", "blocksize": 0}}]]
DTYPES = ["uint8", "int16", "float32", "float64", "complex64", "bool"]


def _transpose(order):
    return {"name": "transpose", "configuration": {"order": list(order)}}


@st.composite
def sharded_cases(draw):
    ndim, inner, shard, shape = draw_shard_geometry(draw, st, max_per_shard=4, min_extent=1, spare=3)
    outer = draw(st.permutations(range(ndim))) if draw(st.booleans()) else None
    inner_t = draw(st.permutations(range(ndim))) if draw(st.booleans()) else None
    chain = list(draw(st.sampled_from(INNER_CHAINS)))
    if inner_t is not None:
        chain = [_transpose(inner_t), *chain]
    # with a transpose before the sharding codec, its inner chunk shape is in the permuted order
    inner_cfg = inner if outer is None else tuple(inner[k] for k in outer)
    sharding = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner_cfg), "codecs": chain, "index_codecs": [BYTES_LE, CRC],
        "index_location": draw(st.sampled_from(["start", "end"]))}}
    codecs = ([_transpose(outer)] if outer is not None else []) + [sharding]
    return dict(shape=shape, shard=shard, codecs=codecs, dtype=draw(st.sampled_from(DTYPES)),
                seed=draw(st.integers(0, 2**16)), holes=draw(st.booleans()),
                slab=draw(st.sampled_from([1, 64, 1000, 1 << 22])), reorder=draw(st.booleans()))


def _values(rng, dtype, shape, holes):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        values = rng.integers(0, 2, shape).astype(bool)
    elif dt.kind == "c":
        values = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dt)
    elif dt.kind == "f":
        values = rng.normal(size=shape).astype(dt)
    else:
        values = rng.integers(0, 200, shape).astype(dt)
    if holes:  # runs of the fill value: some inner chunks (or shards) are never stored
        values[tuple(slice(0, max(1, s // 2)) for s in shape)] = 0
    return values


def _chunk_by_chunk(array):
    """The same array reading every shard chunk by chunk (the plan's ``block`` turned off)."""
    source = array.units
    plan = source.plan

    def no_blocks(selection):
        p = plan(selection)
        return type(p)(tuple(u._replace(block=False) for u in p.units))

    source.plan = no_blocks
    return array


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sharded_cases())
def test_slabs_equal_values_and_chunk_by_chunk(case):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shards, "slabs", functools.partial(block_placement.slabs, limit=case["slab"]))
        _check_case(case)


def _check_case(case):
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=case["shape"], dtype=case["dtype"], chunks=case["shard"],
                              codecs=case["codecs"], fill_value=0)
    values = _values(np.random.default_rng(case["seed"]), case["dtype"], case["shape"], case["holes"])
    a[...] = values
    if case.get("reorder"):
        _reorder_inner_chunks(store, a, np.random.default_rng(case["seed"]))
    reopened = zarrdask.open_array(store)
    assert any(u.block for u in reopened.units.plan(_whole(reopened)).units)
    whole = reopened[...]
    np.testing.assert_array_equal(whole, values)
    assert whole.tobytes() == values.tobytes()
    by_chunk = _chunk_by_chunk(zarrdask.open_array(store))[...]
    assert by_chunk.tobytes() == whole.tobytes()
    # one thread per call (a Dask task) and zarrdask's pool take the same path
    assert zarrdask.open_array(store, threads=1)[...].tobytes() == whole.tobytes()


def _reorder_inner_chunks(store, array, rng):
    """Rewrite every shard with its inner chunks' bytes in a random order (the index follows)."""
    codec = array.units.pipeline.sharding
    start = codec.index_size if codec.index_location == "start" else 0
    for key in [k for k in store.list_prefix("") if not k.endswith("zarr.json")]:
        blob = store.get(key)
        table = codec.index_of(blob, key).table().reshape(-1, 2).copy()
        present = np.flatnonzero(table[:, 0] != MISSING)
        frames = {int(p): blob[int(table[p, 0]): int(table[p, 0] + table[p, 1])] for p in present}
        offset, body = start, []
        for p in rng.permutation(present).tolist():
            table[p, 0] = offset
            body.append(frames[p])
            offset += len(frames[p])
        index = bytes(codec.index_pipeline.encode(table.reshape(*codec.grid_shape, 2)))
        store.set(key, index + b"".join(body) if start else b"".join(body) + index)


def _whole(array):
    from zarrdask.indexing import basic_selection

    return basic_selection((Ellipsis,), array.shape)[0]


def test_absent_chunk_raises_or_fills_in_a_block():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(8, 8), dtype="int32", chunks=(4, 4), shards=(8, 8), fill_value=7)
    a[0:4, 0:4] = 1
    np.testing.assert_array_equal(zarrdask.open_array(store)[...][4:, 4:], 7)
    with pytest.raises(MissingChunkError, match="inner chunk"):
        zarrdask.open_array(store, missing_chunks="raise")[...]


def test_corrupt_inner_chunk_in_a_block_names_shard_and_chunk():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(4, 4), dtype="float32", chunks=(2, 2), shards=(4, 4),
                              compressors=[ZSTD])
    a[...] = np.arange(16, dtype="float32").reshape(4, 4)
    blob = bytearray(store.get("c/0/0"))
    blob[0:8] = b"\x00" * 8  # the first inner chunk's zstd frame header
    store.set("c/0/0", bytes(blob))
    with pytest.raises(CorruptChunkError, match=r"shard c/0/0, inner chunk \(0, 0\)"):
        zarrdask.open_array(store)[...]


# -- decode_into is decode, batched ------------------------------------------------------------
CHAINS = [[BYTES_LE], [BYTES_LE, ZSTD], [BYTES_BE, ZSTD], [BYTES_LE, GZIP], [BYTES_LE, ZSTD, CRC],
          [BYTES_LE, CRC, ZSTD_SUM], [_transpose((1, 0)), BYTES_LE, ZSTD]]


def _damaged(blob: bytes, damage: str | None) -> bytes:
    data = bytearray(blob)
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "extend":
        data += b"\x01\x02\x03"
    elif damage == "flip":
        data[len(data) // 2] ^= 0xFF
    return bytes(data)


@settings(max_examples=200, deadline=None)
@given(chain=st.sampled_from(CHAINS), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16),
       damages=st.lists(st.sampled_from([None, None, "truncate", "extend", "flip"]), min_size=1, max_size=5),
       data=st.data())
def test_decode_into_equals_decode(chain, dtype, seed, damages, data):
    """A batch decoded into a stack's slots (in any order) equals each chunk decoded on its
    own; the first chunk that cannot be decoded fails the batch, named as its ``item``."""
    spec = ChunkSpec((3, 5), parse_data_type_v3(dtype), 0)
    problems: list = []
    named = [parse_named_config(c, ("codecs", i), problems) for i, c in enumerate(chain)]
    pipeline = CodecPipeline.from_metadata(named, spec)
    rng = np.random.default_rng(seed)
    blobs = [_damaged(pipeline.encode(_values(rng, dtype, (3, 5), False)), d) for d in damages]
    slots = data.draw(st.permutations(range(len(blobs) + 1)))[: len(blobs)]  # (one slot left alone)
    out = np.zeros((len(blobs) + 1, 3, 5), dtype=np.dtype(dtype))
    expected = []
    for i, blob in enumerate(blobs):
        try:
            expected.append(pipeline.decode(blob))
        except ZarrdaskError as exc:
            with pytest.raises(type(exc)) as raised:
                pipeline.decode_into(blobs, out, slots)
            assert raised.value.item == i
            return
    pipeline.decode_into(blobs, out, slots)
    for k, values in zip(slots, expected):
        assert out[k].tobytes() == np.ascontiguousarray(values).tobytes()
    untouched = next(k for k in range(len(out)) if k not in slots)
    assert not out[untouched].any()


def test_zstd_into_holds_the_frame_to_the_buffer():
    data = bytes(range(256)) * 4
    out = memoryview(bytearray(len(data)))
    with_size = zstandard.ZstdCompressor(write_content_size=True).compress(data)
    decompress.zstd_into([with_size], [out])
    assert bytes(out) == data
    with pytest.raises(CorruptChunkError, match="claims to decode to 1024 bytes"):
        decompress.zstd_into([with_size], [memoryview(bytearray(1000))])
    # a frame without its size is streamed, and held to the buffer either way
    without = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    frame = without.compress(data) + without.flush()
    assert zstandard.frame_content_size(frame) == -1
    decompress.zstd_into([frame], [out])
    assert bytes(out) == data
    with pytest.raises(CorruptChunkError, match="more than the chunk's 1000 bytes"):
        decompress.zstd_into([frame], [memoryview(bytearray(1000))])
    with pytest.raises(CorruptChunkError, match="fewer than the chunk's 2000 bytes"):
        decompress.zstd_into([frame], [memoryview(bytearray(2000))])


# -- slabs and scratch buffers ----------------------------------------------------------
@given(grid=st.lists(st.integers(1, 5), min_size=1, max_size=4), itemsize=st.sampled_from([1, 8]),
       limit=st.integers(1, 4000))
def test_slabs_cover_every_position_once(grid, itemsize, limit):
    chunk = (2,) * len(grid)
    found = block_placement.slabs(grid, chunk, itemsize, limit)
    positions = [p for s in found for p in range(s.start, s.start + s.count)]
    assert positions == list(range(int(np.prod(grid))))
    for s in found:  # within the limit, unless one chunk alone is bigger
        assert s.count == 1 or int(np.prod(s.shape)) * itemsize <= limit
        assert int(np.prod(s.shape[: len(grid)])) == s.count


def test_scratch_reuses_buffers_within_the_idle_limit(monkeypatch):
    monkeypatch.setattr(output, "_idle", [])
    monkeypatch.setattr(output, "SCRATCH_IDLE_BYTES", 3000)
    with output.scratch((10, 10), np.dtype("float64")) as a:
        first = a.base
    with output.scratch((5, 5), np.dtype("int32")) as b:  # the idle 800-byte buffer fits
        assert b.base is first or b.base.base is first
    with output.scratch((10, 10), np.dtype("float64")) as c1, output.scratch((10, 10), np.dtype("float64")) as c2:
        assert not np.shares_memory(c1, c2)
    with output.scratch((1000,), np.dtype("float64")):
        pass
    assert sum(b.nbytes for b in output._idle) <= 3000  # the 8000-byte buffer was not kept
    with output.scratch((2,), np.dtype(object)) as objects:
        assert objects.dtype == object


def test_scratch_is_safe_across_threads():
    results = []

    def work(seed):
        for _ in range(50):
            with output.scratch((64,), np.dtype("int64")) as a:
                a[...] = seed
                results.append(bool((a == seed).all()))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results) and len(results) == 200


# -- whole chunks decoded into reused buffers (unsharded arrays, v2 and v3) -------------
@settings(max_examples=60, deadline=None)
@given(fmt=st.sampled_from([2, 3]), compressor=st.sampled_from(["zstd", "blosc", "gzip", None]),
       dtype=st.sampled_from(["uint8", "int16", "float32", ">f8"]), order=st.sampled_from(["C", "F"]),
       shape=st.lists(st.integers(1, 7), min_size=0, max_size=3), seed=st.integers(0, 2**16), data=st.data())
def test_chunks_decoded_into_scratch_read_back_exactly(fmt, compressor, dtype, order, shape, seed, data):
    """Unsharded arrays of 0 to 3 dimensions (a 0-d chunk is an array, not an element)."""
    shape = tuple(shape)
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    if fmt == 3:
        dtype = dtype.replace(">", "")
        codecs = {"zstd": [ZSTD], "blosc": [{"name": "blosc", "configuration": {"cname": "zstd", "clevel": 1,
                                                                                   "shuffle": "bitshuffle"}}],
                  "gzip": [GZIP], None: []}[compressor]
        reverse = _transpose(tuple(reversed(range(len(shape))))) if order == "F" and shape else None
        kwargs = dict(compressors=codecs or None, filters=[reverse] if reverse else None)
    else:
        configs = {"zstd": {"id": "zstd", "level": 1}, "blosc": {"id": "blosc", "cname": "lz4", "clevel": 1,
                                                                  "shuffle": 1}, "gzip": {"id": "gzip", "level": 1},
                   None: None}
        kwargs = dict(compressors=configs[compressor], order=order)
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=shape, dtype=dtype, chunks=chunks, zarr_format=fmt, **kwargs)
    values = _values(np.random.default_rng(seed), dtype, shape, False)
    a[...] = values
    for threads in (None, 1):
        got = np.asarray(zarrdask.open_array(store, threads=threads)[...])  # (0-d: a scalar, as numpy's [()])
        assert got.shape == shape and got.astype(values.dtype).tobytes() == values.tobytes()  # (v2 '>f8': native)
    window = tuple(slice(n // 3, n - n // 3) for n in shape)
    part = np.asarray(zarrdask.open_array(store)[window])
    assert part.astype(values.dtype).tobytes() == values[(*window, ...)].tobytes()
    # each chunk alone (a dask block): whole ones decoded straight into the result, those the edge cuts via scratch
    reader = zarrdask.open_array(store)
    for coords in itertools.product(*(range(-(-n // c)) for n, c in zip(shape, chunks))):
        region = tuple(slice(k * c, min((k + 1) * c, n)) for k, c, n in zip(coords, chunks, shape))
        got = np.asarray(reader[region])
        assert got.astype(values.dtype).tobytes() == values[(*region, ...)].tobytes(), region


@pytest.mark.parametrize("fmt", [2, 3])
def test_a_whole_chunk_is_decoded_straight_into_the_result(fmt, monkeypatch):
    """A read of whole chunks into a C-contiguous part of its result (a dask block of one
    chunk) decodes into the result: no scratch buffer, no copy; a part of a chunk (or a chunk
    cut by the edge) is decoded into scratch and copied."""
    store = MemoryStore()
    compressors = {"id": "zstd", "level": 1} if fmt == 2 else [ZSTD]
    a = zarrdask.create_array(store, shape=(8, 6), chunks=(4, 4), dtype="int32", zarr_format=fmt,
                              compressors=compressors)
    values = np.arange(48, dtype="int32").reshape(8, 6)
    a[...] = values
    used = []
    original = output.scratch

    def counted(shape, dtype):
        used.append(shape)
        return original(shape, dtype)

    monkeypatch.setattr(chunks_module, "scratch", counted)
    reader = zarrdask.open_array(store, threads=1)
    assert (reader[4:8, 0:4] == values[4:8, 0:4]).all() and used == []
    assert (reader[0:4, 0:3] == values[0:4, 0:3]).all() and used == [(1, 4, 4)]
    assert (reader[0:4, 4:6] == values[0:4, 4:6]).all() and used == [(1, 4, 4)] * 2  # (the edge cuts the chunk)


def test_decodes_into_only_where_the_chain_allows():
    spec = ChunkSpec((3, 5), parse_data_type_v3("float32"), 0)
    chains = {True: [[BYTES_LE, ZSTD], [BYTES_LE, ZSTD, CRC]], False: [[BYTES_LE], [BYTES_BE, ZSTD],
                                                                       [_transpose((1, 0)), BYTES_LE, ZSTD]]}
    for expected, listed in chains.items():
        for chain in listed:
            named = [parse_named_config(c, ("codecs", i), []) for i, c in enumerate(chain)]
            assert CodecPipeline.from_metadata(named, spec).decodes_into is expected, chain


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("value", [np.array(b"foobar"), np.array("foobar"), np.array(1.5e9)])
def test_zero_dimensional_chunks_read_back_as_arrays(fmt, value):
    """A 0-d chunk decoded into scratch is placed as a 0-d array (once an element slipped
    through, which bytes and str values could not be indexed as); the read returns the
    value as a scalar, as numpy's ``a[()]`` and zarr-python do."""
    store = MemoryStore()
    compressors = {"id": "zstd", "level": 1} if fmt == 2 else [ZSTD]
    a = zarrdask.create_array(store, shape=(), dtype=value.dtype, zarr_format=fmt, compressors=compressors)
    a[...] = value
    got = zarrdask.open_array(store)[...]
    assert np.ndim(got) == 0 and np.asarray(got).dtype == value.dtype
    assert np.asarray(got).tobytes() == value.tobytes()


@pytest.mark.parametrize("cache_bytes", [0, 1 << 20])
def test_a_sharded_0d_array_reads_its_fill_value_and_what_was_written(cache_bytes):
    """A 0-d array in one shard of one inner chunk: its shard's part of the output is the
    whole 0-d output, a view (once it was numpy's scalar ``out[()]``, which a read could not
    write into), through the plain and the cached reads and through Dask."""
    store = MemoryStore()
    zarrdask.create_array(store, shape=(), dtype="int32", chunks=(), shards=(), fill_value=3)
    a = zarrdask.open_array(store, mode="r+", cache_bytes=cache_bytes)
    assert a[...] == 3 and a[()] == 3
    a[...] = 7
    assert a[...] == 7 and zarrdask.open_array(store, cache_bytes=cache_bytes)[()] == 7
    assert zarrdask.from_zarr(a).compute() == 7
