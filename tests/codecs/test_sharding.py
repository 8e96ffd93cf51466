"""sharding_indexed: request counts, the index cache, writes, and corruption detection."""

from __future__ import annotations

import numpy as np
import pytest

from _util import CountingStore

import zarrdask
from zarrdask.errors import ChecksumError, CorruptChunkError, ZarrdaskError
from zarrdask.storage import MemoryStore
from zarrdask.storage.base import ByteRange, SuffixRange


DATA = np.arange(64 * 64, dtype="int32").reshape(64, 64)


@pytest.fixture(params=["end", "start"])
def sharded(request: pytest.FixtureRequest) -> tuple[zarrdask.Array, CountingStore]:
    store = CountingStore(MemoryStore())
    codecs = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [8, 8],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": request.param}}]
    a = zarrdask.create_array(store, shape=(64, 64), dtype="int32", chunks=(32, 32), codecs=codecs)
    a[...] = DATA
    a = zarrdask.open_array(store, mode="r+")
    store.reset()
    return a, store


def test_chunks_and_shards_properties(sharded):
    a, _ = sharded
    assert a.chunks == (8, 8) and a.shards == (32, 32) and a.unit_grid[0].extents() == (32, 32)
    plain = zarrdask.create_array(MemoryStore(), shape=(10,), dtype="i1", chunks=(5,))
    assert plain.shards is None and plain.chunks == (5,)


def test_one_inner_chunk_cold_then_cached(sharded):
    a, store = sharded
    assert np.array_equal(a[0:8, 8:16], DATA[0:8, 8:16])
    assert store.reads == 2  # index + chunk
    kinds = [type(r) for _, r in store.calls[0]]
    assert kinds == [SuffixRange if a.metadata.codecs[0].configuration["index_location"] == "end" else ByteRange]
    store.reset()
    assert np.array_equal(a[1:3, 9:12], DATA[1:3, 9:12])
    assert store.reads == 1  # the index comes from the cache


def test_whole_shard_is_one_read(sharded):
    a, store = sharded
    assert np.array_equal(a[32:64, 0:32], DATA[32:64, 0:32])
    assert store.reads == 1
    assert len(store.requests) == 1
    assert store.requests[0][1] in (None, ByteRange(0, None))  # the whole value, no range


def test_adjacent_inner_chunks_are_coalesced(sharded):
    a, store = sharded
    assert np.array_equal(a[0:8, 0:32], DATA[0:8, 0:32])  # 4 inner chunks side by side
    assert store.reads == 2
    data_requests = store.calls[1]
    assert len(data_requests) == 1  # one merged range for the 4 chunks


def test_many_shards_batch_index_and_data_requests(sharded):
    a, store = sharded
    assert np.array_equal(a[4:60, 4:60], DATA[4:60, 4:60])  # partial reads of all 4 shards
    assert store.reads == 2
    assert len(store.calls[0]) == 4  # one index request per shard, in one call


def test_write_invalidates_index_cache(sharded):
    a, store = sharded
    a[0:8, 0:8]  # caches the index of shard (0, 0)
    a[0:4, 0:4] = -1
    expected = DATA.copy()
    expected[0:4, 0:4] = -1
    assert np.array_equal(a[0:8, 0:8], expected[0:8, 0:8])
    assert np.array_equal(zarrdask.open_array(store)[...], expected)


def test_partial_write_keeps_other_inner_chunks_bytes(sharded):
    a, store = sharded
    key = "c/0/0"
    before = store.inner.get(key)
    a[0, 0] = 7
    after = store.inner.get(key)
    assert before != after
    b = zarrdask.open_array(store)
    expected = DATA.copy()
    expected[0, 0] = 7
    assert np.array_equal(b[...], expected)


def test_empty_inner_chunks_are_skipped_and_empty_shards_deleted(sharded):
    a, store = sharded
    a[0:8, 0:8] = 0  # the fill value: that inner chunk is removed from the shard
    assert store.inner.exists("c/0/0")
    a[0:32, 0:32] = 0
    assert not store.inner.exists("c/0/0")
    assert np.array_equal(a[0:32, 0:32], np.zeros((32, 32), "int32"))
    full = a.with_options(write_empty_chunks=True)
    full[0:32, 0:32] = 0
    assert store.inner.exists("c/0/0")


def test_partial_edge_shards_and_missing_inner_chunks():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(50, 37), dtype="float64", chunks=(8, 8), shards=(16, 16),
                              fill_value=float("nan"))
    data = np.full((50, 37), np.nan)
    data[5:45:3, 2:30:2] = np.arange(14 * 14).reshape(14, 14)
    a[...] = data
    np.testing.assert_array_equal(zarrdask.open_array(store)[...], data)
    np.testing.assert_array_equal(a[40:50, 30:37], data[40:50, 30:37])


def test_nested_sharding_round_trip():
    inner = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "index_location": "start"}}
    outer = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 4], "codecs": [inner, {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, "crc32c"]}}
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(10, 9), dtype="int16", chunks=(8, 8), codecs=[outer])
    data = np.arange(90, dtype="int16").reshape(10, 9)
    a[...] = data
    b = zarrdask.open_array(store)
    np.testing.assert_array_equal(b[...], data)
    np.testing.assert_array_equal(b[3:7, 1:8], data[3:7, 1:8])


