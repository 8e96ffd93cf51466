"""zarr-extensions data types beyond zarr-python's: ``float8_e4m3``, ``float8_e3m4``,
``float8_e8m0fnu``, ``float4_e2m1fn``, ``float6_e2m3fn``, ``float6_e3m2fn``, every
``complex_*`` and ``bytes``, by the registry's READMEs: bit layouts built by hand here (not
by ml_dtypes), fill value JSON forms, byte order, ignored upper bits, packbits, and round
trips through zarrdask with every codec chain that applies."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.metadata.dtypes import data_type_from_numpy, parse_data_type_v3
from zarrdask.errors import MetadataError, UnknownExtensionError, UnsupportedDataTypeError
from zarrdask.storage import MemoryStore

from _util import assert_same

ml_dtypes = pytest.importorskip("ml_dtypes")  # in the test extra; the error without it is tested below

LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}
PACK = {"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}

#: the new one-byte floats: value bits, and 1.0 / the largest value / "NaN" as bit patterns (by the READMEs' layouts)
FLOATS = {
    "float8_e4m3": (8, 0x38, 0x77, 0x7C),  # S EEEE MMM, bias 7, IEEE: max 0 1110 111 = 240
    "float8_e3m4": (8, 0x30, 0x6F, 0x78),  # S EEE MMMM, bias 3: max 0 110 1111 = 15.5
    "float8_e8m0fnu": (8, 0x7F, 0xFE, 0xFF),  # EEEEEEEE, bias 127: max 2**127
    "float4_e2m1fn": (4, 0x2, 0x7, None),  # S EE M, bias 1: max 6
    "float6_e2m3fn": (6, 0x08, 0x1F, None),  # S EE MMM, bias 1: max 7.5
    "float6_e3m2fn": (6, 0x0C, 0x1F, None),  # S EEE MM, bias 3: max 28
}
MAXIMA = {"float8_e4m3": 240.0, "float8_e3m4": 15.5, "float8_e8m0fnu": 2.0**127, "float4_e2m1fn": 6.0,
          "float6_e2m3fn": 7.5, "float6_e3m2fn": 28.0}
#: complex_<part> stored as (real, imag) pairs, with the part's size in bytes
PAIRS = {"complex_float16": 2, "complex_bfloat16": 2, **{f"complex_{n}": 1 for n in (
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
    "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")}}


def _doc(data_type, fill_value, codecs=(LE,), shape=(4,)):
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shape)}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": fill_value, "codecs": list(codecs)}


def _open(doc, chunk=None):
    store = MemoryStore()
    store.set("zarr.json", json.dumps(doc).encode())
    if chunk is not None:
        store.set("c/0", chunk)
    return zarrdask.open_array(store)


def _bits(a) -> list[int]:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8).tolist()


def _create(dtype, codecs, fill_value=None, shape=(7,), chunks=(3,)):
    return zarrdask.create_array(MemoryStore(), shape=shape, chunks=chunks, dtype=dtype, codecs=list(codecs),
                                 fill_value=fill_value, write_empty_chunks=True)


# -- the one-byte floats ------------------------------------------------------------------------


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("codecs", [[LE], [BE], [{"name": "bytes"}]], ids=["little", "big", "no-endian"])
def test_float_bit_layout_and_fill_forms(name, codecs):
    """Chunk bytes are the README's one-byte layout whatever ``endian`` says; the fill value
    reads from a number, its hex form and (where the type has it) "NaN"."""
    width, one, top, nan = FLOATS[name]
    a = _open(_doc(name, 1.0, codecs), bytes([one, top, one, top]))
    assert a.dtype == np.dtype(getattr(ml_dtypes, name))
    assert a[...].astype(float).tolist() == [1.0, MAXIMA[name]] * 2
    assert _bits(a.metadata.fill_value) == [one]
    assert _bits(_open(_doc(name, f"0x{top:02x}")).metadata.fill_value) == [top]
    if nan is not None:
        assert _bits(_open(_doc(name, "NaN")).metadata.fill_value) == [nan]
    b = _create(name, codecs, fill_value=MAXIMA[name], shape=(3,))
    b[:2] = np.array([1.0, MAXIMA[name]])
    assert b.store.get("c/0") == bytes([one, top, top])
    assert json.loads(b.store.get("zarr.json"))["fill_value"] == MAXIMA[name]


@pytest.mark.parametrize("name", ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"])
def test_no_nan_no_infinity_and_upper_bits(name):
    """float4/float6 have neither NaN nor infinities: those fill values are refused, a hex
    value must fit the type's bits, and the bytes codec ignores a byte's upper bits."""
    width, one, top, _ = FLOATS[name]
    for word in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(MetadataError, match=f"fill_value.*{name} has no {word}"):
            _open(_doc(name, word))
    with pytest.raises(MetadataError, match=f"fill_value.*{width} bits"):
        _open(_doc(name, f"0x{1 << width:02x}"))
    junk = 0xFF ^ ((1 << width) - 1)
    a = _open(_doc(name, 0), bytes([one | junk, top | junk, junk, one]))
    assert _bits(a[...]) == [one, top, 0, one]


def test_e8m0fnu_has_no_zero_sign_or_infinity():
    """float8_e8m0fnu: "NaN" is 0xFF; infinities and numbers it cannot hold (0, negatives) are refused."""
    for bad in ("Infinity", "-Infinity", 0, -2.0):
        with pytest.raises(MetadataError, match="fill_value.*float8_e8m0fnu"):
            _open(_doc("float8_e8m0fnu", bad))
    assert _bits(_open(_doc("float8_e8m0fnu", 0.25)).metadata.fill_value) == [125]
    a = _create("float8_e8m0fnu", [LE], fill_value="NaN")
    assert json.loads(a.store.get("zarr.json"))["fill_value"] == "NaN"


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e3m4"])
def test_ieee_like_words_and_nan_payloads(name):
    """float8_e4m3 and float8_e3m4 are IEEE-like: infinities by name, a NaN other than the
    README's constant keeps its bits as hex."""
    width, one, top, nan = FLOATS[name]
    inf = (0x78 if name == "float8_e4m3" else 0x70)
    assert _bits(_open(_doc(name, "Infinity")).metadata.fill_value) == [inf]
    assert _bits(_open(_doc(name, "-Infinity")).metadata.fill_value) == [inf | 0x80]
    payload = f"0x{nan | 0x81:02x}"  # negative, another mantissa
    a = _open(_doc(name, payload))
    assert json.loads(json.dumps(a.metadata.data_type.fill_to_json(a.metadata.fill_value))) == payload


