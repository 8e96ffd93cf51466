"""The cheap shard-index check of ranged reads (``_plainly_valid``) never passes an index
that ``ShardingCodec.check_index`` rejects, and passes the indexes writers produce."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.codecs.sharding import MISSING
from zarrdask.core.chunk_source import _plainly_valid
from zarrdask.errors import CorruptChunkError
from zarrdask.storage import MemoryStore

SETTINGS = settings(derandomize=True, deadline=None, max_examples=400, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
MAX = 2**64 - 1


def _codec(n_inner: int, location: str):
    """A validated sharding codec of a 1-d shard with ``n_inner`` inner chunks."""
    arr = zarrdask.create_array(MemoryStore(), shape=(n_inner,), dtype="uint8", chunks=(1,),
                                shards=(n_inner,), compressors=None)
    codec = arr._source.codec
    if location == "start":
        codec = type(codec)(codec.chunk_shape, codec.codecs, codec.index_codecs, "start").validate(
            arr._source.spec, ())
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


def _passes_full_check(codec, index: np.ndarray) -> bool:
    try:
        codec.check_index(index, None, "c/0")
    except CorruptChunkError:
        return False
    return True


@SETTINGS
@given(indexes())
def test_cheap_check_never_passes_what_the_full_check_rejects(case):
    location, index = case
    codec = _codec(len(index), location)
    data_start = codec.index_size if location == "start" else 0
    if _plainly_valid(index, data_start):
        assert _passes_full_check(codec, index)


@SETTINGS
@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=64), st.randoms(use_true_random=False),
       st.sets(st.integers(0, 63)), st.sampled_from(["end", "start"]))
def test_cheap_check_passes_written_layouts(sizes, rnd, absent, location):
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
    assert _plainly_valid(index, codec.index_size if location == "start" else 0)
    assert _passes_full_check(codec, index)


@pytest.mark.parametrize("entries", [
    [[0, 10], [5, 10]],  # overlap
    [[0, 10], [5, 0], [10, 4]],  # an empty entry inside another (check_index rejects it)
    [[MAX - 4, 8]],  # runs past 2**64
    [[3, MAX]],
])
def test_cheap_check_defers_corrupt_indexes(entries):
    index = np.array(entries, dtype=np.uint64)
    assert not _plainly_valid(index, 0)
    assert not _passes_full_check(_codec(len(entries), "end"), index)


def test_cheap_check_defers_offsets_into_a_leading_index():
    codec = _codec(2, "start")
    index = np.array([[codec.index_size - 1, 4], [codec.index_size + 3, 4]], dtype=np.uint64)
    assert not _plainly_valid(index, codec.index_size)
    assert not _passes_full_check(codec, index)