# -- corruption ------------------------------------------------------------------------------


def _corrupt_array(index_location: str = "end", crc: bool = True) -> tuple[zarrdask.Array, MemoryStore]:
    store = MemoryStore()
    index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}] + (["crc32c"] if crc else [])
    codecs = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, "crc32c"],
        "index_codecs": index_codecs, "index_location": index_location}}]
    a = zarrdask.create_array(store, shape=(16,), dtype="uint8", chunks=(16,), codecs=codecs)
    a[...] = np.arange(1, 17, dtype="uint8")
    return a, store


def _read_fresh(store: MemoryStore, sel: object = Ellipsis) -> np.ndarray:
    return zarrdask.open_array(store)[sel]


def test_truncated_shard_whole_read():
    _, store = _corrupt_array()
    store.set("c/0", store.get("c/0")[:-10])
    with pytest.raises(CorruptChunkError, match="c/0"):
        _read_fresh(store)


def test_truncated_shard_partial_read_names_inner_chunk():
    _, store = _corrupt_array(index_location="start")
    store.set("c/0", store.get("c/0")[:-3])
    with pytest.raises(CorruptChunkError, match=r"c/0.*\(3,\)|\(3,\).*c/0"):
        _read_fresh(store, slice(12, 16))


def test_corrupt_inner_chunk_in_a_batch_names_its_shard_and_chunk():
    """A partial read decodes the inner chunks of several shards in one batch: the error
    names the shard and inner chunk that failed, not the batch's first."""
    store = MemoryStore()
    codecs = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, "crc32c"]}}]
    a = zarrdask.create_array(store, shape=(32,), dtype="uint8", chunks=(16,), codecs=codecs)
    a[...] = np.arange(1, 33, dtype="uint8")
    raw = bytearray(store.get("c/1"))
    raw[2 * 8 + 1] ^= 0xFF  # inner chunk (2,) of shard c/1: 4 values + 4 checksum bytes each
    store.set("c/1", bytes(raw))
    b = zarrdask.open_array(store)
    np.testing.assert_array_equal(b[1:15], np.arange(2, 16, dtype="uint8"))  # shard c/0 only: intact
    with pytest.raises(CorruptChunkError, match=r"c/1.*\(2,\)"):
        b[1:31]


def _stored_index(store) -> np.ndarray:
    """Shard c/0's index (4 entries at the end, no checksum), as a writable array."""
    return np.frombuffer(store.get("c/0")[-64:], dtype="<u8").copy().reshape(4, 2)


def _store_index(store, index: np.ndarray) -> None:
    store.set("c/0", store.get("c/0")[:-64] + index.astype("<u8").tobytes())


def test_index_pointing_past_the_end():
    _, store = _corrupt_array(crc=False)
    index = _stored_index(store)
    index[2, 0] = 10_000
    _store_index(store, index)
    with pytest.raises(CorruptChunkError, match=r"c/0.*\(2,\)"):
        _read_fresh(store)
    with pytest.raises(CorruptChunkError, match=r"c/0.*\(2,\)"):
        _read_fresh(store, slice(8, 10))


def test_index_entries_sharing_bytes_read_as_they_point():
    """Chunk 1 shares chunk 0's bytes and chunk 2 chunk 3's (the spec does not forbid it; the
    peers read such shards as the entries say: tests/interop/test_shared_shard_bytes.py)."""
    _, store = _corrupt_array(crc=False)
    index = _stored_index(store)
    index[1], index[2] = index[0], index[3]
    _store_index(store, index)
    np.testing.assert_array_equal(_read_fresh(store), [1, 2, 3, 4, 1, 2, 3, 4, 13, 14, 15, 16, 13, 14, 15, 16])
    np.testing.assert_array_equal(_read_fresh(store, slice(5, 10)), [2, 3, 4, 13, 14])


def test_index_checksum_mismatch():
    _, store = _corrupt_array()
    raw = bytearray(store.get("c/0"))
    raw[-5] ^= 0xFF  # inside the index, before its crc32c
    store.set("c/0", bytes(raw))
    with pytest.raises(ChecksumError, match=r"c/0.*index"):
        _read_fresh(store, slice(0, 2))


def test_inner_chunk_checksum_mismatch_names_shard_and_inner_chunk():
    _, store = _corrupt_array()
    raw = bytearray(store.get("c/0"))
    raw[9] ^= 0xFF  # a byte of inner chunk (1,)
    store.set("c/0", bytes(raw))
    with pytest.raises(ChecksumError, match=r"c/0.*\(1,\)"):
        _read_fresh(store)
    assert np.array_equal(_read_fresh(store, slice(8, 16)), np.arange(9, 17, dtype="uint8"))


def test_bad_shard_configuration_is_rejected():
    store = MemoryStore()
    with pytest.raises(ZarrdaskError, match="evenly|multiples"):
        zarrdask.create_array(store, shape=(10,), dtype="i4", chunks=(3,), shards=(10,))
    bad = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip"}]}}]
    with pytest.raises(ZarrdaskError, match="index_codecs"):
        zarrdask.create_array(store, shape=(10,), dtype="i4", chunks=(4,), codecs=bad)
