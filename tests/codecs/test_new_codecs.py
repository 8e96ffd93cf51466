"""Codecs registered in zarr-extensions since the core spec: ``scale_offset``, ``bitround``
(with its ``numcodecs.bitround`` alias), ``cast_value``, ``packbits`` and ``reshape``, by
the specs' examples, properties, and against numcodecs and zarr-python. (Interop with
zarr-python 3.4 and cast-value-rs: tests/interop/test_zarr34_interop.py.)"""

from __future__ import annotations

import bisect
import json
import math
import warnings
from fractions import Fraction
from typing import Any

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import CodecError, CorruptChunkError, MetadataError
from zarrdask.storage import MemoryStore

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _array(dtype, codecs, fill_value=0, shape=(8,), chunks=(3,)):
    return zarrdask.create_array(MemoryStore(), shape=shape, dtype=dtype, chunks=chunks, codecs=codecs,
                                 fill_value=fill_value, write_empty_chunks=True)


def test_scale_offset_spec_example_float32():
    """The spec's first example: offset 5, scale 0.1 on float32; stored values are
    (x - 5) * 0.1 in float32 arithmetic."""
    a = _array("float32", [{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}, BYTES])
    values = np.arange(8, dtype="float32") * 3
    a[...] = values
    stored = np.frombuffer(a.store.get("c/0"), dtype="<f4")
    np.testing.assert_array_equal(stored, ((values[:3] - np.float32(5)) * np.float32(0.1)).astype("float32"))
    np.testing.assert_allclose(a[...], values, rtol=1e-6)


def test_scale_offset_integer_range_reduction_and_errors():
    a = _array("uint16", [{"name": "scale_offset", "configuration": {"offset": 1000}}, BYTES], fill_value=1000)
    a[...] = np.arange(1000, 1008, dtype="uint16")
    np.testing.assert_array_equal(a[...], np.arange(1000, 1008))
    assert np.frombuffer(a.store.get("c/0"), dtype="<u2").tolist() == [0, 1, 2]
    with pytest.raises(CodecError, match="outside uint16"):
        a[0] = 5  # 5 - 1000 is not a uint16
    with pytest.raises(MetadataError, match="integer scale of 0"):
        _array("int32", [{"name": "scale_offset", "configuration": {"scale": 0}}, BYTES])
    with pytest.raises(MetadataError, match="unknown key .shift."):
        _array("int32", [{"name": "scale_offset", "configuration": {"shift": 1}}, BYTES])


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint32"]), st.integers(-3, 3),
       st.integers(1, 4), st.data())
def test_scale_offset_integers_round_trip_exactly(dtype, offset, scale, data):
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
    values = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=8, max_size=8)), dtype=dtype)
    if offset < 0 and dtype.startswith("u"):
        offset = -offset
    fits = all(info.min <= (int(v) - offset) * scale <= info.max for v in values)
    a = _array(dtype, [{"name": "scale_offset", "configuration": {"offset": offset, "scale": scale}}, BYTES],
               fill_value=offset)
    if not fits:
        with pytest.raises(CodecError):
            a[...] = values
        return
    a[...] = values
    np.testing.assert_array_equal(a[...], values)