@pytest.mark.parametrize("name", ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"])
def test_packbits_packs_the_value_bits(name):
    """packbits stores float4 as 4 bits (0bSEEM) and float6 as 6 (0bSEEMMM / 0bSEEEMM)."""
    width, one, top, _ = FLOATS[name]
    a = _create(name, [{"name": "packbits"}], fill_value=0, shape=(4,), chunks=(4,))
    a[...] = np.array([1.0, MAXIMA[name], -1.0, 0.0])
    sign = 1 << (width - 1)
    stream = sum(v << (i * width) for i, v in enumerate([one, top, one | sign, 0]))
    assert a.store.get("c/0") == stream.to_bytes(width * 4 // 8, "little")
    assert a[...].astype(float).tolist() == [1.0, MAXIMA[name], -1.0, 0.0]


# -- complex types ------------------------------------------------------------------------------


@pytest.mark.parametrize("name,core", [("complex_float32", "complex64"), ("complex_float64", "complex128")])
def test_complex_float32_64_are_the_core_complex_types(name, core):
    """Aliases of complex64/complex128: numpy complex, the core fill forms, the name kept."""
    a = _open(_doc(name, [1.0, "NaN"], [BE]), np.array([1 + 2j, 3j, 0, 1], dtype=f">{np.dtype(core).str[1:]}")
              .tobytes())
    assert a.dtype == np.dtype(core) and a[...].tolist() == [1 + 2j, 3j, 0, 1]
    assert np.isnan(a.metadata.fill_value.imag) and a.metadata.data_type.to_json() == name
    assert data_type_from_numpy(core).name == core  # numpy complex writes the core name


@pytest.mark.parametrize("name", PAIRS)
def test_complex_pair_dtype_fill_and_layout(name):
    """complex_<part> is a structured (real, imag) pair of the part type; its fill value is
    [real, imaginary] in the part's float forms; chunks hold real then imaginary, each part
    in the codec's byte order (two-byte parts) or as one byte (endian has no effect)."""
    part = name[len("complex_"):]
    part_dtype = np.dtype("float16") if part == "float16" else np.dtype(getattr(ml_dtypes, part))
    t = parse_data_type_v3(name)
    assert t.dtype == np.dtype([("real", part_dtype), ("imag", part_dtype)]) and t.dtype.itemsize == 2 * PAIRS[name]
    fill = t.fill_from_json([1.0, "0x" + "01" * PAIRS[name]])
    assert float(fill["real"]) == 1.0 and _bits(np.asarray(fill["imag"])) == [1] * PAIRS[name]
    assert t.fill_to_json(fill)[0] == 1.0
    values = np.array([(1.0, 2.0), (0.5, -1.0)], dtype=t.dtype)
    parts = np.array([1.0, 2.0, 0.5, -1.0], dtype=part_dtype)
    for codec, order in ((LE, "<"), (BE, ">")):
        a = _create(name, [codec], shape=(2,), chunks=(2,))
        a[...] = values
        stored = parts.view(f"u{PAIRS[name]}").astype(f"{order}u{PAIRS[name]}").tobytes()
        assert a.store.get("c/0") == stored
        assert_same(a[...], values)


def test_complex_pair_fill_words_follow_the_part():
    """NaN/Infinity per part where the part has them; refused (naming the type) where not;
    a NaN payload keeps its bits."""
    t = parse_data_type_v3("complex_bfloat16")
    fill = t.fill_from_json(["NaN", "-Infinity"])
    assert _bits(np.asarray(fill)) == [0xC0, 0x7F, 0x80, 0xFF]
    assert t.fill_to_json(t.fill_from_json(["0x7fc1", "0xffc0"])) == ["0x7fc1", "0xffc0"]
    for name, value in (("complex_float4_e2m1fn", [0, "NaN"]), ("complex_float8_e8m0fnu", ["Infinity", 1]),
                        ("complex_float16", [0]), ("complex_float6_e3m2fn", ["0x40", 0])):
        with pytest.raises(MetadataError, match=f"fill_value.*{name}"):
            _open(_doc(name, value))


def test_complex_sub_byte_pairs_packbits_and_upper_bits():
    """complex_float4_e2m1fn: two 4-bit parts per value under packbits (real first), one
    byte each under bytes, upper bits ignored; complex_float6 parts take 6 bits."""
    a = _create("complex_float4_e2m1fn", [{"name": "packbits"}], shape=(2,), chunks=(2,))
    a[...] = np.array([(1.0, 2.0), (6.0, -0.5)], dtype=a.dtype)
    assert a.store.get("c/0") == bytes([0x42, 0x97])  # 1.0=0x2, 2.0=0x4, 6.0=0x7, -0.5=0b1001
    b = _open(_doc("complex_float4_e2m1fn", [0, 0], shape=(2,)), bytes([0xF2, 0xA4, 0x07, 0x39]))
    assert _bits(b[...]) == [0x2, 0x4, 0x7, 0x9]
    c = _create("complex_float6_e2m3fn", [{"name": "packbits"}], shape=(1,), chunks=(1,))
    c[...] = np.array([(1.0, 7.5)], dtype=c.dtype)
    assert c.store.get("c/0") == (0x08 | 0x1F << 6).to_bytes(2, "little")
    with pytest.raises(MetadataError, match="bit 4 is outside the 4-bit components"):
        _create("complex_float4_e2m1fn", [{"name": "packbits", "configuration": {"last_bit": 4}}])


def test_complex_pair_user_fill_values_and_numpy_dtypes():
    """create_array takes a Python complex or [real, imag] (JSON forms allowed) as fill; a
    numpy (real, imag) structured dtype of a part numpy has no complex of writes complex_<part>."""
    a = _create("complex_float16", [LE], fill_value=1 - 2j, shape=(2,), chunks=(2,))
    assert a[...].tolist() == [(1.0, -2.0)] * 2
    assert json.loads(a.store.get("zarr.json"))["fill_value"] == [1.0, -2.0]
    b = _create("complex_bfloat16", [LE], fill_value=["Infinity", "0x3f80"], shape=(1,), chunks=(1,))
    assert json.loads(b.store.get("zarr.json"))["fill_value"] == ["Infinity", 1.0]
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert data_type_from_numpy(np.dtype([("real", bf16), ("imag", bf16)])).name == "complex_bfloat16"
    assert data_type_from_numpy(np.dtype([("real", "f2"), ("imag", "f2")])).name == "complex_float16"
    assert data_type_from_numpy(np.dtype([("real", "f4"), ("imag", "f4")])).name == "struct"  # numpy has complex64
    assert data_type_from_numpy(np.dtype([("imag", bf16), ("real", bf16)])).name == "struct"


# -- round trips ------------------------------------------------------------------------------

NAMES = [*FLOATS, *PAIRS]


#: packbits stores every one of these types; sharding with big-endian inner chunks
CHAINS = [[LE], [BE], [LE, ZSTD], [PACK], [{"name": "sharding_indexed", "configuration": {
    "chunk_shape": [2], "codecs": [BE], "index_codecs": [LE, {"name": "crc32c"}]}}]]


def _random(dtype, name, data) -> np.ndarray:
    """Values of ``dtype`` from random bit patterns (sub-byte parts: their value bits only)."""
    part = name.removeprefix("complex_")
    n = 7 * dtype.itemsize
    raw = np.array(data.draw(st.lists(st.integers(0, 255), min_size=n, max_size=n)), dtype=np.uint8)
    width = {"float4_e2m1fn": 4, "float6_e2m3fn": 6, "float6_e3m2fn": 6}.get(part)
    if width is not None:
        raw &= (1 << width) - 1
    return raw.view(dtype)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_round_trip_bit_exact_every_chain(name, data):
    """Any bit pattern (NaNs with payloads, -0, subnormals) written through each chain reads
    back bit for bit, with a fill value drawn the same way in its JSON form."""
    data_type = parse_data_type_v3(name)
    values = _random(data_type.dtype, name, data)
    fill = values[0]
    for chain in CHAINS:
        a = _create(name, chain, fill_value=data_type.fill_to_json(fill), shape=(7,), chunks=(4,))
        assert_same(np.asarray(a.metadata.fill_value), np.asarray(fill), f"{name} fill")
        a[1:6] = values[1:6]
        back = zarrdask.open_array(a.store)
        expected = values.copy()
        expected[[0, 6]] = fill
        assert_same(back[...], expected, f"{name} {chain}")


# -- the bytes data type ----------------------------------------------------------------------


@pytest.mark.parametrize("fill", [[1, 2, 3], "AQID"], ids=["array", "base64"])
def test_bytes_spec_examples(fill):
    """The README's two fill value encodings of b"\\x01\\x02\\x03", with vlen-bytes."""
    a = _open(_doc("bytes", fill, [{"name": "vlen-bytes"}], shape=(2,)))
    assert a.metadata.fill_value == b"\x01\x02\x03" and a[...].tolist() == [b"\x01\x02\x03"] * 2


def test_bytes_round_trip_and_errors():
    """Written as data type "bytes" with the base64 fill form; bad fills name the field."""
    a = zarrdask.create_array(MemoryStore(), shape=(4,), chunks=(3,), dtype="bytes", fill_value=[0, 255])
    a[1:3] = np.array([b"", b"\x00abc\xff"], dtype=object)
    meta = json.loads(a.store.get("zarr.json"))
    assert meta["data_type"] == "bytes" and meta["fill_value"] == "AP8="
    assert zarrdask.open_array(a.store)[...].tolist() == [b"\x00\xff", b"", b"\x00abc\xff", b"\x00\xff"]
    for bad in ([256], "not base64!", 3, [1.5]):
        with pytest.raises(MetadataError, match="fill_value.*bytes"):
            _open(_doc("bytes", bad, [{"name": "vlen-bytes"}]))
    with pytest.raises(MetadataError, match="bytes codec cannot store variable-length data type 'bytes'"):
        _open(_doc("bytes", "", [LE]))


# -- without ml_dtypes ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["float8_e4m3", "float4_e2m1fn", "complex_bfloat16", "complex_float8_e5m2"])
def test_without_ml_dtypes_the_error_names_the_type_and_the_extra(monkeypatch, name):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import fails
    with pytest.raises(UnknownExtensionError, match=rf"data_type: data type '{name}' needs.*zarrdask\[ml\]"):
        _open(_doc({"name": name}, 0 if "complex" not in name else [0, 0]))
    assert parse_data_type_v3({"name": "complex_float16"}).dtype.names == ("real", "imag")  # numpy's float16
    old = types.ModuleType("ml_dtypes")
    old.__version__ = "0.4.1"
    monkeypatch.setitem(sys.modules, "ml_dtypes", old)
    with pytest.raises(UnsupportedDataTypeError, match=rf"'{name}' needs ml_dtypes >= 0.5 \(installed: 0.4.1\)"):
        parse_data_type_v3({"name": name})
