"""Writes of small items stay on the calling thread (issue 28): each write call weighs the
decoded size of what it encodes per item (an inner chunk when sharded, else a chunk)
against the write threshold, and the data written is the same either way."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.runtime.executor import MIN_PARALLEL_ITEM_BYTES, MIN_PARALLEL_WRITE_ITEM_BYTES, run_all
from zarrdask.storage.memory import MemoryStore


def _source(array: Any) -> Any:
    return array._source


def test_threshold_is_the_callers() -> None:
    """``min_item_bytes`` moves the line; reads keep theirs by default."""
    seen: set[int] = set()

    def work(i: int) -> int:
        seen.add(threading.get_ident())
        return -i

    items = range(300)
    assert run_all(work, items, 2, item_bytes=MIN_PARALLEL_WRITE_ITEM_BYTES - 1,
                   min_item_bytes=MIN_PARALLEL_WRITE_ITEM_BYTES) == [-i for i in items]
    assert seen == {threading.get_ident()}
    assert MIN_PARALLEL_WRITE_ITEM_BYTES < MIN_PARALLEL_ITEM_BYTES
    seen.clear()
    assert run_all(work, items, 2, item_bytes=MIN_PARALLEL_WRITE_ITEM_BYTES) == [-i for i in items]
    assert seen == {threading.get_ident()}  # under the read threshold: serial too


@pytest.mark.parametrize(("kwargs", "expected"), [
    (dict(chunks=(8, 16), shards=(32, 64), dtype="f4"), 8 * 16 * 4),  # the inner chunk
    (dict(chunks=(8, 16), dtype="i2"), 8 * 16 * 2),  # the chunk
    (dict(chunks=((8, 24, 32), (64,)), dtype="f8"), 8 * 64 * 8),  # rectilinear: the first chunk
])
def test_write_item_is_what_one_encode_covers(kwargs: dict[str, Any], expected: int) -> None:
    a = zarrdask.create_array(MemoryStore(), shape=(64, 64), fill_value=0, **kwargs)
    assert _source(a)._write_item_bytes == expected


class _ThreadsSeen(MemoryStore):
    """A store that notes which threads put values."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def _set(self, key: str, value: Any) -> None:
        self.threads.add(threading.get_ident())
        super()._set(key, value)


def test_tiny_inner_chunks_are_written_by_the_caller() -> None:
    store = _ThreadsSeen()
    a = zarrdask.create_array(store, shape=(256, 256), dtype="f4", chunks=(16, 16), shards=(32, 32),
                              fill_value=0, threads=2)  # 1 KiB inner chunks, 64 shards
    data = np.arange(256 * 256, dtype="f4").reshape(256, 256)
    store.threads.clear()
    a[...] = data
    assert store.threads == {threading.get_ident()}
    np.testing.assert_array_equal(a[...], data)


@settings(max_examples=25, deadline=None)
@given(inner=st.sampled_from([(4, 8), (32, 32), (64, 64), (64, 128)]), threads=st.sampled_from([1, 2, None]),
       start=st.tuples(st.integers(0, 127), st.integers(0, 255)), seed=st.integers(0, 2**16))
def test_same_bytes_serial_or_spread(inner: tuple[int, int], threads: int | None, start: tuple[int, int],
                                     seed: int) -> None:
    """Inner chunks on both sides of the write threshold (128 B to 32 KiB of float32),
    whole and partial shards, any thread count: the array holds exactly what a numpy
    model holds, and a serial writer stores the same bytes."""
    rng = np.random.default_rng(seed)
    shape, shards = (128, 256), (64, 128)
    model = rng.standard_normal(shape).astype("f4")
    arrays = [zarrdask.create_array(MemoryStore(), shape=shape, dtype="f4", chunks=inner, shards=shards,
                                    fill_value=0, threads=t) for t in (threads, 1)]
    sel = (slice(start[0], None), slice(start[1], None))
    update = rng.standard_normal(model[sel].shape).astype("f4")
    for a in arrays:
        a[...] = model
        a[sel] = update
    model[sel] = update
    for a in arrays:
        np.testing.assert_array_equal(a[...], model)
    stored = [{k: a.store.get(k) for k in sorted(a.store.list_prefix(""))} for a in arrays]
    assert stored[0] == stored[1]


@settings(max_examples=25, deadline=None)
@given(batch=st.sampled_from([1, 3000, 5000, 1 << 20]), inner=st.sampled_from([(4, 8), (16, 32), (32, 32), (64, 64)]),
       start=st.tuples(st.integers(0, 127), st.integers(0, 255)), fill_some=st.booleans(), seed=st.integers(0, 2**16))
def test_same_bytes_whatever_the_runs_of_inner_chunks(batch: int, inner: tuple[int, int], start: tuple[int, int],
                                                        fill_some: bool, seed: int) -> None:
    """A write encodes a shard's inner chunks in runs (``_WRITE_BATCH_BYTES``): a shard in
    one run, or in many (its last run assembles it), whole and partial shards, inner chunks
    left at the fill value: the same stored bytes, and the numpy model's values."""
    from zarrdask.nodes.units import shards as shard_units
    rng = np.random.default_rng(seed)
    shape, shards = (128, 256), (64, 128)
    model = rng.standard_normal(shape).astype("f4")
    if fill_some:
        model[: inner[0], :] = 0  # a row of inner chunks equal to the fill value
    sel = (slice(start[0], None), slice(start[1], None))
    update = rng.standard_normal(model[sel].shape).astype("f4")
    update[: inner[0]] = 0
    stored = []
    for size in (batch, 1 << 30):
        a = zarrdask.create_array(MemoryStore(), shape=shape, dtype="f4", chunks=inner, shards=shards, fill_value=0,
                                  threads=2)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(shard_units, "_WRITE_BATCH_BYTES", size)
            a[...] = model
            a[sel] = update
        stored.append({k: a.store.get(k) for k in sorted(a.store.list_prefix(""))})
        expected = model.copy()
        expected[sel] = update
        np.testing.assert_array_equal(a[...], expected)
    assert stored[0] == stored[1]