@pytest.mark.parametrize("name", ["bitround", "numcodecs.bitround"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bitround_matches_numcodecs(name, dtype):
    """Both names round as numcodecs does (``numcodecs.bitround`` used to convert the
    integer view numcodecs returns to floats by value: every stored value was wrong)."""
    values = np.random.default_rng(0).normal(size=8).astype(dtype)
    reference = numcodecs.BitRound(keepbits=5)
    expected = reference.decode(reference.encode(values.copy()))
    a = _array(dtype, [{"name": name, "configuration": {"keepbits": 5}}, BYTES])
    a[...] = values
    np.testing.assert_array_equal(a[...], expected)


def test_bitround_spec_sample_data():
    """The spec's sample arrays (keepbits 3), as its tables give them: float32 and uint8."""
    cases = {
        "float32": ([0.0, 0.1, 1.2, 12.3, 123.4, 1234.5, np.nan, np.inf, -np.inf],
                    [0.0, 0.1015625, 1.25, 12.0, 120.0, 1280.0, np.nan, np.inf, -np.inf]),
        "uint8": ([0, 1, 10, 11, 100, 123, 200, 208, 209, 255], [0, 1, 10, 12, 96, 128, 192, 192, 224, 224]),
    }
    for dtype, (values, rounded) in cases.items():
        a = _array(dtype, [{"name": "bitround", "configuration": {"keepbits": 3}}, BYTES], shape=(len(values),),
                   chunks=(len(values),))
        a[...] = np.array(values, dtype=dtype)
        np.testing.assert_array_equal(a[...], np.array(rounded, dtype=dtype))


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(["uint8", "int16", "uint32", "int64", "uint64"]), st.integers(0, 70), st.data())
def test_bitround_integers_keep_bits_from_the_top_set_bit(dtype, keepbits, data):
    """Integers keep ``keepbits`` bits from their most significant set bit, rounded half to even
    and saturating, which this checks in Python integers on the bit pattern."""
    info = np.iinfo(dtype)
    values = np.array(data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=6, max_size=6)),
                      dtype=dtype)
    a = _array(dtype, [{"name": "bitround", "configuration": {"keepbits": keepbits}}, BYTES], shape=(6,))
    a[...] = values
    width = 8 * values.dtype.itemsize
    expected = []
    for v in values.view(f"u{values.dtype.itemsize}").tolist():
        drop = v.bit_length() - keepbits
        if drop > 0:
            v = min(v + ((v >> drop) & 1) + (1 << (drop - 1)) - 1, 2**width - 1) >> drop << drop
        expected.append(v)
    np.testing.assert_array_equal(a[...].view(f"u{values.dtype.itemsize}"), expected)


def test_bitround_refuses_types_it_cannot_round():
    with pytest.raises(MetadataError, match="bitround of bool data is not supported"):
        _array("bool", [{"name": "bitround", "configuration": {"keepbits": 3}}, BYTES], fill_value=False)
    with pytest.raises(MetadataError, match="keepbits"):
        _array("float32", [{"name": "bitround", "configuration": {"keepbits": -1}}, BYTES])


def test_numcodecs_bitround_written_by_zarr_python_reads_exact(tmp_path):
    zarr = pytest.importorskip("zarr")
    from zarr.codecs.numcodecs import BitRound

    values = np.random.default_rng(1).normal(size=(5, 4)).astype("float32")
    path = str(tmp_path / "b.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(path, shape=values.shape, dtype="float32", chunks=(2, 4),
                              filters=[BitRound(keepbits=6)], compressors=None)
        z[...] = values
        expected = z[...]
    assert json.load(open(f"{path}/zarr.json"))["codecs"][0]["name"] == "numcodecs.bitround"
    np.testing.assert_array_equal(zarrdask.open_array(path)[...], expected)


# -- cast_value -------------------------------------------------------------------------


def _cast(rounding="nearest-even", out_of_range=None, scalar_map=None, data_type="uint8"):
    config = {"data_type": data_type, "rounding": rounding}
    if out_of_range:
        config["out_of_range"] = out_of_range
    if scalar_map:
        config["scalar_map"] = scalar_map
    return {"name": "cast_value", "configuration": config}


