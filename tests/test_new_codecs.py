"""Codecs registered in zarr-extensions since the core spec: ``scale_offset``, ``bitround``
(with its ``numcodecs.bitround`` alias), ``cast_value``, ``packbits`` and ``reshape``, by
the specs' examples, properties, and against numcodecs and zarr-python. (Interop with
zarr-python 3.4 and cast-value-rs: tests/test_zarr34_interop.py.)"""

from __future__ import annotations

import json
import warnings

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import CodecError, MetadataError
from zarrdask.storage import MemoryStore

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _array(dtype, codecs, fill_value=0, shape=(8,), chunks=(3,)):
    return zarrdask.create_array(MemoryStore(), shape=shape, dtype=dtype, chunks=chunks, codecs=codecs,
                                 fill_value=fill_value)


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
    with pytest.raises(MetadataError, match="unknown settings"):
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
