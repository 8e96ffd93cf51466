"""Reads of a sharded array while another process rewrites its shards.

A partial read of a shard reads its index, then its chunks' byte ranges: in two requests,
or long apart when the index is cached by the open array. Another process's write in
between (on disk a new file renamed onto the key, on S3 a new object) moves the chunks.
Local files and S3 tell each read's version (``Store.get_then``: one descriptor for both
steps on disk, two requests compared on S3), so a read gives the old value or the new one,
never one version's offsets applied to another's bytes
(before: the neighbouring chunk's values, silently, where chunks are uncompressed). The
other process is simulated by writing the shard's key through a store of its own (on disk
a new file renamed onto the key, as any zarrdask writer does), and once by a real process.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from _s3 import BUCKET, s3_storage_options
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.storage.base import ByteRequest, Store, Then, ThenRead
from zarrdask.storage.fsspec_store import FsspecStore
from zarrdask.storage.local import LocalStore

SHARD = (8, 8)
SHARD_KEY = "c/0/0"
COMPRESSORS = {"raw": None, "zstd": [{"name": "zstd", "configuration": {"level": 1}}]}


def _version(seed: int, absent: set[int]) -> np.ndarray:
    """Values whose 2x2 chunks (numbered in C order) are all zero (not stored) where
    ``absent`` says: the present chunks' offsets in the shard differ between versions."""
    values = np.random.default_rng(seed).integers(1, 1000, SHARD, dtype="int32")
    for k in absent:
        r, c = divmod(k, 4)
        values[2 * r: 2 * r + 2, 2 * c: 2 * c + 2] = 0
    return values


def _shard(store: Store, values: np.ndarray, compressors: object) -> bytes:
    """The shard of an (8, 8) int32 array of 2x2 chunks in one shard holding ``values``,
    written into ``store``; its bytes."""
    a = zarrdask.create_array(store, shape=SHARD, chunks=(2, 2), shards=SHARD, dtype="int32", fill_value=0,
                              compressors=compressors, overwrite=True)
    a[...] = values
    blob = store.get(SHARD_KEY)
    assert blob is not None
    return blob


@pytest.fixture(params=["local", "s3"])
def new_store(request, tmp_path_factory) -> Callable[[], Store]:
    """Makes a fresh empty writable store: a local directory, or a prefix on moto's S3."""
    if request.param == "local":
        return lambda: LocalStore(tmp_path_factory.mktemp("v"))
    endpoint = request.getfixturevalue("s3_endpoint")
    return lambda: FsspecStore(f"s3://{BUCKET}/{uuid.uuid4().hex}", storage_options=s3_storage_options(endpoint))


windows = st.tuples(st.integers(0, 7), st.integers(1, 8), st.integers(0, 7), st.integers(1, 8)).map(
    lambda t: (slice(t[0], min(8, t[0] + t[1])), slice(t[2], min(8, t[2] + t[3]))))
absences = st.sets(st.integers(0, 15), max_size=15)


@pytest.mark.parametrize("layout", sorted(COMPRESSORS))
@settings(max_examples=25, deadline=None,  # (new_store makes a fresh store per call)
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=absences, new=absences, first=windows, then=windows)
def test_a_cached_index_is_not_used_on_another_version(new_store, layout, old, new, first, then):
    before, after = _version(1, old), _version(2, new)
    store = new_store()
    _shard(store, before, COMPRESSORS[layout])
    replacement = _shard(new_store(), after, COMPRESSORS[layout])
    reader = zarrdask.open_array(store, mode="r")
    assert np.array_equal(reader[first], before[first])  # (its index now cached)
    store.set(SHARD_KEY, replacement)  # (through the store: no zarrdask array of this open is told)
    assert np.array_equal(reader[then], after[then])


def test_a_shard_deleted_after_its_index_was_cached_reads_as_fill_value(new_store):
    store = new_store()
    values = _version(4, {3})
    _shard(store, values, None)
    reader = zarrdask.open_array(store, mode="r")
    assert np.array_equal(reader[0:2], values[0:2])
    store.delete(SHARD_KEY)  # (all written back to the fill value, by another process)
    assert np.array_equal(reader[2:4], np.zeros((2, 8), "int32"))


class _Swapping:
    """Replaces the shard with the next of ``replacements`` (through ``put``) each time a
    read has seen its index and asked for its chunks' ranges (``Store.get_then``'s
    ``then``), for the first ``len(replacements)`` reads: between the two steps."""

    def __init__(self, put: Callable[[bytes], None], replacements: list[bytes]) -> None:
        self.put, self.replacements = put, list(replacements)

    def __call__(self, get_then: Callable[..., list[ThenRead]], requests: list[tuple[str, ByteRequest | None]],
                 then: Then) -> list[ThenRead]:
        def swapping_then(i: int, first: bytes | None, version: object) -> Sequence[ByteRequest]:
            ranges = then(i, first, version)
            if self.replacements:
                self.put(self.replacements.pop(0))
            return ranges

        return get_then(requests, swapping_then)


