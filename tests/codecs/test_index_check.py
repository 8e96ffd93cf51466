"""The shard-index check agrees with a plain Python reference of the spec's rules on
generated indexes: ``ShardIndex.parse`` wraps the table, each entry is checked when it is
looked up (``locate``/``spans``: a read pays for the entries it uses, as the peers check
them) and ``check`` checks them all (``verify``). It passes the layouts writers produce
(chunks sharing bytes too, as zarr-python and TensorStore read them), and ``locate``
answers every valid entry as the table says. An index decoded straight to its bytes (the
chain only views them) is the table its array decode gives, for every index chain."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.codecs.sharding import MISSING
from zarrdask.codecs.sharding import ShardIndex
from zarrdask.errors import CorruptChunkError
from zarrdask.storage import MemoryStore

SETTINGS = settings(derandomize=True, deadline=None, max_examples=400, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
MAX = 2**64 - 1


def _codec(n_inner: int, location: str):
    """A validated sharding codec of a 1-d shard with ``n_inner`` inner chunks."""
    arr = zarrdask.create_array(MemoryStore(), shape=(n_inner,), dtype="uint8", chunks=(1,),
                                shards=(n_inner,), compressors=None)
    codec = arr.units.pipeline.array_bytes
    if location == "start":
        codec = type(codec)(codec.chunk_shape, codec.codecs, codec.index_codecs, "start").validate(
            arr.units.spec, ())
    return codec


@st.composite
def indexes(draw):
    """Packed layouts in any order, then disturbed: absent entries, zero, huge or shifted
    sizes and offsets, duplicates (overlaps), offsets into the index or near 2**64."""
    n = draw(st.integers(1, 8))
    location = draw(st.sampled_from(["end", "start"]))
    sizes = draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    start = 16 * n + 4 if location == "start" else 0
    entries = [[0, 0] for _ in range(n)]
    offset = start
    for i in order:
        entries[i] = [offset, sizes[i]]
        offset += sizes[i] + draw(st.sampled_from([0, 0, 3]))
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, n - 1))
        kind = draw(st.sampled_from(["missing", "size", "offset", "copy", "huge"]))
        if kind == "missing":
            entries[i] = [MAX, draw(st.sampled_from([MAX, 0, 5]))]
        elif kind == "size":
            entries[i][1] = draw(st.sampled_from([0, 1, entries[i][1] + 1, MAX, MAX - entries[i][0]]))
        elif kind == "offset":
            entries[i][0] = draw(st.sampled_from([0, 1, start - 1, entries[i][0] + 1, entries[i][0] - 1, MAX - 1]))
        elif kind == "copy":
            entries[i] = list(entries[draw(st.integers(0, n - 1))])
        else:
            entries[i] = [MAX - draw(st.integers(1, 60)), draw(st.integers(0, 80))]
    return location, np.array([[min(max(v, 0), MAX) for v in e] for e in entries], dtype=np.uint64)


def _entry_valid(offset: int, size: int, data_start: int, data_end: int | None) -> bool:
    """The rule for one entry: absent (offset 2**64-1), or inside ``[data_start, data_end)``
    without passing 2**64. Entries may share bytes."""
    return offset == MAX or (data_start <= offset and offset + size <= (MAX if data_end is None else data_end))


def _reference_valid(index: np.ndarray, data_start: int, data_end: int | None) -> bool:
    return all(_entry_valid(int(o), int(n), data_start, data_end) for o, n in index.reshape(-1, 2))


def _parses(codec, index: np.ndarray, shard_size: int | None = None) -> bool:
    """Whether ``check`` accepts the index; every entry's lookup raises exactly when the
    reference says the entry is invalid, and otherwise answers as the table says."""
    data_end = None if shard_size is None else shard_size - (codec.index_size if codec.index_location == "end" else 0)
    data_start = codec.index_size if codec.index_location == "start" else 0
    parsed = ShardIndex.parse(index, codec.grid_shape, data_start, data_end, "c/0")
    table = index.reshape(-1, 2)
    for pos in range(len(parsed)):
        off, size = int(table[pos, 0]), int(table[pos, 1])
        if not _entry_valid(off, size, data_start, data_end):
            with pytest.raises(CorruptChunkError, match=rf"shard c/0: index entry for inner chunk \({pos},\)"):
                parsed.locate(pos)
            continue
        assert parsed.locate(pos) == (None if off == MAX else (off, off + size))
    try:
        parsed.check()
    except CorruptChunkError as exc:
        assert "shard c/0" in str(exc)
        return False
    return True


@SETTINGS
@given(indexes(), st.one_of(st.none(), st.integers(0, 600)))
def test_check_agrees_with_the_reference(case, shard_size):
    """``parse`` accepts exactly the indexes the reference does, and never changes the table."""
    location, index = case
    codec = _codec(len(index), location)
    data_start = codec.index_size if location == "start" else 0
    data_end = None if shard_size is None else shard_size - (codec.index_size if location == "end" else 0)
    if data_end is not None and data_end < 0:
        return
    valid = _reference_valid(index, data_start, data_end)
    before = index.copy()
    assert _parses(codec, index, shard_size) == valid
    assert (index == before).all()  # (the table is read, never changed)


@SETTINGS
@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=64), st.randoms(use_true_random=False),
       st.sets(st.integers(0, 63)), st.sampled_from(["end", "start"]))
def test_check_passes_written_layouts(sizes, rnd, absent, location):
    """Any order of back-to-back chunks (zarr-python writes Morton order), some absent."""
    codec = _codec(len(sizes), location)
    order = list(range(len(sizes)))
    rnd.shuffle(order)
    index = np.full((len(sizes), 2), MISSING, dtype=np.uint64)
    offset = codec.index_size if location == "start" else 0
    for i in order:
        if i not in absent:
            index[i] = (offset, sizes[i])
            offset += sizes[i]
    assert _parses(codec, index)
    assert _parses(codec, index, offset + (codec.index_size if location == "end" else 0))


@pytest.mark.parametrize("entries", [
    [[MAX - 4, 8]],  # runs past 2**64
    [[3, MAX]],
])
def test_corrupt_indexes_are_rejected(entries):
    assert not _parses(_codec(len(entries), "end"), np.array(entries, dtype=np.uint64))


@pytest.mark.parametrize("entries", [
    [[0, 10], [0, 10]],  # two chunks share their bytes (a deduplicating writer)
    [[0, 10], [5, 10]],  # overlapping
    [[0, 10], [5, 0], [10, 4]],  # an empty entry inside another
])
def test_shared_bytes_are_accepted(entries):
    assert _parses(_codec(len(entries), "end"), np.array(entries, dtype=np.uint64), 20 + 16 * len(entries) + 4)


def test_offsets_into_a_leading_index_are_rejected():
    codec = _codec(2, "start")
    index = np.array([[codec.index_size - 1, 4], [codec.index_size + 3, 4]], dtype=np.uint64)
    assert not _parses(codec, index)


def test_build_lays_out_chunks_back_to_back():
    built = ShardIndex.build({(1,): 5, (0,): 3}, (3,), 10)
    assert [built.locate(p) for p in range(3)] == [(10, 13), (13, 18), None]


@SETTINGS
@given(st.integers(1, 80), st.data())
def test_lookups_of_many_entries_check_them_as_one_lookup_does(n, data):
    """A lookup of many entries (a shard read whole) checks the whole index in one pass:
    it raises for the same first bad entry as looking each up would, and answers the same.
    A lookup of chosen entries (a partial read) checks those only, in the order given."""
    codec = _codec(n, "end")
    index = np.array([[16 * i, 16] for i in range(n)], dtype=np.uint64)
    for i in data.draw(st.lists(st.integers(0, n - 1), max_size=3)):
        index[i] = data.draw(st.sampled_from([[MAX, MAX], [MAX - 3, 8], [16 * n, 1], [0, 16 * n + 1]]))
    data_end = 16 * n
    one_by_one = ShardIndex.parse(index, codec.grid_shape, 0, data_end, "c/0")
    first_bad = next((p for p in range(n) if not _entry_valid(int(index[p, 0]), int(index[p, 1]), 0, data_end)), None)
    whole = ShardIndex.parse(index, codec.grid_shape, 0, data_end, "c/0")
    positions = data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n))
    bad_looked_up = next((p for p in positions if not _entry_valid(int(index[p, 0]), int(index[p, 1]), 0, data_end)),
                         None)
    picked = ShardIndex.parse(index, codec.grid_shape, 0, data_end, "c/0")
    if bad_looked_up is None:  # (a lookup checks the entries it looks up, whatever the others hold)
        assert picked.lookup(positions) == [one_by_one.locate(p) for p in positions]
    else:
        with pytest.raises(CorruptChunkError, match=rf"inner chunk \({bad_looked_up},\)"):
            picked.lookup(positions)
    if first_bad is None:
        assert whole.spans(0, n) == [one_by_one.locate(p) for p in range(n)]
        return
    with pytest.raises(CorruptChunkError, match=rf"inner chunk \({first_bad},\)"):
        whole.spans(0, n)
    with pytest.raises(CorruptChunkError, match=rf"inner chunk \({first_bad},\)"):
        one_by_one.locate(first_bad)


def test_a_lookup_of_many_chosen_entries_leaves_the_others_unchecked():
    """A partial read of many inner chunks of a shard whose index holds a bad entry it does
    not use reads them, as zarr-python and TensorStore do; the bad entry is named when used."""
    n = 64
    codec = _codec(n, "end")
    index = np.array([[16 * i, 16] for i in range(n)], dtype=np.uint64)
    index[n - 1] = [16 * n, 16]  # (past the data region)
    parsed = ShardIndex.parse(index, codec.grid_shape, 0, 16 * (n - 1) + 8, "c/0")
    assert parsed.lookup(list(range(40))) == [(16 * i, 16 * i + 16) for i in range(40)]
    with pytest.raises(CorruptChunkError, match=rf"inner chunk \({n - 1},\)"):
        parsed.lookup([3, n - 1, 5])


@settings(max_examples=60, deadline=None)
@given(grid=st.lists(st.integers(1, 5), min_size=1, max_size=3), endian=st.sampled_from(["little", "big"]),
       crc=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_an_index_decoded_to_bytes_is_its_decoded_table(grid, endian, crc, seed):
    """``decode_to_bytes`` (the bytes stage's output itself where the chain only views it)
    gives the bytes of the array ``decode`` gives, for every index chain: little or big
    endian, with or without a checksum, any grid; and parses to the same index."""
    from zarrdask.codecs.base import ChunkSpec
    from zarrdask.codecs.bytes import BytesCodec
    from zarrdask.codecs.crc32c import Crc32cCodec
    from zarrdask.codecs.pipeline import CodecPipeline
    from zarrdask.metadata.dtypes import data_type_from_numpy

    shape = (*grid, 2)
    table = np.random.default_rng(seed).integers(0, 2**64 - 1, size=shape, dtype=np.uint64, endpoint=True)
    codecs = [BytesCodec(endian), *([Crc32cCodec()] if crc else [])]
    pipeline = CodecPipeline(codecs, ChunkSpec(shape, data_type_from_numpy("uint64"), MISSING))
    stored = bytes(pipeline.encode(table))
    got = bytes(pipeline.decode_to_bytes(stored))
    assert got == np.ascontiguousarray(pipeline.decode(stored)).tobytes() == table.tobytes()
    by_bytes = ShardIndex.parse(pipeline.decode_to_bytes(stored), tuple(grid), 0, None, "c/0")
    by_array = ShardIndex.parse(pipeline.decode(stored), tuple(grid), 0, None, "c/0")
    assert by_bytes._entries == by_array._entries
