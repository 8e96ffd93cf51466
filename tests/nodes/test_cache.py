"""The decoded-chunk cache (``runtime/cache.py``): never stale after a zarrdask write, within
its budget, counted right, opt-in through every entry point, never pickled.

The property tests interleave reads, writes, writes of the fill value (which delete chunks),
resizes and appends through several opens of one array (two reading through the cache, one
not), sharded and unsharded, Zarr v2 and v3, against a numpy model after every step.
Budgets and statistics are checked in a fresh process (the pool's limit is the largest
budget any open in the process asked for, so it only grows).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.nodes.block_reader import BlockReader
from zarrdask.runtime.cache import CONFIG_KEY, pool_info
from zarrdask.errors import InvalidModeError

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = {
    "v3-sharded": dict(zarr_format=3, chunks=(2, 3), shards=(4, 6)),
    "v3-sharded-transposed": dict(zarr_format=3, chunks=(4, 6), codecs=[  # (inner chunks (2, 3) in the array)
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "sharding_indexed", "configuration": {"chunk_shape": [3, 2], "codecs": [{"name": "bytes"}]}}]),
    "v3-chunks": dict(zarr_format=3, chunks=(3, 4)),
    "v2-chunks": dict(zarr_format=2, chunks=(3, 4)),
}
FILL = -1.0


def _region(data: st.DataObject, shape: tuple[int, ...]) -> tuple[slice, ...]:
    region = []
    for n in shape:
        start = data.draw(st.integers(0, max(n - 1, 0)))
        stop = data.draw(st.integers(start, n))
        region.append(slice(start, stop))
    return tuple(region)


def _opens(path: str) -> list[zarrdask.Array]:
    """Three opens reading through the cache (one budget each; with 1 KiB, shards are held
    chunk by chunk, with the others as one array each) and one without it."""
    return [zarrdask.open_array(path, mode="r+", cache_bytes="1 MiB"),
            zarrdask.open_array(path, mode="r+", cache_bytes=64 << 10),
            zarrdask.open_array(path, mode="r+", cache_bytes=1 << 10),
            zarrdask.open_array(path, mode="r+", cache_bytes=0)]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_interleaved_reads_and_writes_never_stale(layout, data):
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/a"
        shape = (data.draw(st.integers(1, 9)), data.draw(st.integers(1, 13)))
        model = np.arange(np.prod(shape), dtype="f8").reshape(shape)
        zarrdask.create_array(path, data=model, fill_value=FILL, write_empty_chunks=False, **LAYOUTS[layout])
        opens = _opens(path)
        for _ in range(data.draw(st.integers(1, 14))):
            op = data.draw(st.sampled_from(["read", "read", "write", "fill", "resize", "append", "clear"]))
            who = opens[data.draw(st.integers(0, len(opens) - 1))]
            if op == "read":
                region = _region(data, model.shape)
                np.testing.assert_array_equal(who[region], model[region])
            elif op in ("write", "fill"):
                region = _region(data, model.shape)
                value = FILL if op == "fill" else data.draw(st.floats(-5, 5, allow_nan=False))
                who[region] = value
                model[region] = value
            elif op == "resize":
                new = (data.draw(st.integers(0, 9)), data.draw(st.integers(0, 13)))
                who.resize(new)
                grown = np.full(new, FILL)
                keep = tuple(slice(0, min(a, b)) for a, b in zip(new, model.shape))
                grown[keep] = model[keep]
                model = grown
                opens = _opens(path)  # (the other opens keep the old shape, as without a cache)
            elif op == "append":
                rows = np.full((data.draw(st.integers(1, 4)), model.shape[1]),
                               data.draw(st.floats(-5, 5, allow_nan=False)))
                who.append(rows)
                model = np.concatenate([model, rows])
                opens = _opens(path)
            else:
                (zarrdask.cache_clear if data.draw(st.booleans()) else who.cache_clear)()
            for each in opens:
                np.testing.assert_array_equal(each[...], model)
            info = pool_info()
            assert info.bytes <= info.pool_limit


def _run(code: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_budget_statistics_and_eviction_in_a_fresh_process(tmp_path):
    """Counts after known reads; the pool never holds more than the budget; evictions counted."""
    out = _run("""
        import sys, numpy as np, zarrdask
        from zarrdask.runtime.cache import pool_info
        path = sys.argv[1]
        zarrdask.create_array(path, data=np.arange(64.0).reshape(8, 8), chunks=(4, 4))
        a = zarrdask.open_array(path, cache_bytes=3 * 128)   # three 4x4 float64 chunks
        b = zarrdask.open_array(path, cache_bytes=3 * 128)   # another open of the same array
        assert a[:4, :4].sum() == np.arange(64.0).reshape(8, 8)[:4, :4].sum()
        i = a.cache_info()
        assert (i.hits, i.misses, i.entries, i.bytes, i.evictions) == (0, 1, 1, 128, 0), i
        b[:4, :4]                                              # shared by every open
        i = a.cache_info()
        assert (i.hits, i.misses) == (1, 1), i
        a[...]                                                 # 1 hit, 3 misses, one eviction
        i = b.cache_info()
        assert (i.hits, i.misses, i.entries, i.evictions) == (2, 4, 3, 1), i
        assert i.bytes == pool_info().bytes == 3 * 128 <= i.pool_limit == 3 * 128
        c = zarrdask.open_array(path, cache_bytes="1 KiB")     # the largest budget asked wins
        assert pool_info().pool_limit == 1024
        zarrdask.cache_clear()
        i = a.cache_info()
        assert (i.hits, i.misses, i.entries, i.bytes) == (0, 0, 0, 0), i
        print(repr(b.cache_info()))
    """, str(tmp_path / "a"))
    assert out.startswith("CacheInfo(hits=0")


def test_a_change_by_another_process_is_seen_after_cache_clear(tmp_path):
    path = str(tmp_path / "a")
    old = np.arange(48.0).reshape(6, 8)
    zarrdask.create_array(path, data=old, chunks=(3, 4), shards=(6, 8))
    a = zarrdask.open_array(path, cache_bytes="1 MiB")
    b = zarrdask.open_array(path, cache_bytes="1 MiB")
    np.testing.assert_array_equal(a[...], old)
    _run("import sys, zarrdask; zarrdask.open_array(sys.argv[1], mode='r+')[...] = 7.0", path)
    np.testing.assert_array_equal(a[...], old)  # not seen: documented, cache_clear() is the remedy
    a.cache_clear()
    np.testing.assert_array_equal(a[...], 7.0)
    np.testing.assert_array_equal(b[...], 7.0)  # (the same array: every open's entries forgotten)
    _run("import sys, zarrdask; zarrdask.open_array(sys.argv[1], mode='r+')[...] = 8.0", path)
    zarrdask.cache_clear()
    np.testing.assert_array_equal(b[...], 8.0)


def test_recreating_an_array_forgets_the_old_one(tmp_path):
    """The same metadata (same token) over new data: the old array's chunks are not served."""
    path = str(tmp_path / "a")
    zarrdask.create_array(path, data=np.zeros((4, 4)), chunks=(2, 2))
    a = zarrdask.open_array(path, cache_bytes="1 MiB")
    np.testing.assert_array_equal(a[...], 0)
    zarrdask.create_array(path, data=np.ones((4, 4)), chunks=(2, 2), overwrite=True)
    np.testing.assert_array_equal(zarrdask.open_array(path, cache_bytes="1 MiB")[...], 1)
    np.testing.assert_array_equal(a[...], 1)