@pytest.mark.parametrize("swaps, expected", [(1, "b"), (2, "c")])
@pytest.mark.parametrize("layout", sorted(COMPRESSORS))
def test_a_shard_replaced_between_index_and_chunks_is_read_again(new_store, monkeypatch, layout, swaps, expected):
    """Replaced (a new file renamed onto the key, a new S3 object) after the read saw the
    index: read again with the new index, and whole (one request, one version) if it was
    replaced again then. (On disk the read's descriptor still holds the old file, whose
    change time the rename moves: the read is told all the same.)"""
    absent = {"a": {0}, "b": {5, 6}, "c": set()}  # (each version's chunks at other offsets)
    values = {name: _version(k, absent[name]) for k, name in enumerate("abc")}
    store = new_store()
    _shard(store, values["a"], COMPRESSORS[layout])
    replacements = [_shard(new_store(), values[n], COMPRESSORS[layout]) for n in "bc"[:swaps]]
    swapping = _Swapping(lambda blob: store.set(SHARD_KEY, blob), replacements)
    reader = zarrdask.open_array(store, mode="r")
    fetching = reader.units.fetch.store
    get_then = fetching.get_then
    monkeypatch.setattr(fetching, "get_then", lambda requests, then: swapping(get_then, requests, then))
    monkeypatch.setattr(fetching, "reach", lambda: 0)  # (on S3 this small shard would come whole with its index)
    assert np.array_equal(reader[1:7, 1:7], values[expected][1:7, 1:7])


@pytest.mark.parametrize("swaps, expected", [(1, "b"), (2, "c")])
@pytest.mark.parametrize("layout", sorted(COMPRESSORS))
def test_a_shard_rewritten_in_place_between_index_and_chunks_is_read_again(tmp_path, monkeypatch, layout, swaps,
                                                                          expected):
    """Another writer that rewrites the file in place (not zarrdask's way) after the read
    saw the index: the descriptor's version differs once the chunks are read, so the shard
    is read again with the new index, and whole if it was rewritten again then."""
    absent = {"a": {0}, "b": {5, 6}, "c": set()}
    values = {name: _version(k, absent[name]) for k, name in enumerate("abc")}
    store = LocalStore(tmp_path / "a.zarr")
    _shard(store, values["a"], COMPRESSORS[layout])
    replacements = [_shard(LocalStore(tmp_path / n), values[n], COMPRESSORS[layout]) for n in "bc"[:swaps]]

    def in_place(blob: bytes) -> None:
        with open(store.path_of(SHARD_KEY), "r+b") as f:  # (the same inode: truncated and written)
            f.truncate(0)
            f.write(blob)

    swapping = _Swapping(in_place, replacements)
    reader = zarrdask.open_array(store, mode="r")
    fetching = reader.units.fetch.store
    get_then = fetching.get_then
    monkeypatch.setattr(fetching, "get_then", lambda requests, then: swapping(get_then, requests, then))
    assert np.array_equal(reader[1:7, 1:7], values[expected][1:7, 1:7])


_WRITER = """
import sys, numpy as np, zarrdask
a = zarrdask.open_array(sys.argv[1], mode="r+")
a[0:2, 0:2] = np.arange(1, 5, dtype="int32").reshape(2, 2)  # the shard's first chunk, absent until now
"""


def test_another_process_writing_a_shard_a_reader_has_read(tmp_path):
    path = tmp_path / "a.zarr"
    values = _version(3, {0})
    _shard(LocalStore(path), values, None)
    reader = zarrdask.open_array(str(path))
    assert np.array_equal(reader[4:6], values[4:6])
    subprocess.run([sys.executable, "-c", _WRITER, str(path)], check=True, timeout=120)
    values[0:2, 0:2] = np.arange(1, 5).reshape(2, 2)
    assert np.array_equal(reader[4:6], values[4:6])  # (the cached index put chunk (0, 0) here)
    assert np.array_equal(reader[...], values)


_REWRITER = """
import sys, time
from zarrdask.storage.local import LocalStore
store, blobs = LocalStore(sys.argv[1]), [open(p, "rb").read() for p in sys.argv[3:]]
end, n = time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end:
    store.set("c/0/0", blobs[n % len(blobs)])
    n += 1
print(n)
"""


@pytest.mark.parametrize("layout", sorted(COMPRESSORS))
def test_reads_while_another_process_rewrites_the_shard(tmp_path, layout):
    """A writer process puts two versions of the shard in turn as fast as it can while this
    process reads windows through one open array: every read is one version's window."""
    versions = [_version(5, {0, 9}), _version(6, {4, 5, 15})]
    blobs = []
    for k, v in enumerate(versions):
        blob = tmp_path / f"v{k}"
        blob.write_bytes(_shard(LocalStore(tmp_path / f"v{k}.zarr"), v, COMPRESSORS[layout]))
        blobs.append(str(blob))
    path = tmp_path / "a.zarr"
    _shard(LocalStore(path), versions[0], COMPRESSORS[layout])
    reader = zarrdask.open_array(str(path))
    writer = subprocess.Popen([sys.executable, "-c", _REWRITER, str(path), "3", *blobs], stdout=subprocess.PIPE)
    rng = np.random.default_rng(0)
    reads, seen = 0, set()
    while writer.poll() is None:
        r, c = rng.integers(0, 7, 2)
        window = (slice(r, r + 2), slice(c, c + 2))
        got = reader[window]
        matches = [k for k, v in enumerate(versions) if np.array_equal(got, v[window])]
        assert matches, f"read {reads}: {got.tolist()} is neither version's {window}"
        seen.update(matches)
        reads += 1
    assert writer.wait() == 0 and int(writer.stdout.read()) > 10
    assert reads > 10 and seen == {0, 1}
