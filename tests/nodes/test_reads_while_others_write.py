"""Reads of a sharded array while another process rewrites its shards.

A partial read of a shard reads its index, then its chunks' byte ranges: in two requests,
or long apart when the index is cached by the open array. Another process's write in
between (a new file renamed onto the key) moves the chunks. On local files the two reads'
versions are compared, so a read gives the old value or the new one, never one version's
offsets applied to another's bytes (before: the neighbouring chunk's values, silently,
where chunks are uncompressed). The other process is simulated in-process by replacing
the shard's file as a writer does (``os.replace`` of a file written elsewhere), and once
by a real process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.storage.base import ByteRequest, VersionedRanges
from zarrdask.storage.local import LocalStore

SHARD = (8, 8)
LAYOUTS = {
    "raw": dict(compressors=None),
    "zstd": dict(compressors=[{"name": "zstd", "configuration": {"level": 1}}]),
}


def _make(path: Path, values: np.ndarray, compressors: object) -> zarrdask.Array:
    """An (8, 8) int32 array of one shard of 2x2 chunks, ``values`` written (chunks all
    fill value are not stored, so the present chunks' offsets depend on the values)."""
    a = zarrdask.create_array(str(path), shape=SHARD, chunks=(2, 2), shards=SHARD, dtype="int32", fill_value=0,
                              compressors=compressors, overwrite=True)
    a[...] = values
    return a


def _version(seed: int, absent: list[bool]) -> np.ndarray:
    """Values whose 2x2 chunks are all zero (not stored) where ``absent`` says."""
    values = np.random.default_rng(seed).integers(1, 1000, SHARD, dtype="int32")
    for k, gone in enumerate(absent):
        if gone:
            r, c = divmod(k, 4)
            values[2 * r: 2 * r + 2, 2 * c: 2 * c + 2] = 0
    return values


def _replace_shard(src: Path, dst: Path) -> None:
    """Put ``src``'s shard onto ``dst``'s as another process's write does: a new file
    renamed onto the key."""
    tmp = dst / "c" / ".0.0.incoming"
    shutil.copyfile(src / "c" / "0" / "0", tmp)
    os.replace(tmp, dst / "c" / "0" / "0")


windows = st.tuples(st.integers(0, 7), st.integers(1, 8), st.integers(0, 7), st.integers(1, 8)).map(
    lambda t: (slice(t[0], min(8, t[0] + t[1])), slice(t[2], min(8, t[2] + t[3]))))
presence = st.lists(st.booleans(), min_size=16, max_size=16)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@settings(max_examples=40, deadline=None)
@given(old=presence, new=presence, first=windows, then=windows)
def test_a_cached_index_is_not_used_on_another_version(tmp_path_factory, layout, old, new, first, then):
    base = tmp_path_factory.mktemp("v")
    before, after = _version(1, old), _version(2, new)
    _make(base / "a.zarr", before, LAYOUTS[layout]["compressors"])
    _make(base / "b.zarr", after, LAYOUTS[layout]["compressors"])
    reader = zarrdask.open_array(str(base / "a.zarr"))
    assert np.array_equal(reader[first], before[first])  # (its index now cached)
    _replace_shard(base / "b.zarr", base / "a.zarr")
    assert np.array_equal(reader[then], after[then])


class _SwappingStore(LocalStore):
    """A local store whose shard is replaced by another version after each of its first
    ``swaps`` versioned reads: between a read's index request and its ranges request."""

    def __init__(self, root: str, versions: list[Path], swaps: int) -> None:
        super().__init__(root, read_only=True)
        self.versions, self.swaps, self.reads = versions, swaps, 0

    def _get_ranges_versioned(self, requests: list[tuple[str, ByteRequest]]) -> VersionedRanges:
        got = super()._get_ranges_versioned(requests)
        if self.reads < self.swaps:
            _replace_shard(self.versions[self.reads % len(self.versions)], Path(self.root))
        self.reads += 1
        return got


@pytest.mark.parametrize("swaps, expected", [(1, "b"), (2, "c")])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_shard_replaced_between_index_and_chunks_is_read_again(tmp_path, layout, swaps, expected):
    """Replaced once between the requests: read again with the new index; replaced again
    then: read whole (one request, one version)."""
    compressors = LAYOUTS[layout]["compressors"]
    absent = {"a": {0}, "b": {5, 6}, "c": set()}  # (each version's chunks at other offsets)
    values = {name: _version(k, [i in absent[name] for i in range(16)]) for k, name in enumerate("abc")}
    for name, v in values.items():
        _make(tmp_path / f"{name}.zarr", v, compressors)
    store = _SwappingStore(str(tmp_path / "a.zarr"), [tmp_path / "b.zarr", tmp_path / "c.zarr"], swaps)
    reader = zarrdask.open_array(store)
    assert np.array_equal(reader[1:7, 1:7], values[expected][1:7, 1:7])


_WRITER = """
import sys, numpy as np, zarrdask
a = zarrdask.open_array(sys.argv[1], mode="r+")
a[0:2, 0:2] = np.arange(1, 5, dtype="int32").reshape(2, 2)  # the shard's first chunk, absent until now
"""


def test_another_process_writing_a_shard_a_reader_has_read(tmp_path):
    path = tmp_path / "a.zarr"
    values = _version(3, [True] + [False] * 15)
    _make(path, values, None)
    reader = zarrdask.open_array(str(path))
    assert np.array_equal(reader[4:6], values[4:6])
    subprocess.run([sys.executable, "-c", _WRITER, str(path)], check=True, timeout=120)
    values[0:2, 0:2] = np.arange(1, 5).reshape(2, 2)
    assert np.array_equal(reader[4:6], values[4:6])  # (the cached index put chunk (0, 0) here)
    assert np.array_equal(reader[...], values)
