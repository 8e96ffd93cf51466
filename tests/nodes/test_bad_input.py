"""Bad input: every problem is a ``ZarrdaskError`` subclass whose message names the key / field.

The stores here are written by hand (JSON + chunk bytes built in the test with numpy,
gzip and crc32c), so these tests do not depend on zarrdask's writer: each starts from a
valid document, checks that it opens and reads, then breaks one thing.
"""

from __future__ import annotations

import copy
import gzip
import json
import struct
from pathlib import Path

import crc32c as crc32c_mod
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import (
    BoundsError,
    ChecksumError,
    CodecError,
    ContainsNodeError,
    CorruptChunkError,
    InvalidKeyError,
    MetadataError,
    MissingChunkError,
    NodeNotFoundError,
    ReadOnlyError,
    SelectionError,
    ShapeMismatchError,
    UnknownExtensionError,
    ZarrdaskError,
)

SHAPE = (4, 6)
CHUNKS = (2, 3)
FILL = 5
DATA = (np.arange(24, dtype="<i2").reshape(SHAPE) * 3 - 20).astype("<i2")


# ======================================================================================
# hand-built stores
# ======================================================================================
def crc32c_bytes(payload: bytes) -> bytes:
    return struct.pack("<I", crc32c_mod.crc32c(payload))


def v3_doc(**overrides) -> dict:
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(SHAPE),
        "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(CHUNKS)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": FILL,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "attributes": {"a": 1},
    }
    doc.update(overrides)
    return doc


def encode_chunk(block: np.ndarray, codecs: list[str]) -> bytes:
    raw = np.ascontiguousarray(block.astype("<i2")).tobytes()
    for c in codecs:
        if c == "gzip":
            raw = gzip.compress(raw, mtime=0)
        elif c == "crc32c":
            raw = raw + crc32c_bytes(raw)
    return raw