def test_cast_value_spec_example_numpy_compatibility():
    """The spec's example: float64 stored as uint8 towards zero, wrapping, NaN and infinities
    mapped to 0 (written ``"+Infinity"`` there)."""
    cast = _cast("towards-zero", "wrap", {"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]]})
    a = _array("float64", [cast, BYTES], shape=(6,), chunks=(6,))
    a[...] = [1.7, 300.9, -1.2, np.nan, np.inf, -np.inf]
    assert list(a.store.get("c/0")) == [1, 44, 255, 0, 0, 0]
    np.testing.assert_array_equal(a[...], [1, 44, 255, 0, 0, 0])


def test_cast_value_out_of_range_examples():
    """The spec's examples: 128.0 as int8 fails, clamps to 127 or wraps to -128; int16 wraps
    32768, 32769 and -32769 to -32768, -32767 and 32767."""
    with pytest.raises(CodecError, match="outside the range of int8"):
        _array("float32", [_cast(data_type="int8"), BYTES], shape=(1,), chunks=(1,))[...] = [128.0]
    for mode, stored in (("clamp", 127), ("wrap", -128)):
        a = _array("float32", [_cast(out_of_range=mode, data_type="int8"), BYTES], shape=(1,), chunks=(1,))
        a[...] = [128.0]
        assert np.frombuffer(a.store.get("c/0"), "i1").tolist() == [stored]
    a = _array("int32", [_cast(out_of_range="wrap", data_type="int16"), BYTES], shape=(3,))
    a[...] = [32768, 32769, -32769]
    np.testing.assert_array_equal(a[...], [-32768, -32767, 32767])


def test_cast_value_with_scale_offset_spec_examples():
    """scale_offset's examples: uint16 in [1000, 1255] stored as uint8; float64 in [0, 2540]
    stored as uint8 with NaN (the fill value) kept as 0."""
    a = _array("uint16", [{"name": "scale_offset", "configuration": {"offset": 1000}}, _cast(), BYTES],
               shape=(256,), chunks=(256,), fill_value=1000)
    a[...] = np.arange(1000, 1256)
    assert a.store.get("c/0") == bytes(range(256))
    np.testing.assert_array_equal(a[...], np.arange(1000, 1256))
    chain = [{"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
             _cast(scalar_map={"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}), BYTES]
    b = _array("float64", chain, shape=(4,), chunks=(4,), fill_value="NaN")
    b[:3] = [0.0, 2540.0, np.nan]
    assert list(b.store.get("c/0")) == [1, 255, 0, 0]
    np.testing.assert_array_equal(b[...], [0.0, 2540.0, np.nan, np.nan])


def _reference(value: Fraction, candidates: list, rounding: str) -> Any:
    """The spec's rounding of an exact value between sorted candidate values (exact Fractions;
    the candidates are integers or float16 values)."""
    i = bisect.bisect_left(candidates, value)
    if i < len(candidates) and candidates[i] == value:
        return candidates[i]
    lo, hi = candidates[i - 1], candidates[i]
    if rounding == "towards-zero":
        return lo if value > 0 else hi
    if rounding == "towards-positive":
        return hi
    if rounding == "towards-negative":
        return lo
    if value - lo != hi - value:
        return lo if value - lo < hi - value else hi
    if rounding == "nearest-away":
        return hi if value > 0 else lo
    return lo if _even(lo) else hi


def _even(value: Fraction) -> bool:
    """Whether a float16 value (or the overflow rung 2**16, whose significand is 1) has an
    even significand."""
    return abs(value) >= 65536 or int(np.array(float(value), np.float16).view(np.uint16)) % 2 == 0


_FLOAT16 = sorted({Fraction(float(v)) for v in np.arange(2**16, dtype=np.uint16).view(np.float16)
                   if np.isfinite(v)} | {Fraction(s * 65536) for s in (1, -1, 10**6, -(10**6))})  # overflow rungs
_ROUNDING = ["nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away"]


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(_ROUNDING), st.sampled_from([None, "clamp"]),
       st.one_of(st.floats(-70000, 70000, width=64), st.floats(-1e-7, 1e-7), st.integers(-70000, 70000),
                 st.sampled_from([65504.0, 65520.0, 65519.99, -65520.0, 2.0**-25, -(2.0**-25), 3 * 2.0**-26])))
def test_cast_value_rounds_floats_exactly(rounding, out_of_range, value):
    """float64 (and int64) values cast to float16 by every rounding mode against an exact
    reference on all float16 values; past the largest finite value is an overflow."""
    source = "int64" if isinstance(value, int) else "float64"
    a = _array(source, [_cast(rounding, out_of_range, data_type="float16"), BYTES], shape=(1,), chunks=(1,))
    expected = _reference(Fraction(value), _FLOAT16, rounding)
    if abs(expected) > 65504 and out_of_range is None:
        with pytest.raises(CodecError, match="outside the range of float16"):
            a[...] = [value]
        return
    a[...] = [value]
    stored = np.frombuffer(a.store.get("c/0"), "<f2")[0]
    if abs(expected) > 65504:
        assert stored == np.copysign(np.inf, value)
    else:
        assert Fraction(float(stored)) == expected
        assert np.signbit(stored) == (value < 0 or (value == 0 and np.signbit(value)))


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(_ROUNDING), st.sampled_from([None, "clamp", "wrap"]), st.sampled_from(["int8", "uint16"]),
       st.one_of(st.floats(-1e5, 1e5), st.integers(-300, 300).map(lambda i: i / 2)))
def test_cast_value_rounds_floats_to_integers(rounding, out_of_range, target, value):
    info = np.iinfo(target)
    a = _array("float64", [_cast(rounding, out_of_range, data_type=target), BYTES], shape=(1,), chunks=(1,))
    exact = Fraction(value)
    whole = {"nearest-even": round(exact), "towards-zero": math.trunc(exact), "towards-positive": math.ceil(exact),
             "towards-negative": math.floor(exact),
             "nearest-away": int(math.copysign(math.floor(abs(exact) + Fraction(1, 2)), value))}[rounding]
    if info.min <= whole <= info.max:
        a[...] = [value]
        assert int(a[0]) == whole
    elif out_of_range is None:
        with pytest.raises(CodecError, match="outside the range"):
            a[...] = [value]
    else:
        a[...] = [value]
        assert int(a[0]) == (min(max(whole, info.min), info.max) if out_of_range == "clamp"
                             else (whole - int(info.min)) % 2**info.bits + int(info.min))


def test_cast_value_bad_configuration_names_the_field():
    with pytest.raises(MetadataError, match="out_of_range.*'wrap' needs an integer data_type"):
        _array("float64", [_cast(out_of_range="wrap", data_type="float32"), BYTES])
    with pytest.raises(MetadataError, match="configuration/data_type.*integer or floating-point"):
        _array("float64", [_cast(data_type="bool"), BYTES])
    with pytest.raises(MetadataError, match="configuration/rounding"):
        _array("float64", [_cast(rounding="up"), BYTES])
    with pytest.raises(MetadataError, match="scalar_map/encode/0/1"):
        _array("float64", [_cast(scalar_map={"encode": [["NaN", 300]]}), BYTES])
    with pytest.raises(MetadataError, match="fill value 0.5 does not survive"):
        _array("float64", [_cast(), BYTES], fill_value=0.5)
    with pytest.raises(MetadataError, match="fill value nan cannot be cast"):
        _array("float64", [_cast(), BYTES], fill_value="NaN")
    with pytest.raises(CodecError, match="nan has no uint8 value"):
        _array("float64", [_cast(), BYTES])[...] = np.nan


# -- packbits ---------------------------------------------------------------------------


def _packbits(padding="none", first=None, last=None):
    config = {"padding_encoding": padding}
    if first is not None:
        config["first_bit"] = first
    if last is not None:
        config["last_bit"] = last
    return {"name": "packbits", "configuration": config}


@settings(max_examples=120, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(["bool", "int4", "uint4", "int8", "int16", "uint32", "int64", "float32", "complex64"]),
       st.sampled_from(["none", "first_byte", "last_byte"]), st.data())
def test_packbits_layout_and_round_trip(dtype, padding, data):
    """The stored stream is each component's bits ``first_bit..last_bit`` least significant
    first (checked against Python integers); decoding shifts them back, sign-extending
    signed integers."""
    ml_dtypes = pytest.importorskip("ml_dtypes") if dtype in ("int4", "uint4") else None
    dt = np.dtype(getattr(ml_dtypes, dtype)) if ml_dtypes else np.dtype(dtype)
    n_bits = {"bool": 1, "int4": 4, "uint4": 4}.get(dtype, 8 * dt.itemsize // (2 if dt.kind == "c" else 1))
    first = data.draw(st.integers(0, n_bits - 1))
    last = data.draw(st.integers(first, n_bits - 1))
    n = data.draw(st.integers(1, 7))
    unit = np.dtype(f"u{dt.itemsize // (2 if dt.kind == 'c' else 1)}")
    patterns = data.draw(st.lists(st.integers(0, 2**n_bits - 1), min_size=n * (2 if dt.kind == "c" else 1),
                                  max_size=n * (2 if dt.kind == "c" else 1)))
    values = np.array(patterns, dtype=unit).view(dt)
    if dtype == "bool":
        values = np.array(patterns, dtype=np.uint8).astype(bool)
    a = _array(dtype if not ml_dtypes else dt, [_packbits(padding, first, last)], shape=(n,), chunks=(n,),
               fill_value=0 if dtype != "bool" else False)
    a[...] = values
    width = last - first + 1
    stream = [(p >> (first + b)) & 1 for p in patterns for b in range(width)]
    packed = bytes(sum(bit << j for j, bit in enumerate(stream[i:i + 8])) for i in range(0, len(stream), 8))
    pad = bytes([-len(stream) % 8])
    assert a.store.get("c/0") == {"none": packed, "first_byte": pad + packed, "last_byte": packed + pad}[padding]
    signed = dtype in ("int4", "int8", "int16", "int64")
    expected = []
    for p in patterns:
        kept = (p >> first) & ((1 << width) - 1)
        if signed and kept >> (width - 1):
            kept |= ((1 << (n_bits - width)) - 1) << width
        expected.append((kept << first) & (2**n_bits - 1))
    got = np.ascontiguousarray(a[...])
    got_bits = got.astype(np.uint8) if dtype == "bool" else got.view(unit)
    if dtype in ("int4", "uint4"):
        got_bits = got_bits & 0xF
    assert got_bits.reshape(-1).tolist() == expected


def test_packbits_errors_name_the_field():
    with pytest.raises(MetadataError, match="last_bit.*outside the 16-bit components"):
        _array("uint16", [_packbits(last=16)])
    with pytest.raises(MetadataError, match="padding_encoding"):
        _array("uint16", [_packbits(padding="first")])
    with pytest.raises(MetadataError, match="last_bit.*must not be less than first_bit"):
        _array("uint16", [_packbits(first=5, last=2)])
    with pytest.raises(MetadataError, match="cannot store data type 'string'"):
        zarrdask.create_array(MemoryStore(), shape=(2,), dtype=str, chunks=(2,), codecs=[_packbits()])
    a = _array("uint16", [_packbits("first_byte", 0, 11)], shape=(3,), chunks=(3,))
    a[...] = [1, 2, 3]
    a.store.set("c/0", b"\x07" + a.store.get("c/0")[1:])
    with pytest.raises(CorruptChunkError, match="padding byte says 7 bits"):
        a[...]


def test_packbits_reads_the_schema_spellings():
    a = _array("uint16", [{"name": "packbits", "configuration": {"padding_encoding": "start_byte",
                                                                 "start_bit": 0, "end_bit": 11}}], shape=(2,), chunks=(2,))
    a[...] = [4095, 7]
    assert a.store.get("c/0") == bytes([0, 0xFF, 0x7F, 0x00])
    assert a.metadata.codecs[0].to_json()["configuration"] == {"padding_encoding": "first_byte", "first_bit": 0,
                                                                "last_bit": 11}


# -- reshape ----------------------------------------------------------------------------


def test_reshape_spec_example():
    """The spec's example: chunks (100, 50, 64, 3) stored as (5000, 64, 3); the order of the
    elements does not change, which a transpose after it shows."""
    chain = [{"name": "reshape", "configuration": {"shape": [[0, 1], [2], 3]}},
             {"name": "transpose", "configuration": {"order": [2, 1, 0]}}, BYTES]
    values = np.random.default_rng(2).integers(0, 255, size=(100, 50, 64, 3), dtype=np.uint8)
    a = _array("uint8", chain, shape=values.shape, chunks=values.shape)
    a[...] = values
    assert a.store.get("c/0/0/0/0") == values.reshape(5000, 64, 3).transpose(2, 1, 0).tobytes()
    np.testing.assert_array_equal(a[...], values)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_reshape_groups_of_dimensions_round_trip(chunks, data):
    """Any split of the chunk's dimensions into consecutive groups (as lists, sizes or one -1)
    stores the chunk's bytes unchanged and reads back exact."""
    cuts = sorted(data.draw(st.sets(st.integers(1, len(chunks) - 1))) if len(chunks) > 1 else set())
    groups = [list(range(a, b)) for a, b in zip([0, *cuts], [*cuts, len(chunks)])]
    entries = [data.draw(st.sampled_from(["dims", "size"])) for _ in groups]
    shape = [g if e == "dims" else math.prod(chunks[d] for d in g) for g, e in zip(groups, entries)]
    if data.draw(st.booleans()):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    array_shape = tuple(2 * c + 1 for c in chunks)
    values = np.arange(math.prod(array_shape), dtype="int32").reshape(array_shape)
    a = _array("int32", [{"name": "reshape", "configuration": {"shape": shape}}, BYTES], shape=array_shape,
               chunks=tuple(chunks), fill_value=-1)
    a[...] = values
    np.testing.assert_array_equal(a[...], values)
    first = tuple(slice(0, c) for c in chunks)
    assert a.store.get("c/" + "/".join("0" * len(chunks))) == values[first].astype("<i4").tobytes()


def test_reshape_invalid_shapes_name_the_field():
    cases = [([[1], [0]], "strictly increasing"), ([-1, -1], "at most once"), ([7], "has 6"),
             ([[1], -1], "do not line up"), ([0], "expected a positive size"), ([[0, 5]], "does not exist")]
    for shape, message in cases:
        with pytest.raises(MetadataError, match=f"configuration/shape.*{message}"):
            _array("uint8", [{"name": "reshape", "configuration": {"shape": shape}}, BYTES], shape=(2, 3),
                   chunks=(2, 3))
