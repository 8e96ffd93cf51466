"""Fuzzing hostile input: every input ends in a correct result or a ZarrdaskError.

Mutated and random metadata documents (``zarr.json``, ``.zarray``, ``.zattrs``,
``.zgroup``, ``.zmetadata``), chunk bytes of every codec, shard indexes and forged size
claims are opened and read (tests/_fuzz_inputs.py). Any other exception is a finding;
a crash kills the run; a hang trips the deadline. The suite runs 10,000 inputs; a long
run (README, "Security")::

    ZARRDASK_FUZZ_EXAMPLES=1000000 .venv/bin/python -m pytest tests/interop/test_fuzz.py -p no:cacheprovider --timeout=0
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random
import struct
import tracemalloc
import zlib
from datetime import timedelta

import crc32c
import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import ChecksumError, CorruptChunkError, MetadataError, TooLargeError, ZarrdaskError

from _fuzz_inputs import (
    all_seeds,
    as_store,
    built_seeds,
    exercise,
    metadata_keys,
    mutate_bytes,
    mutate_document,
    outcome,
    random_json,
    scaled,
)

FUZZ = settings(
    derandomize=True,
    deadline=timedelta(seconds=20),  # a hang is a finding; a slow shared machine is not
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
RANDOMS = st.randoms(use_true_random=False)


@settings(FUZZ, max_examples=scaled(0.45))
@given(RANDOMS)
def test_mutated_metadata(r: random.Random) -> None:
    """A seed store with one metadata document mutated (fields deleted, wrong types, huge
    or zero shapes and chunks, broken codec and sharding configurations, bad bytes)."""
    seeds = all_seeds()
    files = dict(seeds[r.randrange(len(seeds))])
    mutate_document(r, files, r.choice(metadata_keys(files)))
    outcome(exercise, files, r)


@settings(FUZZ, max_examples=scaled(0.10))
@given(RANDOMS, st.sampled_from(["zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"]))
def test_random_documents(r: random.Random, name: str) -> None:
    """A random JSON document as a node's only metadata (and ``.zattrs`` beside a valid
    ``.zarray`` / ``.zgroup``)."""
    files = {name: json.dumps(random_json(r)).encode()}
    if name == ".zattrs":
        files[r.choice([".zarray", ".zgroup"])] = json.dumps(
            {"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "<i2", "compressor": None,
             "fill_value": 0, "order": "C", "filters": None}).encode()
    outcome(exercise, files, r)


@settings(FUZZ, max_examples=scaled(0.35))
@given(RANDOMS)
def test_mutated_chunks(r: random.Random) -> None:
    """An array written with each codec (v3 and v2, sharded, nested, strings) with one
    stored value mutated. Where every value carries a crc32c, the read is the original
    data or an error, never other values."""
    seeds = built_seeds()
    name, files, checksummed, values = seeds[r.randrange(len(seeds))]
    files = dict(files)
    chunks = sorted(k for k in files if k not in metadata_keys(files))
    key = r.choice(chunks)
    files[key] = mutate_bytes(r, files[key])
    result = outcome(exercise, files, r)
    if checksummed and not isinstance(result, ZarrdaskError):
        np.testing.assert_array_equal(result[0], values, err_msg=f"{name}: mutated {key} read as other values")


SHARD_GRID = (2, 2)  # the inner chunks of shard c/0/0 of the "sharded-crc" seed
MISSING = 2**64 - 1


@settings(FUZZ, max_examples=scaled(0.10))
@given(RANDOMS, st.booleans())
def test_mutated_shard_index(r: random.Random, checksummed: bool) -> None:
    """A shard whose index entries are rewritten (offsets and sizes random, huge, out of
    the shard, overlapping, absent) with a valid index checksum, so the index itself is
    hostile, not merely corrupt. Each inner chunk carries a crc32c, so a read either
    errors or returns chunks that verify."""
    name = "sharded-crc" if checksummed else "sharded"
    _, files, _, values = next(s for s in built_seeds() if s[0] == name)
    files = dict(files)
    shard = bytearray(files["c/0/0"])
    n = SHARD_GRID[0] * SHARD_GRID[1]
    size = len(shard) - 16 * n - 4
    table = np.frombuffer(bytes(shard[size: size + 16 * n]), "<u8").reshape(n, 2).copy()
    for _ in range(r.randint(1, 4)):
        i, j = r.randrange(n), r.randrange(2)
        table[i, j] = r.choice([MISSING, 0, 1, size, size - 1, size + 1, 2**63, int(table[r.randrange(n), j]),
                                r.randrange(size + 8), r.getrandbits(64)])
    raw = table.astype("<u8").tobytes()
    files["c/0/0"] = bytes(shard[:size]) + raw + struct.pack("<I", crc32c.crc32c(raw))
    outcome(exercise, files, r)


# ---------------------------------------------------------------------------------------
# forged size claims: rejected before anything is allocated
# ---------------------------------------------------------------------------------------
GIB = 1 << 30


def _zstd_frame_claiming(size: int) -> bytes:
    """A zstd frame whose header claims ``size`` decoded bytes (8-byte content size) and
    holds one RLE block of a single byte: tiny, and only the claim is large."""
    header = struct.pack("<IB", 0xFD2FB528, 0b11_1_0_0_0_00 | 0x20) + struct.pack("<Q", size)
    block = struct.pack("<I", (1 << 0) | (1 << 1) | (8 << 3))[:3] + b"\x00"  # last, RLE, 8 bytes
    return header + block


def _blosc_claiming(size: int) -> bytes:
    return bytes([2, 1, 0x1, 4]) + struct.pack("<III", size, 0, 32) + bytes(16)


def _lz4_claiming(size: int) -> bytes:
    return struct.pack("<i", size) + bytes(8)


def _vlen_claiming(count: int) -> bytes:
    return struct.pack("<I", count) + bytes(8)


BOMBS = {
    # name: (codec chain after the serializer or the serializer itself, the hostile chunk)
    "zstd-claim": ([{"name": "zstd", "configuration": {"level": 1}}], _zstd_frame_claiming(GIB)),
    "numcodecs.zstd-claim": ([{"name": "numcodecs.zstd", "configuration": {"level": 1}}], _zstd_frame_claiming(GIB)),
    "blosc-claim": ([{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "noshuffle",
                                                          "typesize": 4, "blocksize": 0}}], _blosc_claiming(GIB)),
    "lz4-claim": ([{"name": "numcodecs.lz4", "configuration": {}}], _lz4_claiming(GIB)),
    "gzip-bomb": ([{"name": "gzip", "configuration": {"level": 1}}], gzip.compress(bytes(GIB // 8), 9)),
    "zlib-bomb": ([{"name": "numcodecs.zlib", "configuration": {"level": 1}}], zlib.compress(bytes(GIB // 8), 9)),
    "bz2-bomb": ([{"name": "numcodecs.bz2", "configuration": {"level": 1}}], bz2.compress(bytes(GIB // 8), 9)),
    "lzma-bomb": ([{"name": "numcodecs.lzma", "configuration": {}}], lzma.compress(bytes(GIB // 8))),
}


@pytest.mark.parametrize("name", list(BOMBS) + ["vlen-claim", "v2-zstd-claim", "v2-vlen-claim"])
def test_size_claims_rejected_before_allocating(name: str) -> None:
    """A 4 KiB chunk whose compressed form claims (or inflates to) 128 MiB to 1 GiB: a
    CorruptChunkError naming the chunk, with at most a few MiB allocated meanwhile."""
    store = zarrdask.storage.MemoryStore()
    if name == "vlen-claim":
        a = zarrdask.create_array(store, shape=(1024,), chunks=(1024,), dtype="string", compressors=None)
        blob, key = _vlen_claiming(2**31), "c/0"
    elif name.startswith("v2-"):
        dtype, compressor = ("i4", {"id": "zstd", "level": 1}) if name == "v2-zstd-claim" else (str, None)
        a = zarrdask.create_array(store, shape=(1024,), chunks=(1024,), dtype=dtype, zarr_format=2,
                                  compressors=compressor)
        blob = _zstd_frame_claiming(GIB) if name == "v2-zstd-claim" else _vlen_claiming(2**31)
        key = "0"
    else:
        codecs, blob = BOMBS[name]
        a = zarrdask.create_array(store, shape=(1024,), chunks=(1024,), dtype="i4",
                                  codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, *codecs])
        key = "c/0"
    store.set(key, blob)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptChunkError, match=key):
            a[...]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{name}: {peak} bytes allocated for a 4 KiB chunk"


def test_zstd_frames_without_content_size_are_bounded_too() -> None:
    """A frame written without its content size (streamed) decodes within the chunk size,
    and one that decodes to more than the chunk fails."""
    store = zarrdask.storage.MemoryStore()
    a = zarrdask.create_array(store, shape=(1024,), chunks=(1024,), dtype="i4", fill_value=0,
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    plain = zstandard.ZstdCompressor(write_content_size=False)
    store.set("c/0", plain.compress(np.arange(1024, dtype="<i4").tobytes()))
    np.testing.assert_array_equal(a[...], np.arange(1024))
    store.set("c/0", plain.compress(bytes(1 << 24)))
    with pytest.raises(CorruptChunkError, match="c/0"):
        a[...]


def test_results_that_cannot_fit_say_so() -> None:
    """Absurd shapes open lazily and read in parts; a whole read names the size."""
    store = zarrdask.storage.MemoryStore()
    store.set("zarr.json", json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [10**18, 2**40], "data_type": "float64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1000, 1000]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 1.5, "codecs": [{"name": "bytes"}]}).encode())
    a = zarrdask.open_array(store)
    assert a[10**18 - 1, 2**40 - 5] == 1.5
    assert a[5:7, 3].tolist() == [1.5, 1.5]
    with pytest.raises(TooLargeError, match=str(a.nbytes)) as info:
        a[...]
    assert isinstance(info.value, MemoryError)
    with pytest.raises(TooLargeError, match="GiB"):
        a[:10**5, :10**5]


def test_checksummed_chunks_never_read_as_other_values() -> None:
    """Every single-bit flip of a crc32c-protected chunk is a ChecksumError."""
    _, files, _, values = next(s for s in built_seeds() if s[0] == "bytes-crc")
    blob = files["c/0/0"]
    for bit in range(len(blob) * 8):
        changed = dict(files)
        flipped = bytearray(blob)
        flipped[bit // 8] ^= 1 << bit % 8
        changed["c/0/0"] = bytes(flipped)
        with pytest.raises(ChecksumError):
            zarrdask.open_array(as_store(changed))[0:4, 0:3]


def test_pickle_object_codec_is_refused() -> None:
    store = zarrdask.storage.MemoryStore()
    store.set(".zarray", json.dumps({"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O",
                                     "compressor": None, "fill_value": None, "order": "C",
                                     "filters": [{"id": "pickle"}]}).encode())
    with pytest.raises(MetadataError, match="pickle"):
        zarrdask.open_array(store)


def test_checksums_can_be_skipped() -> None:
    """``verify_checksums=False`` reads a chunk whose crc32c does not match (inner chunks and
    shard indexes alike); a truncated one is still an error."""
    store = zarrdask.storage.MemoryStore()
    a = zarrdask.create_array(store, shape=(8, 8), chunks=(4, 4), shards=(8, 8), dtype="i4", compressors=[{"name": "crc32c"}])
    a[...] = np.arange(64).reshape(8, 8)
    shard = bytearray(store.get("c/0/0"))
    shard[0] ^= 1  # inner chunk (0, 0), element (0, 0)
    shard[-1] ^= 1  # the index's crc32c
    store.set("c/0/0", bytes(shard))
    with pytest.raises(ChecksumError):
        zarrdask.open_array(store)[...]
    read = zarrdask.open_array(store, verify_checksums=False)[...]
    assert read[0, 0] == 1 and (read.reshape(-1)[1:] == np.arange(1, 64)).all()
    store.set("c/0/0", bytes(shard[:-70]))
    with pytest.raises(CorruptChunkError):
        zarrdask.open_array(store, verify_checksums=False)[...]
