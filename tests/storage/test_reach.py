"""Partial reads on remote stores: a shard's index request brings small shards whole.

``Store.reach()`` is what one request may ask for beyond a shard's index (``storage/link.py``
learns it from the requests' timings); a shard no larger arrives whole with its index and
costs no second request. Checked against numpy over a real HTTP server on 127.0.0.1 and
over moto's S3 server, for generated shards, selections, index locations and reaches.
"""

from __future__ import annotations

import os
import uuid

import numpy as np
import pytest
from _http import LoopbackServer
from _s3 import BUCKET, s3_storage_options
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import CorruptChunkError
from zarrdask.storage import FsspecStore
from zarrdask.storage.link import MAX_REACH_BYTES, MIN_REACH_BYTES, Link, link_to


# -- the link's estimate -------------------------------------------------------------------
def test_before_both_are_measured_the_reach_is_the_minimum():
    link = Link()
    assert link.reach() == MIN_REACH_BYTES
    link.observe(1000, 0.030)  # a latency, no throughput yet
    assert link.reach() == MIN_REACH_BYTES


def test_the_reach_is_the_quickest_latency_times_the_best_throughput():
    link = Link()
    for seconds in (0.031, 0.025, 0.040):
        link.observe(2_000, seconds)
    link.observe(4 << 20, 0.025 + 0.010)  # 4 MiB in 10 ms beyond the latency: 419 MB/s
    link.observe(4 << 20, 0.025 + 0.040)  # a contended one, slower: not the estimate
    link.observe(100 << 10, 5.0)  # between small and large: measures neither
    assert link.reach() == pytest.approx(0.025 * (4 << 20) / 0.010, abs=2)


def test_the_reach_is_bounded():
    fast = Link()
    fast.observe(10, 1.0)
    fast.observe(1 << 30, 1.0)
    assert fast.reach() == MAX_REACH_BYTES
    near = Link()
    near.observe(10, 0.0001)
    near.observe(1 << 20, 0.1)
    assert near.reach() == MIN_REACH_BYTES


def test_stores_on_one_host_share_a_link_and_local_stores_reach_nothing(tmp_path):
    assert link_to("http://127.0.0.1:1/a.zarr") is link_to("http://127.0.0.1:1/b/c.zarr")
    assert link_to("http://127.0.0.1:1/a") is not link_to("http://127.0.0.1:2/a")
    assert zarrdask.storage.LocalStore(str(tmp_path)).reach() == 0
    assert FsspecStore(str(tmp_path)).reach() == 0
    remote = FsspecStore("http://127.0.0.1:3/a.zarr")
    remote._link.observe(10, 0.020)
    remote._link.observe(1 << 20, 0.030)
    assert remote.reach() == pytest.approx(0.020 * (1 << 20) / 0.010, abs=2)
    assert zarrdask.storage.PrefixedStore(remote, "x").reach() == remote.reach()  # wrappers ask their inner store


# -- reads over HTTP --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    with LoopbackServer(root=str(root)) as server:
        yield str(root), server


def _codecs(inner, location: str) -> list[dict]:
    """A sharding chain with its index at ``location``."""
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner), "index_location": location,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "zstd", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]


def _write(root: str, data: np.ndarray, inner, shards, location: str) -> str:
    name = f"{uuid.uuid4().hex}.zarr"
    zarrdask.create_array(os.path.join(root, name), shape=data.shape, dtype=data.dtype, chunks=shards,
                          codecs=_codecs(inner, location), fill_value=-1)[...] = data
    return name


def test_a_small_shard_comes_whole_with_its_index(served):
    root, server = served
    data = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    name = _write(root, data, (8, 8), (32, 32), "end")
    store = FsspecStore(f"{server.url}/{name}")
    assert store.reach() >= MIN_REACH_BYTES > 32 * 32 * 4  # a 4 KiB shard fits (nothing measured yet)
    a = zarrdask.open_array(store)
    server.reset()
    np.testing.assert_array_equal(a[3:20, 5:40], data[3:20, 5:40])  # two shards, partly
    assert server.counts == {"GET": 2}  # each index with its whole shard: no range request after it
    server.reset()
    np.testing.assert_array_equal(a[40:50, 1:2], data[40:50, 1:2])  # another shard; cached ones stay
    assert server.counts == {"GET": 1}


