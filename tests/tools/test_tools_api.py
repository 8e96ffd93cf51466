"""Chunk statistics, info tables, HTML and text representations, and write progress."""

from __future__ import annotations

from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import zarr

import zarrdask


@pytest.fixture
def sharded(tmp_path: Path) -> zarrdask.Array:
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=(40, 30), dtype="int32", chunks=(10, 10), shards=(20, 30))
    a[0:10, 0:10] = 1   # one inner chunk of shard (0, 0)
    a[20:40, :] = 2     # all of shard (1, 0)
    return a


def test_chunk_counts(sharded: zarrdask.Array) -> None:
    assert sharded.nchunks_initialized == 1 + 6
    assert sharded.nshards_initialized == 2
    sharded[0:10, 0:10] = 0  # back to the fill value: the chunk, then its shard, are removed
    assert (sharded.nchunks_initialized, sharded.nshards_initialized) == (6, 1)


def test_chunk_counts_unsharded_agree_with_zarr_python(tmp_path: Path) -> None:
    a = zarrdask.create_array(tmp_path / "p.zarr", shape=(10, 10), dtype="f8", chunks=(3, 4))
    a[0:4, 5:10] = 1.0
    assert a.nshards_initialized is None
    assert a.nchunks_initialized == zarr.open_array(tmp_path / "p.zarr", mode="r").nchunks_initialized == 4


def test_storage_statistics(sharded: zarrdask.Array) -> None:
    stats = sharded.storage_statistics
    assert stats((slice(20, 40),)).fully_stored and not stats((slice(20, 40),)).not_stored
    assert stats((slice(10, 20), slice(10, 30))).not_stored       # in a stored shard, but no chunk there
    part = stats((slice(0, 20),))
    assert (part.chunks_stored, part.chunks_total) == (1, 6) and not part.fully_stored and not part.not_stored
    assert stats((5, 5)).fully_stored and stats(...).chunks_total == 12


def test_storage_statistics_reads_no_chunk_data(sharded: zarrdask.Array) -> None:
    from _util import CountingStore

    counting = CountingStore(sharded.store)
    view = zarrdask.open_array(counting)
    counting.reset()
    assert view.storage_statistics().chunks_stored == 7
    assert all(r is not None and r.__class__.__name__ == "SuffixRange" for _, r in counting.requests)
    assert counting.reads == 1  # the two shard indexes in one batched request


def test_info_tables(sharded: zarrdask.Array) -> None:
    text = str(sharded.info)
    assert "Shard shape     : [20, 30]" in text and "Chunks stored" not in text
    full = sharded.info_complete().to_json()
    assert (full["chunks_stored"], full["chunks_total"], full["shards_stored"], full["shards_total"]) == (7, 12, 2, 2)
    group = zarrdask.create_group(Path(sharded.store.root).parent / "g.zarr")
    group.create_array("x", shape=(2,), dtype="i1", chunks=(2,))
    assert group.info.to_json()["arrays"] == 1 and "<table>" in group.info._repr_html_()


def test_html_and_repr(sharded: zarrdask.Array) -> None:
    page = sharded._repr_html_()
    assert page.count("<svg") == 2 and "shards (20, 30)" in page and "chunks (10, 10)" in page
    assert "sharding_indexed[bytes &gt; zstd; index: bytes &gt; crc32c]" in page
    assert repr(sharded) == (f"<zarrdask.Array {sharded.store.url} '/' shape=(40, 30) dtype=int32 chunks=(10, 10) "
                             "shards=(20, 30) v3>")
    root = zarrdask.open_group(Path(sharded.store.root).parent / "h.zarr", mode="w")
    root.create_group("sub").create_array("v", shape=(3, 4), dtype="f4", chunks=(3, 2))
    html = root._repr_html_()
    assert "<table>" in html and "v (3, 4) float32" in html


def test_core_write_progress(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    a = zarrdask.create_array(tmp_path / "w.zarr", shape=(100, 100), dtype="f4", chunks=(10, 10), progress=True)
    a[...] = np.ones((100, 100), dtype="f4")
    err = capfd.readouterr().err
    assert err == ""  # stderr is no terminal: no bar (drawing: tests/nodes/test_progress.py)


def test_to_zarr_progress(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    x = da.ones((60, 60), chunks=(7, 9))
    zarrdask.to_zarr(x, tmp_path / "d.zarr", chunks=(10, 10), shards=(30, 30), progress=True)
    assert capfd.readouterr() == ("", "")  # no terminal: no bar
    assert zarrdask.open_array(tmp_path / "d.zarr").nshards_initialized == 4
