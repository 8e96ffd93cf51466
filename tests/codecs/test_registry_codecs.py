"""The zarr-extensions registry's ``zfp``, ``n5_default`` and ``conditional`` codecs, read and
written per their registry documents.

zarrs 0.2.3 (zarr-python's zarrs codec pipeline) writes none of the three, so the
independent checks are the format's own: zfp streams against the zfpy binding's streams
with zfp's header (the registry's format is zfp_compress's output without it), N5 blocks
and conditional headers built byte by byte from the documents in the tests."""

from __future__ import annotations

import json
import struct
import zlib

import crc32c
import numcodecs
import numpy as np
import pytest
import zfpy
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zarrdask
from zarrdask.errors import CodecError, CorruptChunkError, MetadataError
from zarrdask.storage import MemoryStore

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _array(dtype, codecs, shape, chunks, fill_value=0):
    return zarrdask.create_array(MemoryStore(), shape=shape, dtype=dtype, chunks=chunks, codecs=codecs,
                                 fill_value=fill_value, write_empty_chunks=True)


def _document(dtype, codecs, shape, chunks, fill_value=0, separator=None):
    doc = {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": fill_value, "codecs": codecs}
    if separator is not None:
        doc["chunk_key_encoding"] = {"name": "v2", "configuration": {"separator": separator}}
    return doc


def _open(tmp_path, doc, chunks=None):
    """An array from a hand-written ``zarr.json`` (and chunk files ``{key: bytes}``)."""
    (tmp_path / "zarr.json").write_text(json.dumps(doc))
    for key, data in (chunks or {}).items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(data)
    return zarrdask.open_array(str(tmp_path))


# -- zfp ---------------------------------------------------------------------------------

ZFP_TYPES = ["float32", "float64", "int32", "int64", "int8", "int16", "uint8", "uint16", "float16"]
NATIVE = {"int32", "int64", "float32", "float64"}
shapes = st.lists(st.integers(1, 6), min_size=0, max_size=4).map(tuple)


def _values(dtype, shape):
    elements = (st.floats(-1e3, 1e3, width=np.dtype(dtype).itemsize * 8) if dtype.startswith("float")
                else st.integers(np.iinfo(dtype).min, np.iinfo(dtype).max))
    return hnp.arrays(dtype, shape, elements=elements)


@FAST
@given(st.sampled_from(ZFP_TYPES), shapes, st.data())
def test_zfp_reversible_round_trips_exactly(dtype, shape, data):
    """Reversible mode gives back every value of every type it takes, promoted or not."""
    values = data.draw(_values(dtype, shape))
    a = _array(dtype, [{"name": "zfp", "configuration": {"mode": "reversible"}}], shape, shape or ())
    a[...] = values
    np.testing.assert_array_equal(zarrdask.open_array(a.store)[...], values)


MODES = [{"mode": "reversible"}, {"mode": "fixed_accuracy", "tolerance": 0.01},
         {"mode": "fixed_rate", "rate": 16}, {"mode": "fixed_rate", "rate": 300},
         {"mode": "fixed_precision", "precision": 18}]


@FAST
@given(st.sampled_from(sorted(NATIVE)), shapes, st.sampled_from(MODES), st.data())
def test_zfp_chunk_is_zfps_stream_without_its_header(dtype, shape, mode, data):
    """The stored chunk is what zfp_compress writes for the chunk as a field of its shape
    (zfpy's stream with zfp's header, less the header), and reads back as zfpy reads that
    stream: the registry's format, checked against the C library's own header path.
    ``rate: 300`` needs zfp's long mode header (148 bits, not a whole number of bytes)."""
    values = data.draw(_values(dtype, shape))
    a = _array(dtype, [{"name": "zfp", "configuration": mode}], shape, shape or ())
    a[...] = values
    stored = a.store.get("c/" + "/".join("0" * len(shape)) if shape else "c")
    settings_ = {k: v for k, v in mode.items() if k != "mode"}
    field = np.ascontiguousarray(values.reshape(shape or (1,)))
    assert stored == zfpy.compress_numpy(field, write_header=False, **settings_)
    with_header = zfpy.compress_numpy(field, **settings_)
    np.testing.assert_array_equal(a[...], zfpy.decompress_numpy(with_header).reshape(shape))
    if mode["mode"] == "fixed_accuracy" and dtype.startswith("float"):
        assert np.all(np.abs(a[...].astype("f8") - values.astype("f8")) <= 0.01)


def test_zfp_promotion_is_zfps_for_narrow_integers(tmp_path):
    """int8/uint16 are promoted to int32 by the document's formulas before compression: the
    chunk equals zfp's stream of the promoted int32 field, and decodes back exactly."""
    i8 = np.array([[-128, -1, 0, 1], [127, 5, -7, 3]], dtype="int8")
    u16 = np.array([[0, 1, 65535, 32768], [12, 40000, 7, 9]], dtype="uint16")
    for values, promoted in ((i8, i8.astype("int32") << 23), (u16, (u16.astype("int32") - 32768) << 15)):
        a = _array(values.dtype.name, [{"name": "zfp", "configuration": {"mode": "reversible"}}], (2, 4), (2, 4))
        a[...] = values
        assert a.store.get("c/0/0") == zfpy.compress_numpy(promoted, write_header=False)
        np.testing.assert_array_equal(a[...], values)


@pytest.mark.parametrize("config, dtype, shape, message", [
    ({"mode": "expert", "minbits": 1, "maxbits": 13, "maxprec": 19, "minexp": -2}, "float32", (4,), "expert"),
    ({"mode": "reversible"}, "uint32", (4,), "uint32"),
    ({"mode": "reversible"}, "float32", (2, 2, 2, 2, 2), "at most 4 dimensions"),
    ({"mode": "fixed_rate"}, "float32", (4,), "rate"),
    ({"mode": "fixed_accuracy", "tolerance": -1}, "float32", (4,), "tolerance"),
    ({"mode": "reversible", "rate": 3}, "float32", (4,), "rate"),
    ({"mode": "lossless"}, "float32", (4,), "mode"),
])
def test_zfp_refusals_name_the_setting(tmp_path, config, dtype, shape, message):
    doc = _document(dtype, [{"name": "zfp", "configuration": config}], shape, shape)
    with pytest.raises(MetadataError, match=message):
        _open(tmp_path, doc)


def test_zfp_registry_examples_parse(tmp_path):
    """The registry's examples/ documents all parse; expert mode is refused only when used."""
    examples = [{"mode": "fixed_accuracy", "tolerance": 0.05}, {"mode": "fixed_precision", "precision": 19},
                {"mode": "fixed_rate", "rate": 10.5}, {"mode": "reversible"}]
    for i, config in enumerate(examples):
        path = tmp_path / str(i)
        path.mkdir()
        a = _open(path, _document("float64", [{"name": "zfp", "configuration": config}], (6, 5), (3, 5)))
        assert a.codecs == [{"name": "zfp", "configuration": config}]


@pytest.mark.parametrize("dtype, rate, shape, refused", [
    ("float32", 2.0, (8,), True), ("float32", 2.25, (8,), False), ("float64", 2.75, (8,), True),
    ("float64", 0.75, (4, 4), False), ("int32", 0.25, (8,), False), ("float16", 0.5, (8,), True),
])
def test_zfp_float_rate_below_zfps_minimum_is_refused(tmp_path, dtype, rate, shape, refused):
    """zfp keeps at least 9 (float32) or 12 (float64) bits per block; zfpy sets rates without
    the type and would not, so such a rate is refused for reading and writing alike rather
    than streams read with another block size than zfp's."""
    doc = _document(dtype, [{"name": "zfp", "configuration": {"mode": "fixed_rate", "rate": rate}}], shape, shape)
    if refused:
        with pytest.raises(MetadataError, match="configuration/rate: .* below zfp's minimum"):
            _open(tmp_path, doc)
    else:
        assert _open(tmp_path, doc).shape == shape


FUZZED = [
    ("float64", [{"name": "zfp", "configuration": {"mode": "reversible"}}]),
    ("float32", [{"name": "zfp", "configuration": {"mode": "fixed_rate", "rate": 300}}]),
    ("int16", [{"name": "zfp", "configuration": {"mode": "fixed_precision", "precision": 10}}]),
    ("int32", [{"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "zstd", "configuration": {"level": 0, "checksum": False}}]}}]),
    ("uint8", [{"name": "bytes"}, {"name": "conditional", "configuration": {
        "codecs": [{"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}]}}]),
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FUZZED), st.binary(max_size=96))
def test_any_chunk_bytes_end_in_values_or_a_codec_error(tmp_path_factory, case, junk):
    """Any bytes as a chunk decode to values of the chunk's shape or a CodecError (zfp reads
    within a zero-padded bound, never past the stored bytes; headers are checked)."""
    dtype, codecs = case
    path = tmp_path_factory.mktemp("fuzz")
    a = _open(path, _document(dtype, codecs, (4, 4), (4, 4)), {"c/0/0": junk})
    try:
        assert a[...].shape == (4, 4)
    except CodecError:
        pass


def test_zfp_oversized_chunk_is_corrupt(tmp_path):
    a = _open(tmp_path, _document("float32", [{"name": "zfp", "configuration": {"mode": "reversible"}}], (4,), (4,)),
              {"c/0": b"\1" * 4096})
    with pytest.raises(CorruptChunkError, match="takes 1 to"):
        a[...]


# -- n5_default --------------------------------------------------------------------------

def _n5(ndim, compressor=None, endian="big"):
    codecs = [{"name": "transpose", "configuration": {"order": list(reversed(range(ndim)))}},
              {"name": "bytes", "configuration": {"endian": endian}}]
    return {"name": "n5_default", "configuration": {"codecs": codecs + ([compressor] if compressor else [])}}


def _n5_block(values, mode=0):
    """An N5 default-mode block by the N5 spec: header, then the values big-endian in F order."""
    header = struct.pack(f">HH{values.ndim}I", mode, values.ndim, *values.shape)
    return header + values.astype(values.dtype.newbyteorder(">")).tobytes(order="F")


N5_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


@FAST
@given(st.sampled_from(N5_TYPES), st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
       st.sampled_from([None, {"name": "gzip", "configuration": {"level": 1}},
                        {"name": "zstd", "configuration": {"level": 0, "checksum": False}}]), st.data())
def test_n5_default_round_trips_and_writes_n5_blocks(dtype, chunk, compressor, data):
    """Writing then reading gives the values back; each stored chunk is an N5 block (its
    header, then the chain's bytes of the values in F order, big endian)."""
    shape = tuple(2 * c + 1 for c in chunk)
    values = data.draw(hnp.arrays(dtype, shape))
    a = _array(dtype, [_n5(len(shape), compressor)], shape, chunk)
    a[...] = values
    np.testing.assert_array_equal(zarrdask.open_array(a.store)[...], values)
    stored = a.store.get("c/" + "/".join("0" * len(shape)))
    first = values[tuple(slice(0, c) for c in chunk)]
    expected = _n5_block(first)
    head = 4 + 4 * len(chunk)
    assert stored[:head] == expected[:head]
    body = stored[head:]
    if compressor and compressor["name"] == "gzip":
        body = zlib.decompress(body, 31)
    elif compressor:
        body = zstandard.ZstdDecompressor().decompress(body, max_output_size=len(expected))
    assert body == expected[head:]


def test_n5_default_reads_truncated_edge_blocks_padded_with_the_fill_value(tmp_path):
    """N5's Java writer truncates edge blocks: a block smaller than the chunk reads padded."""
    full = np.arange(12, dtype="uint16").reshape(3, 4)
    edge = np.array([[90, 91, 92, 93]], dtype="uint16")
    a = _open(tmp_path, _document("uint16", [_n5(2)], (4, 4), (3, 4), fill_value=7, separator="/"),
              {"0/0": _n5_block(full), "1/0": _n5_block(edge)})
    np.testing.assert_array_equal(a[...], np.concatenate([full, edge]))
    b = _open(tmp_path, _document("uint16", [_n5(2)], (6, 4), (3, 4), fill_value=7, separator="/"),
              {"1/0": _n5_block(edge)})
    np.testing.assert_array_equal(b[3:], np.concatenate([edge, np.full((2, 4), 7, "uint16")]))


def test_n5_default_registry_example_opens(tmp_path):
    """The registry's examples/zstd_array document opens, and reads a block written as N5 writes."""
    doc = _document("float32", [_n5(2, {"name": "zstd", "configuration": {"level": 0, "checksum": False}})],
                    (256, 128), (256, 128), separator="/")
    values = np.random.default_rng(0).random((256, 128), dtype="float32")
    block = _n5_block(values)
    compressed = block[:12] + zstandard.ZstdCompressor(level=0).compress(block[12:])
    a = _open(tmp_path, doc, {"0/0": compressed})
    np.testing.assert_array_equal(a[...], values)


@pytest.mark.parametrize("codec, dtype, message", [
    ({"name": "n5_default", "configuration": {"codecs": [{"name": "bytes", "configuration": {"endian": "big"}}]}},
     "int32", "transpose"),
    ({"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [0, 1]}}, {"name": "bytes", "configuration": {"endian": "big"}}]}},
     "int32", "full transposition"),
    (_n5(2, endian="little"), "int32", "big endian"),
    ({"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"}]}}, "int32", "endian"),
    ({"name": "n5_default", "configuration": {"codecs": _n5(2)["configuration"]["codecs"] + [
        {"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}]}}, "int32", "at most one"),
    (_n5(2), "float16", "N5 has no data type"),
])
def test_n5_default_refuses_chains_the_document_forbids(tmp_path, codec, dtype, message):
    with pytest.raises(MetadataError, match=message):
        _open(tmp_path, _document(dtype, [codec], (4, 4), (2, 2)))


def test_n5_default_one_byte_types_may_omit_endian(tmp_path):
    codec = {"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"}]}}
    values = np.arange(4, dtype="uint8").reshape(2, 2)
    a = _open(tmp_path, _document("uint8", [codec], (2, 2), (2, 2)), {"c/0/0": _n5_block(values)})
    np.testing.assert_array_equal(a[...], values)


@pytest.mark.parametrize("block, message", [
    (_n5_block(np.zeros((2, 2), "int32"), mode=1), "not the default mode"),
    (_n5_block(np.zeros((3, 2), "int32")), "exceeds the chunk shape"),
    (_n5_block(np.zeros(2, "int32")), "1 dimensions, the array 2"),
    (b"\0\0", "shorter than its 12-byte header"),
    (_n5_block(np.zeros((2, 2), "int32"))[:-1], "needs 16 bytes"),
])
def test_n5_default_corrupt_blocks(tmp_path, block, message):
    a = _open(tmp_path, _document("int32", [_n5(2)], (2, 2), (2, 2)), {"c/0/0": block})
    with pytest.raises(CorruptChunkError, match=message):
        a[...]


# -- conditional -------------------------------------------------------------------------

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
GZIP = {"name": "gzip", "configuration": {"level": 6}}


def _conditional(codecs, header_bits=None):
    config = {"codecs": codecs}
    if header_bits is not None:
        config["header_bits"] = header_bits
    return {"name": "conditional", "configuration": config}


@FAST
@given(st.sampled_from([[], [GZIP], [GZIP, {"name": "crc32c"}], [{"name": "crc32c"}, GZIP]]),
       st.sampled_from([None, 16, 64]), st.booleans(), st.data())
def test_conditional_round_trips_compressing_only_when_smaller(codecs, header_bits, compressible, data):
    """Values come back; each chunk's header says which nested codecs were applied: a
    compressor only where it made the chunk smaller, a checksum always."""
    if header_bits is not None and header_bits < len(codecs):
        header_bits = None
    values = (np.zeros(64, "float64") if compressible
              else data.draw(hnp.arrays("float64", 64, elements=st.floats(allow_nan=False), unique=True)))
    a = _array("float64", [BYTES, _conditional(codecs, header_bits)], (64,), (64,))
    a[...] = values
    np.testing.assert_array_equal(zarrdask.open_array(a.store)[...], values)
    stored = a.store.get("c/0")
    size = (header_bits if header_bits is not None else -(-len(codecs) // 8) * 8) // 8
    mask = int.from_bytes(stored[:size], "little")
    data = values.tobytes()  # the document's procedure replayed with compress_if_smaller
    for i, codec in enumerate(codecs):
        if codec["name"] == "crc32c":
            assert mask >> i & 1, "a checksum is always applied"
            data += struct.pack("<I", crc32c.crc32c(data))
        else:
            trial = numcodecs.GZip(6).encode(data)
            assert bool(mask >> i & 1) == (len(trial) < len(data))
            data = trial if len(trial) < len(data) else data
    assert stored[size:] == data
    assert mask >> len(codecs) == 0


def test_conditional_reads_chunks_made_by_the_documents_procedure(tmp_path):
    """Chunks built by hand per the document: bit i (little-endian bit order) applies codec
    i, decoded in reverse order; a 16-bit header leaves room for codecs added later."""
    values = np.arange(16, dtype="<i4")
    raw = values.tobytes()
    gz = numcodecs.GZip(6).encode(raw)
    both = gz + struct.pack("<I", crc32c.crc32c(gz))
    codecs = [GZIP, {"name": "crc32c"}]
    chunks = {"c/0": bytes([0b00, 0]) + raw, "c/1": bytes([0b01, 0]) + gz, "c/2": bytes([0b11, 0]) + both,
              "c/3": bytes([0b10, 0]) + raw + struct.pack("<I", crc32c.crc32c(raw))}
    a = _open(tmp_path, _document("int32", [BYTES, _conditional(codecs, 16)], (64,), (16,)), chunks)
    np.testing.assert_array_equal(a[...], np.tile(values, 4))


@pytest.mark.parametrize("header, message", [(bytes([0b100]), "past the 2 configured"), (b"", "shorter than")])
def test_conditional_refuses_unknown_bits_and_short_chunks(tmp_path, header, message):
    a = _open(tmp_path, _document("uint8", [BYTES, _conditional([GZIP, {"name": "crc32c"}])], (4,), (4,)),
              {"c/0": header + (b"\0" * 4 if header else b"")})
    with pytest.raises(CorruptChunkError, match=message):
        a[...]


@pytest.mark.parametrize("codec, message", [
    (_conditional([GZIP], header_bits=12), "multiple of 8"),
    (_conditional([GZIP, GZIP], header_bits=1), "at least 2"),
    (_conditional([BYTES]), "must be bytes->bytes"),
    ({"name": "conditional", "configuration": {}}, "list of codecs"),
    ({"name": "conditional", "configuration": {"codecs": [], "mask": 1}}, "mask"),
])
def test_conditional_refuses_what_the_document_forbids(tmp_path, codec, message):
    with pytest.raises(MetadataError, match=message):
        _open(tmp_path, _document("uint8", [BYTES, codec], (4,), (4,)))


# -- zarrs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("codecs", [
    [{"name": "zfp", "configuration": {"mode": "reversible"}}],
    [_n5(1)],
    [BYTES, _conditional([GZIP])],
])
def test_zarrs_does_not_write_these_codecs(tmp_path, codecs):
    """zarrs 0.2.3 (zarr-python's zarrs codec pipeline) refuses all three, so there is no
    zarrs output to read; when a release writes them, this fails and an interop test is due."""
    pytest.importorskip("zarrs", reason="zarrs comes with the bench extra (pip install -e '.[test,bench]')")
    from zarr.storage import LocalStore
    from zarrs._internal import CodecPipelineImpl

    doc = _document("float32", codecs, (4,), (4,))
    with pytest.raises(TypeError, match=f"codec {codecs[-1]['name']} is not supported"):
        CodecPipelineImpl(json.dumps(doc), store_config=LocalStore(str(tmp_path)))
