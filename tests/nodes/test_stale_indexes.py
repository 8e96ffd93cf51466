"""An open array never reads a shard at the offsets of an index read before the shard changed.

Two opens of one sharded array: the reader reads part of a shard (its index is kept for
the next read), then the writer rewrites the shard so its chunks lie elsewhere. The
reader's next read must see the new values, on every kind of store: where the store tells
versions (local files) the change is seen; where it cannot (a dict, zarr-python's stores)
the index is not kept. Before, the reader put the old offsets on the new bytes: chunk 1
read chunk 0's new values.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrdask

zarr = pytest.importorskip("zarr")

STORES = {
    "path": lambda tmp: str(tmp / "a.zarr"),
    "memory": lambda tmp: f"memory://stale-{tmp.name}/a",
    "dict": lambda tmp: {},
    "zarr-python LocalStore": lambda tmp: zarr.storage.LocalStore(str(tmp / "z.zarr")),
    "zarr-python MemoryStore": lambda tmp: zarr.storage.MemoryStore(),
}


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_reader_sees_a_shard_rewritten_by_another_open(tmp_path, kind: str) -> None:
    store = STORES[kind](tmp_path)
    writer = zarrdask.create_array(store, shape=(8,), chunks=(4,), shards=(8,), dtype="int32", fill_value=0,
                                   compressors=None)
    writer[4:] = 5  # (chunk 0 absent: chunk 1 at the shard's start)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (no decoded-chunk cache on some of these stores: not asked for here)
        reader = zarrdask.open_array(store)
    np.testing.assert_array_equal(reader[6:], [5, 5])
    writer[:] = np.arange(8, dtype="int32")  # (chunk 0 now first, chunk 1 after it)
    np.testing.assert_array_equal(reader[6:], [6, 7])
    np.testing.assert_array_equal(reader[...], np.arange(8))