def test_another_array_or_metadata_never_hits(tmp_path):
    data = np.arange(16.0).reshape(4, 4)
    for name, values in (("x", data), ("y", -data)):
        zarrdask.create_array(str(tmp_path / name), data=values, chunks=(2, 2))
    x = zarrdask.open_array(str(tmp_path / "x"), cache_bytes="1 MiB")
    y = zarrdask.open_array(str(tmp_path / "y"), cache_bytes="1 MiB")
    np.testing.assert_array_equal(x[...], data)
    np.testing.assert_array_equal(y[...], -data)
    assert y.cache_info().hits == 0
    w = zarrdask.open_array(str(tmp_path / "x"), mode="r+")
    w.attrs["note"] = "metadata changed"  # another token: another set of entries
    fresh = zarrdask.open_array(str(tmp_path / "x"), cache_bytes="1 MiB")
    before = fresh.cache_info()
    np.testing.assert_array_equal(fresh[...], data)
    assert fresh.cache_info().misses - before.misses == 4


def test_concurrent_reads_and_writes_on_threads(tmp_path):
    """Readers racing a writer see only written values and, once it is done, its last
    write: no entry decoded from bytes fetched before a write survives it."""
    path = str(tmp_path / "a")
    zarrdask.create_array(path, data=np.zeros((16, 16)), chunks=(4, 4), shards=(8, 8))
    reader = zarrdask.open_array(path, cache_bytes="1 MiB")
    writer = zarrdask.open_array(path, mode="r+")
    seen: list[set[float]] = []
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(40):
                seen.append(set(np.unique(reader[...]).tolist()))
        except BaseException as exc:  # (reported below, not lost in the thread)
            failures.append(exc)

    threads = [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for k in range(1, 20):
        writer[...] = float(k)
    for t in threads:
        t.join()
    assert not failures
    assert set().union(*seen) <= set(map(float, range(20)))
    np.testing.assert_array_equal(reader[...], 19.0)
    assert pool_info().bytes <= pool_info().pool_limit


def test_the_switch_and_its_default(tmp_path):
    path = str(tmp_path / "a")
    zarrdask.create_array(path, data=np.ones((4, 4)), chunks=(2, 2))
    assert zarrdask.open_array(path).cache_info().budget == 0
    assert zarrdask.open_array(path, cache_bytes="2 MiB").cache_info().budget == 2 << 20
    assert zarrdask.open(path, cache_bytes=1000).cache_info().budget == 1000
    with dask.config.set({CONFIG_KEY: "3 MiB"}):
        assert zarrdask.open_array(path).cache_info().budget == 3 << 20
        assert zarrdask.open_array(path, cache_bytes=0).cache_info().budget == 0
    off = zarrdask.open_array(path, cache_bytes=None)
    off[...]
    assert off.cache_info().budget == 0
    for bad in (-1, "lots", True, 1.5):
        with pytest.raises(InvalidModeError, match="cache_bytes"):
            zarrdask.open_array(path, cache_bytes=bad)


def test_pickles_carry_the_budget_not_the_chunks(tmp_path):
    path = str(tmp_path / "a")
    zarrdask.create_array(path, data=np.random.default_rng(0).random((64, 64)), chunks=(32, 32))
    a = zarrdask.open_array(path, cache_bytes="1 MiB")
    a[...]
    assert a.cache_info().bytes == 64 * 64 * 8
    for obj in (a, BlockReader(a)):
        blob = pickle.dumps(obj)
        assert len(blob) < 4096
        back = pickle.loads(blob)
        array = back if isinstance(back, zarrdask.Array) else back.array
        assert array.cache_info().budget == 1 << 20
        np.testing.assert_array_equal(back[:, :], a[...])


def test_from_zarr_threaded_reads_through_the_cache(tmp_path):
    path = str(tmp_path / "a")
    values = np.arange(600.0).reshape(20, 30)
    zarrdask.create_array(path, data=values, chunks=(5, 10), shards=(10, 30))
    x = zarrdask.from_zarr(path, cache_bytes="1 MiB")
    assert float(x.sum().compute(scheduler="threads")) == values.sum()
    info = zarrdask.open_array(path, cache_bytes="1 MiB").cache_info()
    assert info.entries == 2 and info.budget == 1 << 20  # each task reads its shard whole: held whole
    np.testing.assert_array_equal(x.compute(scheduler="threads"), values)
    assert zarrdask.open_array(path).cache_info().hits >= 12  # (a whole shard serves its 6 chunks)


def test_the_xarray_engine_reads_through_the_cache(tmp_path):
    xr = pytest.importorskip("xarray")
    path = str(tmp_path / "g")
    zarrdask.create_group(path)
    values = np.arange(24.0).reshape(4, 6)
    zarrdask.create_array(f"{path}/v", data=values, chunks=(2, 3), dimension_names=("y", "x"))
    ds = xr.open_dataset(path, engine="zarrdask", cache_bytes="1 MiB")
    np.testing.assert_array_equal(ds["v"].values, values)
    assert zarrdask.open_array(path, path="v").cache_info().entries == 4
    chunked = xr.open_dataset(path, engine="zarrdask", cache_bytes="1 MiB", chunks={})
    np.testing.assert_array_equal(chunked["v"].compute(scheduler="threads").values, values)
    assert zarrdask.open_array(path, path="v").cache_info().hits >= 4
    assert "cache_bytes" in xr.backends.list_engines()["zarrdask"].open_dataset_parameters


@pytest.mark.parametrize("opener", ["open_datatree", "open_groups"])
def test_the_xarray_engine_reads_trees_through_the_cache(tmp_path, opener):
    """``cache_bytes`` reaches every node of a tree (``xr.open_datatree`` / ``xr.open_groups``
    with ``engine="zarrdask"``), as it does ``open_dataset``'s group."""
    xr = pytest.importorskip("xarray")
    path = str(tmp_path / "g")
    zarrdask.create_group(path).create_group("sub")
    values = np.arange(24.0).reshape(4, 6)
    for at in ("v", "sub/w"):
        zarrdask.create_array(f"{path}/{at}", data=values, chunks=(2, 3), dimension_names=("y", "x"))
    opened = getattr(xr, opener)(path, engine="zarrdask", cache_bytes="1 MiB")
    nodes = {"v": opened["/"]["v"], "sub/w": opened["/sub"]["w"]} if opener == "open_groups" else \
        {"v": opened["v"], "sub/w": opened["sub/w"]}
    for at, variable in nodes.items():
        np.testing.assert_array_equal(variable.values, values)
        assert zarrdask.open_array(path, path=at).cache_info().entries == 4, at


def test_statistics_display(tmp_path):
    path = str(tmp_path / "a")
    zarrdask.create_array(path, data=np.ones((4, 4)), chunks=(2, 2))
    a = zarrdask.open_array(path, cache_bytes="1 MiB")
    a[...]
    a[...]
    info = a.cache_info()
    text = repr(info)
    assert text.startswith("CacheInfo(hits=4 (50%), misses=4,") and "budget=1.00 MiB" in text
    html = info._repr_html_()
    for label in ("Hits", "Misses", "Evictions", "Bytes held", "Budget of this open", "Process pool"):
        assert f"<th>{label}</th>" in html
    assert "zarrdask CacheInfo" in html and "<pre class='zd-fallback'>" in html


def test_a_store_without_a_trusted_identity_reads_uncached_and_says_so():
    zarr = pytest.importorskip("zarr")
    store = zarr.storage.MemoryStore()
    zarr.create_array(store, shape=(4,), chunks=(2,), dtype="f8")[...] = 1.0
    with pytest.warns(UserWarning, match="without the decoded-chunk cache"):
        a = zarrdask.open_array(store, cache_bytes="1 MiB")
    np.testing.assert_array_equal(a[...], 1.0)
    assert a.cache_info().budget == 0 and a.cache_info().entries == 0


@pytest.mark.parametrize("layout", ["v3-sharded", "v3-sharded-transposed"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_shards_held_whole(layout, data):
    """Shards are held as one array each, whether a read covers them whole or chunk by
    chunk; a held shard then serves any part of itself (a box or not) bit-exact, and a
    write replaces it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/a"
        shape = (data.draw(st.integers(1, 12)), data.draw(st.integers(1, 18)))
        model = np.arange(np.prod(shape), dtype="f8").reshape(shape)
        zarrdask.create_array(path, data=model, **LAYOUTS[layout])
        a = zarrdask.open_array(path, mode="r+", cache_bytes="1 MiB")
        a.cache_clear()
        if data.draw(st.booleans()):
            np.testing.assert_array_equal(a[...], model)  # every shard covered whole
        else:
            for r in range(0, shape[0], 2):  # every inner chunk (2 x 3) read on its own
                for c in range(0, shape[1], 3):
                    np.testing.assert_array_equal(a[r: r + 2, c: c + 3], model[r: r + 2, c: c + 3])
        for _ in range(data.draw(st.integers(1, 4))):
            region = _region(data, shape)
            np.testing.assert_array_equal(a[region], model[region])
            step = tuple(slice(None, None, data.draw(st.integers(1, 3))) for _ in shape)
            np.testing.assert_array_equal(a[step], model[step])
            rows, cols = (np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=5))))
                          for n in shape)
            np.testing.assert_array_equal(a.oindex[rows, cols], model[np.ix_(rows, cols)])
            points = tuple(np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=3, max_size=3)))
                           for n in shape)
            np.testing.assert_array_equal(a.vindex[points], model[points])
        np.testing.assert_array_equal(a[...], model)
        shards = (-(-shape[0] // 4)) * (-(-shape[1] // 6))
        assert a.cache_info().entries == shards  # one entry per shard
        region = _region(data, shape)
        a[region] = -7.0
        model[region] = -7.0
        np.testing.assert_array_equal(a[...], model)


def test_held_shards_above_the_huge_page_size_are_mappings_of_their_own(tmp_path, monkeypatch):
    """Held shards from numpy's huge-page size on get a mapping of their own (no huge-page
    advice), read-only in the pool, bit-exact whether read whole or in part."""
    import zarrdask.runtime.output as output

    monkeypatch.setattr(output, "HUGEPAGE_HINT_BYTES", 64)
    path = str(tmp_path / "a")
    model = np.arange(8 * 12, dtype="f8").reshape(8, 12)
    zarrdask.create_array(path, data=model, **LAYOUTS["v3-sharded"])
    a = zarrdask.open_array(path, mode="r+", cache_bytes="1 MiB")
    np.testing.assert_array_equal(a[0:4, 0:6], model[0:4, 0:6])  # shard (0, 0) read whole: held
    for r in range(4, 8, 2):  # shard (1, 1) chunk by chunk, decoded into its held array
        for c in range(6, 12, 3):
            a[r: r + 2, c: c + 3]
    assert a.cache_info().entries == 2
    np.testing.assert_array_equal(a[4:8, 6:12], model[4:8, 6:12])
    np.testing.assert_array_equal(a[5:7, 7:11], model[5:7, 7:11])
    info = a.cache_info()
    assert (info.entries, info.hits, info.misses) == (2, 8, 8)
    held = output.held_array((3, 5), np.dtype("f8"))
    assert held.flags.c_contiguous and held.flags.writeable and not held.flags.owndata
    held[...] = 2.0
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(held)), np.full((3, 5), 2.0))
    np.testing.assert_array_equal(a[...], model)


def test_a_held_shard_is_decoded_into_by_one_read_at_a_time():
    """A chunk one read is decoding is waited for by another, and claimed again by it when
    the first gives up (its fetch predates a write)."""
    from zarrdask.runtime.held_shard import HeldShard
    from zarrdask.plan.fetch_plan import ChunkPlacement

    chunks = [ChunkPlacement((i,), i, None, None) for i in range(4)]
    shard = HeldShard((4,), (1,), np.dtype("f8"), 4, 4)
    assert shard.claim(chunks[:2]) == ([0, 1], [])
    assert shard.claim(chunks) == ([2, 3], [0, 1])
    shard.settle([2, 3], True)
    waited: list[bool] = []
    other = threading.Thread(target=lambda: waited.append(shard.wait([0, 1])))
    other.start()
    other.join(0.2)
    assert other.is_alive() and not waited  # (still decoding)
    shard.settle([0, 1], False)  # given up: absent again
    other.join(5)
    assert waited == [True]
    assert shard.claim(chunks) == ([0, 1], [])
    shard.settle([0, 1], True)
    assert shard.claim(chunks) == ([], [])


@pytest.mark.parametrize("layout", ["v3-sharded", "v3-sharded-transposed"])
def test_threads_reading_one_held_shard_at_once(tmp_path, layout):
    """Threads reading overlapping parts of the same shards through one cache, from an
    empty cache each round: every read bit-exact, nothing left half decoded."""
    path = str(tmp_path / "a")
    model = np.arange(12 * 18, dtype="f8").reshape(12, 18)
    zarrdask.create_array(path, data=model, **LAYOUTS[layout])
    a = zarrdask.open_array(path, cache_bytes="1 MiB")
    rng = np.random.default_rng(0)
    failures: list[BaseException] = []

    def read(regions: list[tuple[slice, slice]]) -> None:
        try:
            for region in regions:
                np.testing.assert_array_equal(a[region], model[region])
        except BaseException as exc:  # (reported below)
            failures.append(exc)

    for _ in range(20):
        a.cache_clear()
        threads = []
        for _ in range(4):
            regions = []
            for _ in range(5):
                r0, c0 = int(rng.integers(0, 12)), int(rng.integers(0, 18))
                regions.append((slice(r0, int(rng.integers(r0 + 1, 13))), slice(c0, int(rng.integers(c0 + 1, 19)))))
            threads.append(threading.Thread(target=read, args=(regions,)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads)
        assert not failures, failures[0]
        np.testing.assert_array_equal(a[...], model)


def test_a_read_that_fails_leaves_nothing_half_held(tmp_path):
    """A read through a held shard that raises (a missing inner chunk, ``missing_chunks=
    'raise'``) leaves the chunks it claimed absent: another open reading with fill values
    sees the fill value there, not what the failed read left in the held array."""
    path = str(tmp_path / "a")
    model = np.arange(8 * 12, dtype="f8").reshape(8, 12)
    model[0:2, 0:3] = FILL  # (one inner chunk of shard (0, 0) never stored)
    zarrdask.create_array(path, data=model, fill_value=FILL, write_empty_chunks=False, **LAYOUTS["v3-sharded"])
    strict = zarrdask.open_array(path, cache_bytes="1 MiB", missing_chunks="raise")
    with pytest.raises(zarrdask.errors.MissingChunkError):
        strict[0:4, 0:6]
    lenient = zarrdask.open_array(path, cache_bytes="1 MiB")
    np.testing.assert_array_equal(lenient[0:4, 0:6], model[0:4, 0:6])
    np.testing.assert_array_equal(strict[2:4, 0:6], model[2:4, 0:6])  # (chunks that exist: fine)


def test_a_shard_is_held_as_one_array_once_a_read_wants_a_quarter_of_it(tmp_path):
    """A time series at a point (one inner chunk of each shard) is held chunk by chunk: a
    whole shard mapped and counted for it would crowd the pool. A read of a quarter of a
    shard's chunks holds the shard as one array, and reads of it go there from then on."""
    from zarrdask.runtime.cache import _POOL
    from zarrdask.runtime.held_shard import HeldShard

    path = str(tmp_path / "a")
    model = np.arange(32 * 24, dtype="f8").reshape(32, 24)
    zarrdask.create_array(path, data=model, chunks=(8, 3), shards=(8, 24))  # (8 inner chunks a shard)
    a = zarrdask.open_array(path, cache_bytes="1 MiB")
    zarrdask.cache_clear()

    def kinds() -> list[str]:
        return sorted("shard" if isinstance(v, HeldShard) else "chunk" for v in list(_POOL._entries.values()))

    np.testing.assert_array_equal(a[:, 4], model[:, 4])  # one chunk in each of 4 shards
    assert kinds() == ["chunk"] * 4
    np.testing.assert_array_equal(a[0:8, 0:6], model[0:8, 0:6])  # 2 of the 8 chunks of shard 0
    assert kinds() == ["chunk"] * 3 + ["shard"]  # (shard 0's chunk 1 moved into the held shard)
    np.testing.assert_array_equal(a[0:8, 4], model[0:8, 4])  # shard 0 held: read there
    np.testing.assert_array_equal(a[:, 4], model[:, 4])
    assert kinds() == ["chunk"] * 3 + ["shard"]
    info = a.cache_info()
    assert (info.hits, info.misses) == (1 + 1 + 4, 4 + 1)  # (shard 0's chunk 1 was held on its own: a hit)


def test_chunks_held_on_their_own_are_copied_into_their_shard_once_it_is_held(tmp_path, monkeypatch):
    """A shard that becomes held takes the chunks the cache already holds on their own (read by
    a time series at a point) by copying them into its slots, and lets go of those entries:
    only the others are decoded, and no chunk is held twice."""
    from zarrdask.nodes.units import shard_cache

    decoded: list[int] = []
    original = shard_cache.CachedShardReads._decode_slots

    def counting(self, batch):
        decoded.extend(job.placement.position for job in batch[1])
        return original(self, batch)

    monkeypatch.setattr(shard_cache.CachedShardReads, "_decode_slots", counting)
    path = str(tmp_path / "a")
    model = np.arange(32 * 24, dtype="f8").reshape(32, 24)
    zarrdask.create_array(path, data=model, chunks=(8, 3), shards=(8, 24))  # (8 inner chunks a shard)
    a = zarrdask.open_array(path, cache_bytes="1 MiB")
    zarrdask.cache_clear()
    np.testing.assert_array_equal(a[:, 4], model[:, 4])  # inner chunk 1 of each shard, held on its own
    assert a.cache_info().entries == 4
    np.testing.assert_array_equal(a[0:8, 0:6], model[0:8, 0:6])  # shard 0 held: chunk 1 copied in
    assert decoded == [0]
    info = a.cache_info()  # (chunk 1 of shard 0 no longer held on its own: its budget went back)
    chunk_bytes, shard_bytes = 8 * 3 * 8, 8 * 24 * 8 + 8  # (a held shard: its values, a state byte a chunk)
    assert info.entries == 4 and info.bytes == 3 * chunk_bytes + shard_bytes
    np.testing.assert_array_equal(a[0:8, :], model[0:8, :])
    assert sorted(decoded) == [0, 2, 3, 4, 5, 6, 7]
    np.testing.assert_array_equal(a[...], model)


def test_a_prefixed_store_does_not_share_entries_with_its_inner_store(tmp_path):
    """The same path below a prefix and at the root are two arrays (Store.identity of a
    PrefixedStore names its prefix too)."""
    from zarrdask.storage import LocalStore, PrefixedStore

    root = LocalStore(tmp_path / "r")
    for store, value in ((root, 1), (PrefixedStore(root, "pre"), 2)):
        zarrdask.create_array(store, name="x", shape=(4,), chunks=(4,), dtype="i2", fill_value=0)[...] = value
    plain = zarrdask.open_array(root, path="x", cache_bytes="1 MiB")
    prefixed = zarrdask.open_array(PrefixedStore(root, "pre"), path="x", cache_bytes="1 MiB")
    assert plain[...].tolist() == [1] * 4 and prefixed[...].tolist() == [2] * 4
    zarrdask.cache_clear()


def test_held_arrays_reuse_the_buffers_of_those_gone_and_never_one_in_use(monkeypatch):
    """A cache entry's buffer is kept once no array over it is left (its views included,
    however derived), for the next entry of its size: a cache emptied and filled again then
    writes into memory already mapped. A buffer under a live view is never handed out."""
    import zarrdask.runtime.output as output

    monkeypatch.setattr(output, "_spare", {})
    monkeypatch.setattr(output, "_spare_bytes", 0)
    monkeypatch.setattr(output, "_spare_room", lambda: 1 << 20)
    first = output.held_array((4, 8), np.dtype("f8"))
    address = first.ctypes.data
    view = first.T[1:]  # (a view of a view: its base is the buffer's owner too)
    del first
    second = output.held_array((4, 8), np.dtype("f8"))
    assert second.ctypes.data != address  # the buffer under ``view`` is still in use
    view[...] = 1.0
    del view
    third = output.held_array((8, 4), np.dtype("i8"))  # (the same size, another shape and type)
    assert third.ctypes.data == address and third.flags.writeable and third.flags.c_contiguous
    del second, third
    monkeypatch.setattr(output, "_spare_room", lambda: 256)
    output._spare.clear()
    monkeypatch.setattr(output, "_spare_bytes", 0)
    many = [output.held_array((8, 8), np.dtype("f8")) for _ in range(3)]  # 512 bytes each
    del many
    assert output._spare_bytes == 0  # (more than the room: none kept)


def test_buffers_kept_for_reuse_and_the_pool_stay_within_the_budget(tmp_path, monkeypatch):
    """What ``cache_clear`` or an eviction leaves is kept for the next entries of its size,
    large held shards included (mappings of their own), but never more than the pool's
    budget less what the pool holds: the pool growing again lets go of kept buffers."""
    import zarrdask.runtime.cache as cache
    import zarrdask.runtime.output as output

    monkeypatch.setattr(output, "_spare", {})
    monkeypatch.setattr(output, "_spare_bytes", 0)
    monkeypatch.setattr(cache._POOL, "limit", 0)  # (the largest budget asked in this test)
    zarrdask.cache_clear()
    budget = 40 << 20  # (an eighth of it: 5 MiB, so shards of 4 MiB are held whole)
    big = str(tmp_path / "big")  # 4 shards of 4 MiB (held whole: mappings of their own)
    model = np.arange(2048 * 2048, dtype="f4").reshape(2048, 2048)
    zarrdask.create_array(big, data=model, chunks=(256, 256), shards=(1024, 1024), compressors=None)
    a = zarrdask.open_array(big, cache_bytes=budget)
    np.testing.assert_array_equal(a[...], model)
    held = [entry.data.ctypes.data for entry in cache._POOL._entries.values()]
    assert len(held) == 4 and all(entry.data.nbytes == 4 << 20 for entry in cache._POOL._entries.values())
    zarrdask.cache_clear()
    assert output.spare_bytes() == 16 << 20  # (all of it: the pool is empty)
    np.testing.assert_array_equal(a[...], model)
    assert sorted(entry.data.ctypes.data for entry in cache._POOL._entries.values()) == sorted(held)
    assert output.spare_bytes() == 0
    zarrdask.cache_clear()
    small = str(tmp_path / "small")  # chunks of 1 MiB, another size: the kept 4 MiB buffers give way
    other = np.ones((8192, 1024), dtype="f4")
    zarrdask.create_array(small, data=other, chunks=(256, 1024), compressors=None)
    b = zarrdask.open_array(small, cache_bytes=budget)
    for start in range(0, 8192, 256):
        np.testing.assert_array_equal(b[start: start + 256], other[start: start + 256])
        assert cache._POOL.bytes + output.spare_bytes() <= budget
    assert cache._POOL.bytes == 32 << 20 and output.spare_bytes() == 8 << 20  # (two of the four kept)
    np.testing.assert_array_equal(b[...], other)  # (read again: hits, nothing moves)
    zarrdask.cache_clear()
    c = zarrdask.open_array(small, cache_bytes=budget)
    assert c[0, 0] == 1.0
    assert cache._POOL.bytes + output.spare_bytes() <= budget


def test_a_cache_emptied_and_read_again_decodes_into_the_memory_it_left(tmp_path, monkeypatch):
    import zarrdask.runtime.output as output

    monkeypatch.setattr(output, "_spare", {})
    monkeypatch.setattr(output, "_spare_bytes", 0)
    path = str(tmp_path / "a")
    model = np.arange(64 * 48, dtype="f8").reshape(64, 48)
    zarrdask.create_array(path, data=model, chunks=(8, 8), shards=(32, 48))  # (12 KiB shards: held whole)
    a = zarrdask.open_array(path, cache_bytes="16 KiB")  # (a 2 KiB eighth: shards held chunk by chunk)
    zarrdask.cache_clear()
    np.testing.assert_array_equal(a[:, 5], model[:, 5])  # 8 chunks of 512 bytes held
    zarrdask.cache_clear()
    assert output._spare_bytes == 8 * 512
    np.testing.assert_array_equal(a[3:40, 2:7], model[3:40, 2:7])  # 5 chunks: into 5 of those buffers
    assert output._spare_bytes == 3 * 512
    np.testing.assert_array_equal(a[...], model)