def write_v3_array(root: Path, doc: dict | None = None, codecs=("crc32c",), skip=()) -> Path:
    """A v3 int16 array (SHAPE, CHUNKS) with every chunk written by hand (except ``skip``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "zarr.json").write_text(json.dumps(doc if doc is not None else v3_doc()))
    for i in range(SHAPE[0] // CHUNKS[0]):
        for j in range(SHAPE[1] // CHUNKS[1]):
            if (i, j) in skip:
                continue
            block = DATA[i * 2:(i + 1) * 2, j * 3:(j + 1) * 3]
            p = root / "c" / str(i) / str(j)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(encode_chunk(block, list(codecs)))
    return root


def write_v2_array(root: Path, zarray: dict | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    meta = zarray or {
        "zarr_format": 2, "shape": list(SHAPE), "chunks": list(CHUNKS), "dtype": "<i2",
        "compressor": None, "fill_value": FILL, "order": "C", "filters": None,
    }
    (root / ".zarray").write_text(json.dumps(meta))
    for i in range(2):
        for j in range(2):
            (root / f"{i}.{j}").write_bytes(np.ascontiguousarray(DATA[i * 2:(i + 1) * 2, j * 3:(j + 1) * 3]).tobytes())
    return root


SHARD = (4, 6)  # one shard holds the whole array; inner chunks = CHUNKS -> 4 inner chunks
N_INNER = 4
MISSING = 2**64 - 1


def shard_doc(index_crc=True, location="end") -> dict:
    index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if index_crc:
        index_codecs.append({"name": "crc32c"})
    return v3_doc(
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(SHARD)}},
        codecs=[{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(CHUNKS),
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_codecs": index_codecs,
            "index_location": location,
        }}],
    )


def build_shard(index_crc=True, location="end", missing=(), index_patch=None) -> bytes:
    """The one shard, by hand: inner chunks (bytes + crc32c) then the index (+crc)."""
    chunks, index = [], []
    index_size = N_INNER * 16 + (4 if index_crc else 0)
    offset = index_size if location == "start" else 0
    for k, (i, j) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        if k in missing:
            index.append((MISSING, MISSING))
            continue
        enc = encode_chunk(DATA[i * 2:(i + 1) * 2, j * 3:(j + 1) * 3], ["crc32c"])
        index.append((offset, len(enc)))
        chunks.append(enc)
        offset += len(enc)
    if index_patch:
        for k, entry in index_patch.items():
            index[k] = entry
    idx = np.array(index, dtype="<u8").tobytes()
    if index_crc:
        idx += crc32c_bytes(idx)
    body = b"".join(chunks)
    return idx + body if location == "start" else body + idx


def write_sharded(root: Path, shard: bytes | None = None, index_crc=True, location="end") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "zarr.json").write_text(json.dumps(shard_doc(index_crc, location)))
    if shard is None:
        shard = build_shard(index_crc, location)
    (root / "c" / "0").mkdir(parents=True, exist_ok=True)
    (root / "c" / "0" / "0").write_bytes(shard)
    return root


def read_all(path, **kw):
    node = zarrdask.open(str(path), **kw)
    return np.asarray(node[...])


def expect_error(exc_type, path, *words, **open_kw):
    """Opening + reading ``path`` raises ``exc_type`` (a ZarrdaskError) naming all ``words``."""
    assert issubclass(exc_type, ZarrdaskError)
    with pytest.raises(ZarrdaskError) as ei:
        read_all(path, **open_kw)
    assert isinstance(ei.value, exc_type), f"expected {exc_type.__name__}, got {type(ei.value).__name__}: {ei.value}"
    msg = str(ei.value)
    for w in words:
        assert w in msg, f"message does not mention {w!r}: {msg!r}"
    return ei.value


# ======================================================================================
# the baselines are valid (so each failure below is caused by the one thing broken)
# ======================================================================================
def test_baselines_are_valid(tmp_path):
    np.testing.assert_array_equal(read_all(write_v3_array(tmp_path / "v3")), DATA)
    np.testing.assert_array_equal(read_all(write_v2_array(tmp_path / "v2")), DATA)
    np.testing.assert_array_equal(read_all(write_sharded(tmp_path / "s")), DATA)
    np.testing.assert_array_equal(read_all(write_sharded(tmp_path / "s0", None, False, "start")), DATA)
    gz = write_v3_array(tmp_path / "gz", v3_doc(codecs=[{"name": "bytes", "configuration": {"endian": "little"}},
                                                        {"name": "gzip", "configuration": {"level": 5}}]), codecs=("gzip",))
    np.testing.assert_array_equal(read_all(gz), DATA)


# ======================================================================================
# malformed JSON
# ======================================================================================
@pytest.mark.parametrize("text", ["{\"zarr_format\": 3,", "", "not json at all", "[1, 2, 3]", "null", "\xff\xfe"])
def test_malformed_zarr_json(tmp_path, text):
    root = write_v3_array(tmp_path / "a")
    (root / "zarr.json").write_bytes(text.encode("latin-1"))
    expect_error(MetadataError, root, "zarr.json")


@pytest.mark.parametrize("name", [".zarray", ".zattrs"])
def test_malformed_v2_json(tmp_path, name):
    root = write_v2_array(tmp_path / "a")
    (root / name).write_text("{\"shape\": [4, ")
    expect_error(MetadataError, root, name)


def test_malformed_zgroup_and_child(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", "attributes": {}}')
    write_v3_array(tmp_path / "g" / "child")
    (tmp_path / "g" / "child" / "zarr.json").write_text("{oops")
    g = zarrdask.open(str(tmp_path / "g"))
    with pytest.raises(MetadataError) as ei:
        g["child"]
    assert "child/zarr.json" in str(ei.value) or "child" in str(ei.value)


# ======================================================================================
# wrong field types / values (v3)
# ======================================================================================
def _set(doc, path, value):
    d = doc
    for p in path[:-1]:
        d = d[p]
    if value is _DELETE:
        del d[path[-1]]
    else:
        d[path[-1]] = value
    return doc


_DELETE = object()
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}

V3_BAD_FIELDS = {
    "shape-string": (("shape",), "abc", "shape"),
    "shape-negative": (("shape",), [4, -6], "shape"),
    "shape-float": (("shape",), [4.5, 6], "shape"),
    "shape-missing": (("shape",), _DELETE, "shape"),
    "chunk-zero": (("chunk_grid", "configuration", "chunk_shape"), [0, 3], "chunk_shape"),
    "chunk-negative": (("chunk_grid", "configuration", "chunk_shape"), [-2, 3], "chunk_shape"),
    "chunk-wrong-rank": (("chunk_grid", "configuration", "chunk_shape"), [2], "chunk_shape"),
    "chunk-string": (("chunk_grid", "configuration", "chunk_shape"), "2,3", "chunk_shape"),
    "chunk-grid-not-object": (("chunk_grid",), 7, "chunk_grid"),
    "data-type-number": (("data_type",), 42, "data_type"),
    "fill-string-for-int": (("fill_value",), "abc", "fill_value"),
    "fill-list-for-int": (("fill_value",), [1, 2], "fill_value"),
    "fill-out-of-range": (("fill_value",), 70000, "fill_value"),
    "fill-float-for-int": (("fill_value",), 1.5, "fill_value"),
    "codecs-not-list": (("codecs",), "bytes-ish", "codecs"),
    "codecs-empty": (("codecs",), [], "codecs"),
    "codecs-no-array-to-bytes": (("codecs",), [{"name": "gzip", "configuration": {"level": 1}}], "codecs"),
    "codecs-two-serializers": (("codecs",), [BYTES, BYTES], "codecs"),
    "codecs-array-array-after-bytes": (("codecs",), [BYTES, {"name": "transpose", "configuration": {"order": [1, 0]}}], "transpose"),
    "codec-bad-endian": (("codecs",), [{"name": "bytes", "configuration": {"endian": "middle"}}], "endian"),
    "codec-gzip-level-string": (("codecs",), [BYTES, {"name": "gzip", "configuration": {"level": "high"}}], "level"),
    "codec-gzip-level-99": (("codecs",), [BYTES, {"name": "gzip", "configuration": {"level": 99}}], "level"),
    "codec-blosc-shuffle": (("codecs",), [BYTES, {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "sometimes", "typesize": 2, "blocksize": 0}}], "shuffle"),
    "codec-blosc-cname": (("codecs",), [BYTES, {"name": "blosc", "configuration": {
        "cname": "snappy9", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}], "cname"),
    "codec-transpose-not-permutation": (("codecs",), [{"name": "transpose", "configuration": {"order": [0, 0]}}, BYTES], "order"),
    "codec-transpose-wrong-rank": (("codecs",), [{"name": "transpose", "configuration": {"order": [2, 0, 1]}}, BYTES], "order"),
    "codec-entry-number": (("codecs",), [BYTES, 17], "codecs"),
    "dimension-names-wrong-length": (("dimension_names",), ["y"], "dimension_names"),
    "dimension-names-not-list": (("dimension_names",), "yx", "dimension_names"),
    "dimension-names-number": (("dimension_names",), ["y", 3], "dimension_names"),
    "attributes-list": (("attributes",), [1, 2], "attributes"),
    "node-type-banana": (("node_type",), "banana", "node_type"),
    "zarr-format-string": (("zarr_format",), "3", "zarr_format"),
    "cke-bad-separator": (("chunk_key_encoding",), {"name": "default", "configuration": {"separator": "-"}}, "separator"),
    "storage-transformers-not-list": (("storage_transformers",), {"name": "x"}, "storage_transformers"),
    "data-type-missing": (("data_type",), _DELETE, "data_type"),
    "codecs-missing": (("codecs",), _DELETE, "codecs"),
    "chunk-grid-missing": (("chunk_grid",), _DELETE, "chunk_grid"),
}


@pytest.mark.parametrize("field_path,value,word", list(V3_BAD_FIELDS.values()), ids=list(V3_BAD_FIELDS))
def test_v3_wrong_field(tmp_path, field_path, value, word):
    doc = _set(v3_doc(dimension_names=["y", "x"]), field_path, value)
    root = write_v3_array(tmp_path / "a", doc)
    err = expect_error(ZarrdaskError, root, word)
    # a metadata problem is reported as such, with the key of the document
    assert isinstance(err, (MetadataError, CodecError)), type(err)
    if isinstance(err, MetadataError):
        assert "zarr.json" in str(err)


def test_metadata_error_reports_every_problem(tmp_path):
    doc = v3_doc(shape="abc", fill_value="xyz", dimension_names=[1, 2])
    root = write_v3_array(tmp_path / "a", doc)
    err = expect_error(MetadataError, root, "shape", "fill_value", "dimension_names")
    assert len(err.problems) >= 3
    assert all(p.loc for p in err.problems), err.problems


V2_BAD_FIELDS = {
    "dtype-nonsense": ("dtype", "<x9", "dtype"),
    "order-Z": ("order", "Z", "order"),
    "shape-string": ("shape", "4,6", "shape"),
    "chunks-zero": ("chunks", [0, 3], "chunks"),
    "chunks-wrong-rank": ("chunks", [2], "chunks"),
    "zarr-format-3-in-zarray": ("zarr_format", 3, "zarr_format"),
    "compressor-unknown": ("compressor", {"id": "my_squash"}, "my_squash"),
    "filter-unknown": ("filters", [{"id": "my_filter"}], "my_filter"),
    "compressor-not-object": ("compressor", "zlib", "compressor"),
    "dimsep-bad": ("dimension_separator", "-", "dimension_separator"),
    "fill-string-for-int": ("fill_value", "abc", "fill_value"),
}


@pytest.mark.parametrize("key,value,word", list(V2_BAD_FIELDS.values()), ids=list(V2_BAD_FIELDS))
def test_v2_wrong_field(tmp_path, key, value, word):
    meta = {"zarr_format": 2, "shape": list(SHAPE), "chunks": list(CHUNKS), "dtype": "<i2",
            "compressor": None, "fill_value": FILL, "order": "C", "filters": None}
    meta[key] = value
    root = write_v2_array(tmp_path / "a", meta)
    err = expect_error(ZarrdaskError, root, word)
    assert isinstance(err, (MetadataError, CodecError)), type(err)


# ======================================================================================
# unknown extensions
# ======================================================================================
UNKNOWN = {
    "codec": ({"codecs": [BYTES, {"name": "my_codec", "configuration": {}}]}, "my_codec"),
    "codec-shorthand": ({"codecs": [BYTES, "my_codec2"]}, "my_codec2"),
    "serializer": ({"codecs": [{"name": "my_serializer"}]}, "my_serializer"),
    "data-type": ({"data_type": "int3"}, "int3"),
    "data-type-object": ({"data_type": {"name": "my_float", "configuration": {"bits": 12}}}, "my_float"),
    "data-type-mu-false": ({"data_type": {"name": "my_float", "must_understand": False}}, "my_float"),
    "chunk-grid": ({"chunk_grid": {"name": "hexagonal", "configuration": {"chunk_shapes": [[2, 2], [3, 3]]}}}, "hexagonal"),
    "chunk-key-encoding": ({"chunk_key_encoding": {"name": "my_keys", "configuration": {}}}, "my_keys"),
    "storage-transformer": ({"storage_transformers": [{"name": "my_transformer", "configuration": {}}]}, "my_transformer"),
    "top-level-field": ({"my_field": {"name": "x"}}, "my_field"),
    "top-level-field-plain": ({"my_field2": 17}, "my_field2"),
    "top-level-mu-true": ({"my_field3": {"name": "x", "must_understand": True}}, "my_field3"),
}


@pytest.mark.parametrize("change,name", list(UNKNOWN.values()), ids=list(UNKNOWN))
def test_unknown_extension(tmp_path, change, name):
    root = write_v3_array(tmp_path / "a", v3_doc(**change))
    expect_error(UnknownExtensionError, root, name)


def test_unknown_extension_in_group_metadata(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "zarr.json").write_text(json.dumps(
        {"zarr_format": 3, "node_type": "group", "attributes": {}, "my_group_ext": {"name": "y"}}))
    with pytest.raises(UnknownExtensionError, match="my_group_ext"):
        zarrdask.open(str(tmp_path / "g"))


def test_unknown_field_with_must_understand_false_is_accepted(tmp_path):
    doc = v3_doc(my_vendor_extension={"name": "my_vendor_extension", "must_understand": False, "configuration": {"x": [1]}})
    root = write_v3_array(tmp_path / "a", doc)
    np.testing.assert_array_equal(read_all(root), DATA)
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "zarr.json").write_text(json.dumps(
        {"zarr_format": 3, "node_type": "group", "attributes": {"k": 1},
         "vendor": {"name": "vendor", "must_understand": False}}))
    g = zarrdask.open(str(tmp_path / "g"))
    assert dict(g.attrs) == {"k": 1}


def test_shorthand_and_must_understand_true_known_codec_accepted(tmp_path):
    doc = v3_doc(codecs=["bytes", {"name": "crc32c", "must_understand": True}])
    root = write_v3_array(tmp_path / "a", doc)
    np.testing.assert_array_equal(read_all(root), DATA)


@pytest.mark.parametrize("fmt", [4, 1, 0, None])
def test_unsupported_zarr_format(tmp_path, fmt):
    root = write_v3_array(tmp_path / "a", v3_doc(zarr_format=fmt))
    expect_error(ZarrdaskError, root, "zarr_format")


# ======================================================================================
# corrupt chunks
# ======================================================================================
def test_truncated_chunk_uncompressed(tmp_path):
    doc = v3_doc(codecs=[BYTES])
    root = write_v3_array(tmp_path / "a", doc, codecs=())
    p = root / "c" / "1" / "0"
    p.write_bytes(p.read_bytes()[:-3])
    expect_error(CorruptChunkError, root, "c/1/0")


def test_oversized_chunk_uncompressed(tmp_path):
    doc = v3_doc(codecs=[BYTES])
    root = write_v3_array(tmp_path / "a", doc, codecs=())
    p = root / "c" / "0" / "1"
    p.write_bytes(p.read_bytes() + b"\x00\x00")
    expect_error(CorruptChunkError, root, "c/0/1")


def test_truncated_chunk_gzip(tmp_path):
    doc = v3_doc(codecs=[BYTES, {"name": "gzip", "configuration": {"level": 5}}])
    root = write_v3_array(tmp_path / "a", doc, codecs=("gzip",))
    p = root / "c" / "0" / "1"
    p.write_bytes(p.read_bytes()[:10])
    expect_error(CodecError, root, "c/0/1")


@pytest.mark.parametrize("codec", [
    {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
    {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}},
])
def test_garbage_compressed_chunk(tmp_path, codec):
    doc = v3_doc(codecs=[BYTES, codec])
    root = write_v3_array(tmp_path / "a", doc, codecs=())  # chunks not compressed: garbage for the codec
    expect_error(CodecError, root, "c/")


def test_truncated_chunk_v2(tmp_path):
    root = write_v2_array(tmp_path / "a")
    (root / "1.1").write_bytes((root / "1.1").read_bytes()[:5])
    expect_error(CorruptChunkError, root, "1.1")


def test_crc32c_mismatch(tmp_path):
    root = write_v3_array(tmp_path / "a")
    p = root / "c" / "1" / "0"
    raw = bytearray(p.read_bytes())
    raw[0] ^= 0x01  # flip one bit of the payload
    p.write_bytes(bytes(raw))
    err = expect_error(ChecksumError, root, "c/1/0")
    assert "crc32c" in str(err).lower() or "checksum" in str(err).lower()
    # a chunk shorter than the checksum itself
    p.write_bytes(b"\x01\x02")
    expect_error(CorruptChunkError, root, "c/1/0")


def test_crc32c_mismatch_only_affects_reads_of_that_chunk(tmp_path):
    root = write_v3_array(tmp_path / "a")
    p = root / "c" / "1" / "1"
    raw = bytearray(p.read_bytes())
    raw[-1] ^= 0xFF  # corrupt the stored checksum itself
    p.write_bytes(bytes(raw))
    arr = zarrdask.open(str(root))
    np.testing.assert_array_equal(np.asarray(arr[0:2, :]), DATA[0:2])  # other chunks fine
    with pytest.raises(ChecksumError, match="c/1/1"):
        arr[3, 5]


# ======================================================================================
# corrupt shards
# ======================================================================================
def test_truncated_shard(tmp_path):
    shard = build_shard()
    root = write_sharded(tmp_path / "a", shard[: len(shard) // 2])
    expect_error(CorruptChunkError, root, "c/0/0")


def test_shard_shorter_than_index(tmp_path):
    root = write_sharded(tmp_path / "a", b"\x00" * 10)
    expect_error(CorruptChunkError, root, "c/0/0")


def test_shard_index_points_past_end(tmp_path):
    good = build_shard(index_crc=False)
    # inner chunk (1, 0) (index entry 2) claims bytes far past the end of the shard
    bad = build_shard(index_crc=False, index_patch={2: (len(good) + 100, 16)})
    root = write_sharded(tmp_path / "a", bad, index_crc=False)
    err = expect_error(CorruptChunkError, root, "c/0/0")
    assert "1, 0" in str(err) or "(1,0)" in str(err) or "[1, 0]" in str(err), f"inner chunk not named: {err}"


def test_shard_index_overlapping_index(tmp_path):
    # an entry pointing into the index itself (index at the end)
    good = build_shard(index_crc=False)
    bad = build_shard(index_crc=False, index_patch={1: (len(good) - 20, 16)})
    root = write_sharded(tmp_path / "a", bad, index_crc=False)
    expect_error(CorruptChunkError, root, "c/0/0")


def test_shard_index_crc32c_mismatch(tmp_path):
    shard = bytearray(build_shard(index_crc=True))
    shard[-8] ^= 0x10  # inside the index, before its checksum
    root = write_sharded(tmp_path / "a", bytes(shard))
    err = expect_error(ChecksumError, root, "c/0/0")
    assert "index" in str(err).lower()


def test_shard_inner_chunk_crc32c_mismatch(tmp_path):
    shard = bytearray(build_shard(index_crc=True, location="start"))
    shard[N_INNER * 16 + 4 + 1] ^= 0x01  # first byte of payload of inner chunk (0, 0)
    root = write_sharded(tmp_path / "a", bytes(shard), location="start")
    err = expect_error(ChecksumError, root, "c/0/0")
    assert "0, 0" in str(err) or "(0,0)" in str(err) or "[0, 0]" in str(err), f"inner chunk not named: {err}"


def test_shard_missing_inner_chunks_read_as_fill(tmp_path):
    root = write_sharded(tmp_path / "a", build_shard(missing=(1, 2)))
    want = DATA.copy()
    want[0:2, 3:6] = FILL
    want[2:4, 0:3] = FILL
    np.testing.assert_array_equal(read_all(root), want)


# ======================================================================================
# keys that would leave the root
# ======================================================================================
@pytest.mark.parametrize("bad", ["../x", "a/../../x", "..", "a//b/../.."])
def test_path_escaping_root_rejected_on_open(tmp_path, bad):
    root = write_v3_array(tmp_path / "store" / "a")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "zarr.json").write_text(json.dumps(v3_doc()))
    with pytest.raises(InvalidKeyError) as ei:
        zarrdask.open(str(root.parent), path=bad)
    assert ".." in str(ei.value), str(ei.value)


@pytest.mark.parametrize("bad", ["../x", "a/../../x", ".."])
def test_path_escaping_root_rejected_on_create(tmp_path, bad):
    store = tmp_path / "store"
    store.mkdir()
    with pytest.raises(InvalidKeyError):
        zarrdask.create_array(str(store), shape=(2,), dtype="int8", chunks=(1,), path=bad)
    with pytest.raises(InvalidKeyError):
        zarrdask.create_group(str(store), path=bad)
    assert not (tmp_path / "x").exists()
    assert not list(tmp_path.glob("*/zarr.json"))


def test_group_member_names_escaping_root(tmp_path):
    g = zarrdask.create_group(str(tmp_path / "g"))
    for bad in ("../evil", "a/../../evil"):
        with pytest.raises(InvalidKeyError):
            g.create_array(bad, shape=(2,), dtype="int8", chunks=(1,))
        with pytest.raises(InvalidKeyError):
            g.create_group(bad)
        with pytest.raises((InvalidKeyError, NodeNotFoundError)):
            g[bad]
    assert not (tmp_path / "evil").exists()


def test_store_keys_with_dotdot_rejected(tmp_path):
    from zarrdask.storage.local import LocalStore
    from zarrdask.storage.memory import MemoryStore

    for store in (LocalStore(str(tmp_path / "s")), MemoryStore()):
        for bad in ("../x", "a/../b", "/abs", "a//b", "./a"):
            with pytest.raises(InvalidKeyError):
                store.set(bad, b"1")
            with pytest.raises(InvalidKeyError):
                store.get(bad)
    assert not (tmp_path / "x").exists()


# ======================================================================================
# expectations on open; missing chunks
# ======================================================================================
@pytest.mark.parametrize("expect,word", [
    ({"shape": (4, 7)}, "shape"),
    ({"dtype": "int32"}, "dtype"),
    ({"chunks": (2, 2)}, "chunks"),
])
def test_open_with_mismatching_expectations(tmp_path, expect, word):
    root = write_v3_array(tmp_path / "a")
    with pytest.raises(ShapeMismatchError) as ei:
        zarrdask.open_array(str(root), **expect)
    assert word in str(ei.value)


def test_open_with_matching_expectations(tmp_path):
    root = write_v3_array(tmp_path / "a")
    arr = zarrdask.open_array(str(root), shape=SHAPE, dtype="int16", chunks=CHUNKS)
    np.testing.assert_array_equal(np.asarray(arr[...]), DATA)


def test_open_sharded_with_expectations(tmp_path):
    root = write_sharded(tmp_path / "s")
    arr = zarrdask.open_array(str(root), shape=SHAPE, chunks=CHUNKS)
    assert tuple(arr.shards) == SHARD
    with pytest.raises(ShapeMismatchError, match="chunks"):
        zarrdask.open_array(str(root), chunks=(1, 3))


def test_missing_chunks_read_as_fill_value(tmp_path):
    root = write_v3_array(tmp_path / "a", skip={(0, 1), (1, 0)})
    want = DATA.copy()
    want[0:2, 3:6] = FILL
    want[2:4, 0:3] = FILL
    np.testing.assert_array_equal(read_all(root), want)


def test_missing_chunks_raise_when_asked(tmp_path):
    root = write_v3_array(tmp_path / "a", skip={(1, 0)})
    arr = zarrdask.open_array(str(root), missing_chunks="raise")
    np.testing.assert_array_equal(np.asarray(arr[0:2]), DATA[0:2])  # present chunks read fine
    with pytest.raises(MissingChunkError) as ei:
        arr[...]
    assert "c/1/0" in str(ei.value)
    assert isinstance(ei.value, LookupError)
    with pytest.raises(MissingChunkError):
        zarrdask.open(str(root)).with_options(missing_chunks="raise")[3, 0]


def test_missing_shard_raises_when_asked(tmp_path):
    root = write_sharded(tmp_path / "s")
    (root / "c" / "0" / "0").unlink()
    np.testing.assert_array_equal(read_all(root), np.full(SHAPE, FILL, dtype="int16"))
    with pytest.raises(MissingChunkError, match="c/0/0"):
        read_all(root, missing_chunks="raise")


def test_missing_chunks_option_is_validated(tmp_path):
    root = write_v3_array(tmp_path / "a")
    with pytest.raises(ZarrdaskError, match="missing_chunks"):
        zarrdask.open_array(str(root), missing_chunks="sometimes")


# ======================================================================================
# nodes, selections, writes
# ======================================================================================
def test_missing_node(tmp_path):
    with pytest.raises(NodeNotFoundError) as ei:
        zarrdask.open(str(tmp_path / "nothing"))
    assert isinstance(ei.value, FileNotFoundError)
    root = write_v3_array(tmp_path / "a")
    with pytest.raises(NodeNotFoundError) as ei:
        zarrdask.open(str(root.parent), path="b")
    assert "b" in str(ei.value)


def test_open_array_on_group_and_group_on_array(tmp_path):
    root = write_v3_array(tmp_path / "a")
    with pytest.raises(NodeNotFoundError):
        zarrdask.open_group(str(root))
    g = zarrdask.create_group(str(tmp_path / "g"))
    with pytest.raises(NodeNotFoundError):
        zarrdask.open_array(str(tmp_path / "g"))
    with pytest.raises(NodeNotFoundError, match="nope"):
        g["nope"]


@pytest.mark.parametrize("sel,exc", [
    ((4, 0), BoundsError),
    ((0, -7), BoundsError),
    ((0, 0, 0), SelectionError),
    ((slice(None, None, 0), 0), SelectionError),
    (("a", 0), SelectionError),
    ((1.5, 0), SelectionError),
])
def test_bad_basic_selection(tmp_path, sel, exc):
    arr = zarrdask.open(str(write_v3_array(tmp_path / "a")), mode="r+")
    with pytest.raises(exc):
        arr[sel]
    with pytest.raises(exc):
        arr[sel] = 1


def test_bad_fancy_selection(tmp_path):
    arr = zarrdask.open(str(write_v3_array(tmp_path / "a")))
    with pytest.raises(BoundsError):
        arr.oindex[np.array([0, 9]), :]
    with pytest.raises(SelectionError):
        arr.oindex[np.array([True, False]), :]  # mask of the wrong length
    with pytest.raises(SelectionError):
        arr.oindex[np.array([0.5]), :]
    with pytest.raises(BoundsError):
        arr.vindex[np.array([0, 4]), np.array([0, 1])]
    with pytest.raises(SelectionError):
        arr.vindex[np.array([0, 1, 2]), np.array([0, 1])]  # coordinate arrays don't broadcast
    with pytest.raises(SelectionError):
        arr.vindex[np.ones((3, 3), dtype=bool)]  # mask shape != array shape


def test_write_value_of_wrong_shape(tmp_path):
    root = write_v3_array(tmp_path / "a")
    arr = zarrdask.open(str(root), mode="r+")
    with pytest.raises(ZarrdaskError) as ei:
        arr[0:2, 0:3] = np.ones((3, 3), dtype="int16")
    assert isinstance(ei.value, ValueError)
    np.testing.assert_array_equal(read_all(root), DATA)  # nothing written


@pytest.mark.parametrize("value", ["abc", object(), [1, "x"], {"a": 1}], ids=["str", "object", "mixed-list", "dict"])
def test_write_value_of_wrong_type(tmp_path, value):
    """A value that cannot become the array's dtype is a ZarrdaskError (a ValueError), not a
    bare numpy ValueError/TypeError; nothing is written."""
    root = write_v3_array(tmp_path / "a")
    arr = zarrdask.open(str(root), mode="r+")
    with pytest.raises(ZarrdaskError) as ei:
        arr[0, 0:2] = value
    assert isinstance(ei.value, ValueError)
    np.testing.assert_array_equal(read_all(root), DATA)


def test_group_getitem_with_non_string_name(tmp_path):
    g = zarrdask.create_group(str(tmp_path / "g"))
    with pytest.raises(ZarrdaskError):
        g[3]


def test_unknown_url_protocol(tmp_path):
    with pytest.raises(ZarrdaskError, match="nosuchproto"):
        zarrdask.open("nosuchproto://bucket/x")


def test_write_to_read_only(tmp_path):
    root = write_v3_array(tmp_path / "a")
    arr = zarrdask.open(str(root))  # mode="r" by default
    with pytest.raises(ReadOnlyError):
        arr[0, 0] = 1
    with pytest.raises(ReadOnlyError):
        arr.attrs["x"] = 1
    np.testing.assert_array_equal(read_all(root), DATA)


@pytest.mark.parametrize("kwargs,word", [
    (dict(shape=(4, -1), dtype="int16", chunks=(2, 2)), "shape"),
    (dict(shape=(4, 4), dtype="int16", chunks=(0, 2)), "chunks"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2,)), "chunks"),
    (dict(shape=(4, 4), dtype="int3", chunks=(2, 2)), "int3"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), fill_value="abc"), "fill_value"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), dimension_names=["a"]), "dimension_names"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), dimension_names=["a", 3]), "dimension_names"),
    (dict(shape=(4, 4), dtype="int16", chunks=("a", 2)), "chunks"),
    (dict(shape="abc", dtype="int16", chunks=(2, 2)), "shape"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), compressors=[42]), "42"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), serializer={"name": "nope"}), "nope"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), chunk_key_encoding={"name": "nope"}), "nope"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), shards=(4, 4), zarr_format=2), "v2"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), codecs=[{"name": "nope"}]), "nope"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), compressors=[{"name": "gzip", "configuration": {"level": 42}}]), "level"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), shards=(3, 3)), "shards"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), zarr_format=5), "zarr_format"),
    (dict(shape=(4, 4), dtype="int16", chunks=(2, 2), attributes={"x": object()}), "attributes"),
])
def test_create_array_rejects_bad_arguments(tmp_path, kwargs, word):
    with pytest.raises(ZarrdaskError) as ei:
        zarrdask.create_array(str(tmp_path / "a"), **kwargs)
    assert word in str(ei.value), str(ei.value)
    assert not (tmp_path / "a" / "zarr.json").exists()


def test_create_over_existing_requires_overwrite(tmp_path):
    root = write_v3_array(tmp_path / "a")
    with pytest.raises(ContainsNodeError):
        zarrdask.create_array(str(root), shape=(2,), dtype="int8", chunks=(1,))
    with pytest.raises(ContainsNodeError):
        zarrdask.create_group(str(root))
    np.testing.assert_array_equal(read_all(root), DATA)
    arr = zarrdask.create_array(str(root), shape=(2,), dtype="int8", chunks=(1,), overwrite=True)
    assert tuple(arr.shape) == (2,)
    # overwrite removed the old chunks
    assert not (root / "c" / "1").exists()


def test_attributes_not_json_serializable_on_write(tmp_path):
    arr = zarrdask.create_array(str(tmp_path / "a"), shape=(2,), dtype="int8", chunks=(1,))
    with pytest.raises(ZarrdaskError):
        arr.attrs["bad"] = {1, 2}
    assert "bad" not in json.loads((tmp_path / "a" / "zarr.json").read_text())["attributes"]


def test_data_types_parsed_by_name_follow_the_registry():
    """Named data types are parsed once and shared; registering a name again replaces
    the shared instance, and unknown names are still refused every time."""
    from zarrdask.metadata.dtypes.registry import _BY_NAME, _V3_REGISTRY, DataType, parse_data_type_v3, register_data_type

    assert parse_data_type_v3("float32") is parse_data_type_v3("float32")
    for _ in range(2):
        with pytest.raises(UnknownExtensionError, match="zarrdask.test-type"):
            parse_data_type_v3("zarrdask.test-type")
    try:
        register_data_type("zarrdask.test-type", lambda config, loc: DataType("zarrdask.test-type", np.dtype("u2"), "uint"))
        assert parse_data_type_v3("zarrdask.test-type").dtype == np.dtype("u2")
        register_data_type("zarrdask.test-type", lambda config, loc: DataType("zarrdask.test-type", np.dtype("u4"), "uint"))
        assert parse_data_type_v3("zarrdask.test-type").dtype == np.dtype("u4")
    finally:
        del _V3_REGISTRY["zarrdask.test-type"]
        _BY_NAME.pop("zarrdask.test-type", None)


@pytest.mark.parametrize("entry,word", [({"shape": "abc"}, "shape"), ("not-an-object", "metadata object")])
def test_malformed_consolidated_entry_names_group_and_entry(tmp_path, entry, word):
    g = zarrdask.open_group(tmp_path / "g.zarr", mode="w")
    g.create_array("a", shape=(4,), chunks=(2,), dtype="i4")
    zarrdask.consolidate_metadata(tmp_path / "g.zarr")
    path = tmp_path / "g.zarr" / "zarr.json"
    doc = json.loads(path.read_text())
    entries = doc["consolidated_metadata"]["metadata"]
    entries["a"] = {**entries["a"], **entry} if isinstance(entry, dict) else entry
    path.write_text(json.dumps(doc))
    with pytest.raises(MetadataError) as info:
        zarrdask.open_group(tmp_path / "g.zarr")
    assert "zarr.json consolidated_metadata/a" in str(info.value) and word in str(info.value)
    # the entry is not consulted when consolidated metadata is ignored
    assert zarrdask.open_group(tmp_path / "g.zarr", use_consolidated=False)["a"].shape == (4,)


@pytest.mark.parametrize("good,bad", [(1, True), (0, False), (1, 1.0)])
def test_shared_codec_settings_keep_their_types(tmp_path, good, bad):
    """Parsed codec objects are shared between arrays; a setting of another JSON type
    (``1`` / ``true`` / ``1.0``) is never taken for an equal-comparing one."""
    ok = _set(v3_doc(), ("codecs",), [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": good}}])
    assert zarrdask.open_array(write_v3_array(tmp_path / "ok", ok)).codecs[1]["configuration"]["level"] == good
    wrong = _set(v3_doc(), ("codecs",), [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": bad}}])
    with pytest.raises(MetadataError, match="level"):
        zarrdask.open_array(write_v3_array(tmp_path / "bad", wrong))


@settings(max_examples=25, deadline=None)
@given(field=st.sampled_from(["chunk_grid", "chunk_key_encoding"]), encoding=st.sampled_from(["default", "v2"]),
       extra=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(
           lambda k: k not in ("chunk_shape", "separator")))
def test_unknown_configuration_fields_of_grid_and_key_encoding_are_refused(tmp_path_factory, field, encoding, extra):
    """An extra field in the chunk grid's or key encoding's configuration is an error naming
    it, as zarr-python and TensorStore refuse it (not silently dropped)."""
    import json

    from zarrdask.errors import MetadataError

    path = tmp_path_factory.mktemp("extra") / "a"
    zarrdask.create_array(str(path), shape=(4, 4), dtype="i4", chunks=(2, 2),
                          chunk_key_encoding={"name": encoding, "configuration": {"separator": "/"}})
    meta = json.loads((path / "zarr.json").read_text())
    meta[field]["configuration"][extra] = 1
    (path / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(MetadataError, match=rf"{field}/configuration: unexpected fields \['{extra}'\]"):
        zarrdask.open_array(str(path))


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(["datetime64[s]", "timedelta64[ms]", "U3", "S4", "V2", "float32", "int16"]),
       extra=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(
           lambda k: k not in ("unit", "scale_factor", "length_bytes")))
def test_unknown_configuration_fields_of_a_data_type_are_refused(tmp_path_factory, dtype, extra):
    """An extra field in a data type's configuration is an error naming it and the fields
    the type has (zarr-python refuses it too), not dropped silently."""
    from zarrdask.errors import MetadataError

    path = tmp_path_factory.mktemp("extra") / "a"
    zarrdask.create_array(str(path), shape=(4,), dtype=dtype, chunks=(2,))
    meta = json.loads((path / "zarr.json").read_text())
    name = meta["data_type"] if isinstance(meta["data_type"], str) else meta["data_type"]["name"]
    config = {} if isinstance(meta["data_type"], str) else dict(meta["data_type"]["configuration"])
    meta["data_type"] = {"name": name, "configuration": {**config, extra: 1}}
    (path / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(MetadataError, match=rf"data_type/configuration: unexpected fields \['{extra}'\]"):
        zarrdask.open_array(str(path))


_BILLIONS_OF_UNITS = r"""
import json, re, resource, sys
from ast import literal_eval
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
import numpy as np, zarrdask
from zarrdask.errors import TooLargeError

