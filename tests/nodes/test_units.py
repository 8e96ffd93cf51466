"""The stored units behind ``Array.units`` (``zarrdask/nodes/units/``): the kind chosen from
the codec chain, key listing, statistics against a count from the values themselves, the
bytes stage after the sharding codec in both directions, deletes that drop cached indexes,
one open per shard file for a partial read, ranges merged across a gap where the store makes
it pay, the check of one unit, and the two ways whole units are fetched giving the same
values."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _util import CountingStore

import zarrdask
from zarrdask.nodes.units.chunks import PlainChunkSource
from zarrdask.nodes.units.shards import ShardedChunkSource
from zarrdask.indexing import basic_selection
from zarrdask.metadata.grid import all_chunk_coords
from zarrdask.storage.base import ByteRange
from zarrdask.storage.memory import MemoryStore

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
CRC = {"name": "crc32c"}


def _sharded(inner: list[dict], after: list[dict] | None = None, before: list[dict] | None = None) -> list[dict]:
    shard = {"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": inner}}
    return [*(before or []), shard, *(after or [])]


CHAINS = {
    "chunks": [BYTES, CRC],
    "shards": _sharded([BYTES, CRC]),
    "shards, crc32c after": _sharded([BYTES, CRC], after=[CRC]),
    "shards, transposed": _sharded([BYTES, CRC], before=[{"name": "transpose", "configuration": {"order": [1, 0]}}]),
}


def _array(chain: str, store: MemoryStore | None = None) -> zarrdask.Array:
    chunks = (6, 6) if chain != "chunks" else (2, 3)
    return zarrdask.create_array(store or MemoryStore(), shape=(11, 13), dtype="int32", chunks=chunks,
                                 codecs=CHAINS[chain], fill_value=0)


def test_kind_follows_the_declared_chain() -> None:
    for chain, kind, shards in [("chunks", PlainChunkSource, None), ("shards", ShardedChunkSource, (6, 6)),
                                ("shards, crc32c after", ShardedChunkSource, (6, 6)),
                                ("shards, transposed", ShardedChunkSource, (6, 6))]:
        units = _array(chain).units
        assert type(units) is kind and units.shards == shards, chain
    scaled = _sharded([BYTES], before=[{"name": "numcodecs.fixedscaleoffset",
                                        "configuration": {"offset": 0, "scale": 1, "dtype": "<i4"}}])
    a = zarrdask.create_array(MemoryStore(), shape=(11, 13), dtype="int32", chunks=(6, 6), codecs=scaled)
    # array->array codecs that do more than permute axes: shards decoded whole, still shards
    assert type(a.units) is PlainChunkSource and a.units.shards == (6, 6) == a.units.read_shape


def _expected_stored(values: np.ndarray, read_shape: tuple[int, ...], rows: slice = slice(None),
                     cols: slice = slice(None)) -> int:
    """Chunks overlapping ``values[rows, cols]`` that hold a value other than the fill
    value (0): the ones a write stores."""
    (r0, r1, _), (c0, c1, _) = rows.indices(values.shape[0]), cols.indices(values.shape[1])
    count = 0
    for i in range(r0 // read_shape[0] * read_shape[0], r1, read_shape[0]):
        for j in range(c0 // read_shape[1] * read_shape[1], c1, read_shape[1]):
            count += bool(values[i: i + read_shape[0], j: j + read_shape[1]].any())
    return count


regions = st.tuples(st.integers(0, 10), st.integers(1, 11), st.integers(0, 12), st.integers(1, 13))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=st.sampled_from(sorted(CHAINS)), writes=st.lists(st.tuples(regions, st.integers(0, 3)), max_size=4))
def test_statistics_and_keys_agree_with_the_values(chain: str, writes: list) -> None:
    a = _array(chain)
    expected = np.zeros(a.shape, dtype="int32")
    for (r0, n0, c0, n1), value in writes:
        region = (slice(r0, r0 + n0), slice(c0, c0 + n1))
        a[region] = value
        expected[region] = value
    np.testing.assert_array_equal(a[...], expected)
    units = a.units
    stats = a.storage_statistics()
    read_shape = units.read_shape
    assert stats.chunks_total == a.nchunks
    assert stats.chunks_stored == a.nchunks_initialized == _expected_stored(expected, read_shape)
    keys = {units.key(c): c for c in all_chunk_coords(units.grid)}
    stored = units.stored_keys()
    assert stored <= keys.keys() and stored == {k for k in units.store.list_prefix("") if k in keys}
    unit = units.shards or read_shape
    for key in keys.keys() - stored:  # no unit left unstored that holds data
        i, j = keys[key]
        assert not expected[i * unit[0]: (i + 1) * unit[0], j * unit[1]: (j + 1) * unit[1]].any()
    selection, _ = basic_selection((slice(0, 4), slice(3, 9)), a.shape)
    assert units.statistics(selection).chunks_stored == _expected_stored(expected, read_shape, slice(0, 4),
                                                                         slice(3, 9))


def test_bytes_stage_after_sharding_both_ways() -> None:
    store = MemoryStore()
    a = _array("shards, crc32c after", store)
    values = np.arange(11 * 13, dtype="int32").reshape(11, 13)
    a[...] = values
    a[2:5, 4:11] = -1  # read, modified, written back through the stage
    values[2:5, 4:11] = -1
    np.testing.assert_array_equal(zarrdask.open_array(store)[...], values)
    assert a.units.plan(basic_selection((slice(0, 1), slice(0, 1)), a.shape)[0]).units[0].whole
    assert a.storage_statistics().fully_stored


def test_delete_drops_cached_indexes() -> None:
    a = _array("shards")
    a[...] = 7
    assert a[0, 0] == 7  # a ranged read caches the shard's index
    a.units.delete([(0, 0)])
    assert a[0, 0] == 0 and a[...][:6, :6].sum() == 0
    assert a.units.key((0, 0)) not in a.units.stored_keys()


def test_a_partial_read_opens_each_shard_file_once(tmp_path, monkeypatch) -> None:
    """On local disk a shard's index and the chunks it points to are read on one descriptor
    (``Store.get_then``): a cold partial read opens each touched shard's file once, and a
    read with the indexes cached opens it once more."""
    path = str(tmp_path / "a.zarr")
    data = np.arange(16 * 16, dtype="int32").reshape(16, 16)
    zarrdask.create_array(path, shape=(16, 16), dtype="int32", chunks=(4, 4), shards=(8, 8))[...] = data
    a = zarrdask.open_array(path)
    opened: list[str] = []
    real = os.open
    monkeypatch.setattr(os, "open", lambda name, *args, **kw: opened.append(os.fspath(name)) or real(name, *args, **kw))
    window = (slice(2, 10), slice(3, 13))  # (four shards, each in part)
    for _ in range(2):
        opened.clear()
        assert np.array_equal(a[window], data[window])
        shards = [name for name in opened if f"{os.sep}c{os.sep}" in name]
        assert sorted(shards) == sorted(set(shards)) and len(shards) == 4


@pytest.mark.parametrize("is_local, gap, requests", [(True, None, 2), (False, None, 1), (True, 1 << 20, 1), (False, 0, 2)])
def test_chunk_ranges_are_merged_across_a_gap_where_it_pays(is_local: bool, gap: int | None, requests: int) -> None:
    """Two needed inner chunks 32 KiB apart in a shard: one request where a request costs a
    round trip (or ``coalesce_gap`` allows the gap), two on local disk, where a request costs
    about what copying 16 KiB does."""
    store = CountingStore(MemoryStore())
    store.is_local = is_local
    data = np.arange(4 * 4096, dtype="int32")
    zarrdask.create_array(store, shape=data.shape, dtype="int32", chunks=(4096,), shards=(4 * 4096,),
                          compressors=None)[...] = data  # (chunks of 16 KiB, stored as they are)
    a = zarrdask.open_array(store, coalesce_gap=gap)
    store.reset()
    assert np.array_equal(a[0:16384:12288], data[0:16384:12288])  # (chunks 0 and 3)
    assert len([r for _, r in store.requests if isinstance(r, ByteRange)]) == requests


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_check_unit_finds_a_flipped_byte(chain: str) -> None:
    store = MemoryStore()
    a = _array(chain, store)
    a[...] = 5
    assert a.units.check_unit((0, 0)) is None and a.units.carries_checksum
    key = a.units.key((0, 0))
    blob = bytearray(store.get(key))
    blob[1] ^= 0xFF
    store.set(key, bytes(blob))
    problem = zarrdask.open_array(store).units.check_unit((0, 0))
    assert problem is not None and key in problem


def test_carries_checksum_needs_one_on_the_data() -> None:
    a = zarrdask.create_array(MemoryStore(), shape=(4,), dtype="uint8", chunks=(2,), shards=(4,), compressors=None)
    assert not a.units.carries_checksum  # (the index's own crc32c does not count)


class _RemoteMemoryStore(MemoryStore):
    """A memory store that says it is not local, counting the whole values fetched as they arrive."""

    is_local = False
    arrivals = 0

    def _iter_ranges(self, requests):
        _RemoteMemoryStore.arrivals += len(requests)
        return super()._iter_ranges(requests)


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_whole_units_read_the_same_from_local_and_remote_stores(chain: str) -> None:
    """Local stores fetch and decode each unit on one thread; others decode units as they
    arrive: the values are the same, for one unit and for many."""
    store = MemoryStore()
    a = _array(chain, store)
    values = np.random.default_rng(0).integers(-5, 5, size=a.shape, dtype="int32")
    a[...] = values
    remote = _RemoteMemoryStore()
    for key in store.list_prefix(""):
        remote.set(key, store.get(key))
    b = zarrdask.open_array(remote)
    assert not b.units.store.is_local
    before = _RemoteMemoryStore.arrivals
    for region in [(slice(None), slice(None)), (slice(0, 6), slice(0, 6)), (slice(1, 9), slice(2, 13))]:
        np.testing.assert_array_equal(b[region], values[region])
        np.testing.assert_array_equal(a[region], values[region])
    assert _RemoteMemoryStore.arrivals > before


_LAYOUTS = [
    {"zarr_format": 3, "chunk_key_encoding": {"name": "default", "separator": "/"}},
    {"zarr_format": 3, "chunk_key_encoding": {"name": "default", "separator": "."}},
    {"zarr_format": 3, "chunk_key_encoding": {"name": "v2", "separator": "."}},
    {"zarr_format": 2, "chunk_key_encoding": {"name": "v2", "separator": "."}},
    {"zarr_format": 2, "chunk_key_encoding": {"name": "v2", "separator": "/"}},
    {"zarr_format": 3, "shards": (4, 6)},
]


@pytest.mark.parametrize("layout", _LAYOUTS, ids=["v3/", "v3.", "v3-v2.", "v2.", "v2/", "v3-sharded"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.lists(st.sampled_from(["c/1/2", "c/01/2", "c/5/0", "c/0/9", "c/1", "c/1/2/3", "1.2", "01.2", "5.0",
                                      "0.9", "1", "1/2", "c.1.2", "c1/2", "c/+1/2", "c/1/2/x", "x", "c/-1/0"]),
                     max_size=6),
       writes=st.lists(st.tuples(st.integers(0, 10), st.integers(0, 12)), max_size=5))
def test_stored_units_are_read_back_from_the_listing(layout: dict, junk: list[str], writes: list) -> None:
    """The stored units found in a listing through the key encoding's inverse (work per
    key listed) are those of the grid's own keys: other keys, out of range, spelled
    otherwise or of another depth, belong to no unit, and ``verify`` calls them orphans."""
    store: dict = {}
    a = zarrdask.create_array(store, shape=(11, 13), dtype="int32", chunks=(2, 3), fill_value=0, **layout)
    for i, j in writes:
        a[i, j] = 1
    for key in junk:
        store.setdefault(key, b"junk")
    units = a.units
    grid_keys = {units.key(c): c for c in all_chunk_coords(units.grid)}
    listed = list(units.store.list_prefix(""))
    assert {k: units.coords_of(k) for k in listed} == {k: grid_keys.get(k) for k in listed}
    assert units.stored_keys() == {k for k in listed if k in grid_keys}
    assert a.nshards_initialized in (None, len(units.stored_keys()))
    orphans = {f.key for f in zarrdask.verify(store).findings if f.kind == "orphan"}
    docs = {"zarr.json", ".zarray", ".zattrs"}
    assert orphans == {k for k in listed if k not in grid_keys and k not in docs}


def test_a_registered_key_encoding_without_an_inverse_is_read_by_its_keys() -> None:
    """An encoding registered with ``encode`` only: the stored units found by matching the
    grid's keys (every one of them)."""
    from zarrdask.metadata import grid as grid_module

    class Reversed:
        def encode(self, coords: tuple[int, ...]) -> str:
            return "r" + "_".join(map(str, coords[::-1]))

        def to_json(self) -> dict:
            return {"name": "test-reversed"}

    grid_module.register_chunk_key_encoding("test-reversed", lambda config, loc, problems: Reversed())
    try:
        store: dict = {}
        a = zarrdask.create_array(store, shape=(11, 13), dtype="int32", chunks=(2, 3), fill_value=0,
                                  chunk_key_encoding={"name": "test-reversed"})
        a[3, 7] = 5
        store["r9_9"] = b"junk"
        assert a.units.stored_keys() == {"r2_1"} and a.units.coords_of("r2_1") == (1, 2)
        assert a.units.coords_of("r9_9") is None and a[3, 7] == 5
    finally:
        del grid_module._KEY_ENCODINGS["test-reversed"]