def test_a_larger_shard_is_read_by_its_index_and_ranges(served, monkeypatch):
    root, server = served
    data = np.random.default_rng(1).standard_normal((64, 64)).astype("f8")  # 32 KiB shards, incompressible
    name = _write(root, data, (8, 8), (64, 64), "start")
    monkeypatch.setattr(FsspecStore, "reach", lambda self: 1000)
    a = zarrdask.open_array(f"{server.url}/{name}")
    server.reset()
    np.testing.assert_array_equal(a[3:20, 5:40], data[3:20, 5:40])
    assert server.counts == {"GET": 2}  # the index (with 1,000 bytes more), then the coalesced ranges


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_partial_reads_equal_numpy_whatever_the_reach(served, data):
    """Generated arrays, shards, holes, index locations and selections, read with a reach
    around the shards' sizes (none, part of a shard, exactly a shard, more): equal to numpy."""
    root, server = served
    ndim = data.draw(st.integers(1, 3))
    inner = tuple(data.draw(st.integers(1, 4)) for _ in range(ndim))
    shards = tuple(c * data.draw(st.integers(1, 3)) for c in inner)
    shape = tuple(data.draw(st.integers(1, 2 * s + 1)) for s in shards)
    values = np.random.default_rng(data.draw(st.integers(0, 99))).integers(0, 1000, shape).astype("i2")
    location = data.draw(st.sampled_from(["start", "end"]))
    name = f"{uuid.uuid4().hex}.zarr"
    a = zarrdask.create_array(os.path.join(root, name), shape=shape, dtype="i2", chunks=shards,
                              codecs=_codecs(inner, location), fill_value=-1)
    a[...] = values
    if data.draw(st.booleans()):  # an inner chunk that is all fill: absent from its shard
        hole = tuple(slice(0, c) for c in inner)
        a[hole] = -1
        values[hole] = -1
    shard_bytes = int(np.prod(shards)) * 2
    reach = data.draw(st.sampled_from([0, 1, shard_bytes // 2, shard_bytes, shard_bytes + 16, 10 * shard_bytes]))
    store = FsspecStore(f"{server.url}/{name}")
    store.reach = lambda: reach  # type: ignore[method-assign]
    sel = tuple(slice(lo, data.draw(st.integers(lo + 1, n)))
                for n in shape for lo in [data.draw(st.integers(0, n - 1))])
    np.testing.assert_array_equal(zarrdask.open_array(store)[sel], values[sel])


def test_a_truncated_shard_that_came_whole_is_refused_naming_it(served):
    """Chunks cut off a shard that came whole are refused, naming the shard and the chunk;
    the chunks still whole read as the peers read them (entries are checked as a read
    looks them up)."""
    root, server = served
    data = np.arange(32 * 32, dtype="i4").reshape(32, 32)
    name = _write(root, data, (8, 8), (32, 32), "end")
    path = os.path.join(root, name, "c", "0", "0")
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(blob[: len(blob) // 2] + blob[-(16 * 16 + 4):])  # chunks cut, the index kept
    a = zarrdask.open_array(f"{server.url}/{name}")
    np.testing.assert_array_equal(a[1:9, 1:9], data[1:9, 1:9])  # (the first chunks, whole)
    with pytest.raises(CorruptChunkError, match=r"shard c/0/0: index entry for inner chunk \(\d, \d\)"):
        a[24:32, 24:32]


# -- over S3 ------------------------------------------------------------------------------------
@pytest.mark.s3
def test_over_s3_a_small_shard_comes_whole_with_its_index(s3_endpoint):
    with LoopbackServer(upstream=s3_endpoint) as counting:
        store = FsspecStore(f"s3://{BUCKET}/{uuid.uuid4().hex}", storage_options=s3_storage_options(counting.url))
        data = np.arange(48 * 48, dtype="f4").reshape(48, 48)
        zarrdask.create_array(store, shape=data.shape, dtype="f4", chunks=(8, 8), shards=(16, 16),
                              fill_value=0)[...] = data
        a = zarrdask.open_array(store)
        counting.reset()
        np.testing.assert_array_equal(a[5:30, 7:9], data[5:30, 7:9])  # two shards, partly
        assert counting.counts == {"GET": 2}