def opened(shape):
    doc = {"zarr_format": 2, "shape": shape, "chunks": [2, 2, 2], "dtype": "<f4", "fill_value": 0.0, "order": "C",
           "filters": None, "compressor": None}
    return zarrdask.open_array({".zarray": json.dumps(doc).encode()}, mode="r+")

a = opened([10**15, 0, 3])
assert a[...].shape == (10**15, 0, 3) and a[5:9].shape == (4, 0, 3) and a.oindex[[1, 2], :, :].shape == (2, 0, 3)
a[...] = 1.0
x = zarrdask.from_zarr(a)
assert x.numblocks == (1, 1, 1) and x.compute().shape == (10**15, 0, 3)
a.resize((10, 0, 3))
assert a.shape == (10, 0, 3)
b = opened([10**11, 1, 1])
try:
    zarrdask.from_zarr(b)
except TooLargeError as exc:
    fix = literal_eval(re.search(r"such as chunks=(\(.*\))$", str(exc)).group(1))
else:
    sys.exit("no TooLargeError")
y = zarrdask.from_zarr(b, chunks=fix)
assert y.shape == b.shape and y.numblocks == (10_000, 1, 1)
print("done")
"""


def test_metadata_laying_billions_of_units_over_an_array_costs_no_walk_over_them():
    """Metadata (found by fuzzing) laying 5 * 10**14 chunks over an array that holds nothing:
    reads, writes, a dask read and a resize visit none of them (listing them hung, then ran
    out of memory). A dask read of a non-empty array with more units than dask can list
    block sizes for is a TooLargeError whose suggested chunks= builds. A process of its own,
    its memory capped at 4 GiB."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", _BILLIONS_OF_UNITS], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr[-3000:]


