"""Selections of slices projected onto chunks (``OrthogonalSelection.project``) and the
sharded reads built on them give exactly what numpy indexing gives (hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.indexing import basic_selection
from zarrdask.storage.memory import MemoryStore

SETTINGS = settings(derandomize=True, deadline=None, max_examples=150, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def basic_cases(draw, max_dims=3, max_side=12):
    """(shape, chunk shape, a basic selection of ints / slices with any step / Ellipsis)."""
    ndim = draw(st.integers(0, max_dims))
    shape = tuple(draw(st.integers(0, max_side)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, max(1, s) + 2)) for s in shape)
    sel = []
    for n in shape:
        if n and draw(st.booleans()):
            sel.append(draw(st.integers(-n, n - 1)))
        else:
            bound = st.none() | st.integers(-n - 3, n + 3)
            sel.append(slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 4))))
    if sel and draw(st.booleans()):
        cut = draw(st.integers(0, len(sel) - 1))
        sel = sel[:cut] + [Ellipsis]
    return shape, chunks, tuple(sel)


def _chunk(data: np.ndarray, coords: tuple[int, ...], chunks: tuple[int, ...]) -> np.ndarray:
    return data[tuple(slice(k * c, (k + 1) * c) for k, c in zip(coords, chunks))]


@SETTINGS
@given(basic_cases())
def test_projections_of_slices_reassemble_the_numpy_selection(case):
    shape, chunks, sel = case
    data = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    selection, out_shape = basic_selection(sel, shape)
    assert selection.is_basic
    out = np.full(selection.shape, -1, dtype=np.int64)
    written = np.zeros(selection.shape, dtype=np.int64)
    for block in selection.project(chunks):
        chunk = _chunk(data, block.coords, chunks)
        assert block.extent == chunk.shape
        piece = chunk[block.chunk_index]
        covered = piece.shape == chunk.shape
        assert covered or not block.full  # "full" is never claimed for a partly covered chunk
        if all(s.step == 1 for s in block.chunk_index):
            assert block.full == covered  # and with unit steps it is exact
        out[block.out_index] = piece
        written[block.out_index] += 1
    assert (written == 1).all()  # every output element comes from exactly one chunk
    np.testing.assert_array_equal(out.reshape(out_shape), data[sel])


@st.composite
def sharded_cases(draw):
    """A sharded array (some inner chunks left at the fill value, so not stored) and windows."""
    ndim = draw(st.integers(1, 3))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    shape = tuple(draw(st.integers(1, 3 * s + 2)) for s in shards)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    data = rng.integers(1, 100, size=shape).astype("float32")
    for coords in itertools.product(*(range(-(-n // c)) for n, c in zip(shape, chunks))):
        if rng.random() < 0.3:  # an absent inner chunk
            data[tuple(slice(k * c, (k + 1) * c) for k, c in zip(coords, chunks))] = 0
    windows = []
    for _ in range(draw(st.integers(1, 6))):
        window = []
        for n in shape:
            start = draw(st.integers(0, n - 1))
            stop = draw(st.integers(start, n))
            window.append(start if draw(st.booleans()) else slice(start, stop, draw(st.integers(1, 3))))
        windows.append(tuple(window))
    return chunks, shards, data, windows


@SETTINGS
@given(sharded_cases())
def test_sharded_window_reads_match_numpy(case):
    """Window reads, shard indexes first fetched then served from the cache, equal numpy."""
    chunks, shards, data, windows = case
    store = MemoryStore()
    arr = zarrdask.create_array(store, shape=data.shape, dtype=data.dtype, chunks=chunks, shards=shards,
                                fill_value=0)
    arr[...] = data
    arr = zarrdask.open_array(store)
    for _ in range(2):  # cold shard indexes, then cached ones
        for window in windows:
            np.testing.assert_array_equal(arr[window], data[window])