_SPARSE_BILLIONS = r"""
import resource
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
import zarrdask

for shards in ((4,), None):
    store = {}
    a = zarrdask.create_array(store, shape=(10**12,), chunks=(2,), shards=shards, dtype="i4", fill_value=0)
    a[0:4] = 1
    a[10**11: 10**11 + 3] = 2
    stored = {"c/0", f"c/{10**11 // (4 if shards else 2)}"} | (set() if shards else {f"c/1", f"c/{10**11 // 2 + 1}"})
    assert a.units.stored_keys() == stored, a.units.stored_keys()
    assert a.nshards_initialized == (2 if shards else None)
    report = zarrdask.verify(store)
    assert report.ok and report.units_stored == len(stored), report
    copy = zarrdask.copy(store, {})
    assert copy.units.stored_keys() == stored and copy[10**11 + 2] == 2
    assert "some grid lines left out" in a._repr_html_()
    assert a.nchunks_initialized == 4, a.nchunks_initialized
    stats = a.storage_statistics((slice(0, 10**11 + 3, 3),))  # (0 and 3, then 10**11 + 2: three stored chunks)
    assert (stats.chunks_total, stats.chunks_stored) == ((10**11 + 3 + 2) // 3, 3), stats
for shards in ((100, 100, 100), None):  # 10**9 units, a thousand along each axis
    a = zarrdask.create_array({}, shape=(10**5,) * 3, chunks=(50, 50, 50) if shards else (100,) * 3,
                              shards=shards, dtype="u1", fill_value=0)
    a[99:101, 0, 0] = 1
    assert a.nchunks_initialized == 2, a.nchunks_initialized
    stats = a.storage_statistics((slice(0, 150), 0, slice(None)))
    assert stats.chunks_total == (3 * 2000 if shards else 2 * 1000) and stats.chunks_stored == 2, stats
    assert "Chunks stored" in str(a.info_complete())
print("done")
"""


def test_a_sparse_array_of_billions_of_units_is_listed_by_what_is_stored():
    """An array of 5 * 10**11 chunks (2.5 * 10**11 shards) holding a few: its stored keys,
    ``nshards_initialized``, ``verify``, ``copy`` and the HTML display cost work per key
    stored, not per unit of the grid (they built every key, or every unit's extent, and
    hung or ran out of memory), and so do its chunk counts and statistics
    (``nchunks_initialized``, ``storage_statistics``): the chunks a slice touches are
    counted, not listed. And of 10**9 units in three dimensions, with ``info_complete``
    too (they planned every unit). A process of its own, its memory capped at 4 GiB."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", _SPARSE_BILLIONS], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr[-3000:]
