"""The ``struct`` data type (and its read-only legacy name ``structured``), by the spec's
examples: metadata, packed byte layout in both byte orders, fill values per field."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import zarrdask
from zarrdask.errors import MetadataError
from zarrdask.storage import MemoryStore


def _doc(data_type, fill_value, codecs=None, shape=(3,)):
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shape)}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": fill_value,
            "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}]}


def _open(doc, chunk=None):
    store = MemoryStore()
    store.set("zarr.json", json.dumps(doc).encode())
    if chunk is not None:
        store.set("c/0", chunk)
    return zarrdask.open_array(store, mode="r+")


def _struct(*fields):
    return {"name": "struct", "configuration": {"fields": [{"name": n, "data_type": t} for n, t in fields]}}


def test_spec_examples_points_and_packed_layout():
    """The 2D point example reads with its fill value; the id/flags/value record is 13 packed
    bytes (offsets 0, 4, 5) and the nested point/value record 16 (depth first)."""
    points = _open(_doc(_struct(("x", "float32"), ("y", "float32")), {"x": 0.0, "y": 0.0}))
    assert points.dtype == np.dtype([("x", "<f4"), ("y", "<f4")]) and points[0].tolist() == (0.0, 0.0)
    record = _struct(("id", "int32"), ("flags", "uint8"), ("value", "float64"))
    chunk = b"".join(np.int32(i).tobytes() + bytes([i]) + np.float64(i / 4).tobytes() for i in range(3))
    a = _open(_doc(record, {"id": 0, "flags": 0, "value": 0.0}), chunk)
    assert a.dtype.itemsize == 13 and [a.dtype.fields[n][1] for n in ("id", "flags", "value")] == [0, 4, 5]
    assert a[...].tolist() == [(0, 0, 0.0), (1, 1, 0.25), (2, 2, 0.5)]
    nested = _struct(("point", _struct(("x", "float32"), ("y", "float32"))), ("value", "float64"))
    b = zarrdask.create_array(MemoryStore(), shape=(1,), dtype=_open(_doc(nested, {"point": {"x": 1.0, "y": 2.0},
                                                                                    "value": 3.14})).metadata.data_type,
                              chunks=(1,), fill_value={"point": (1.0, 2.0), "value": 3.14}, compressors=None,
                              write_empty_chunks=True)
    b[0] = ((1.0, 2.0), 3.14)
    assert b.store.get("c/0") == np.float32(1).tobytes() + np.float32(2).tobytes() + np.float64(3.14).tobytes()
    assert json.loads(b.store.get("zarr.json"))["fill_value"] == {"point": {"x": 1.0, "y": 2.0}, "value": 3.14}


FIELD_TYPES = ["int8", "uint16", "int32", "int64", "float16", "float32", "float64", "complex64", "bool"]


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(FIELD_TYPES), min_size=1, max_size=4), st.sampled_from(["little", "big"]),
       st.data())
def test_structs_round_trip_in_both_byte_orders(types, endian, data):
    """Any struct of numeric fields stores each field in the codec's byte order, packed, and
    reads back bit-exact."""
    dtype = np.dtype([(f"f{i}", t) for i, t in enumerate(types)])
    values = data.draw(npst.arrays(dtype, (5,)))
    a = zarrdask.create_array(MemoryStore(), shape=(5,), dtype=dtype, chunks=(5,), compressors=None,
                              serializer={"name": "bytes", "configuration": {"endian": endian}},
                              write_empty_chunks=True)
    a[...] = values
    stored = np.dtype([(f"f{i}", np.dtype(t).newbyteorder("<" if endian == "little" else ">"))
                       for i, t in enumerate(types)])
    assert a.store.get("c/0") == values.astype(stored).tobytes()
    assert a[...].tobytes() == values.tobytes()


def test_fill_values_keep_their_json_form():
    """Each field's fill value keeps its exact JSON: a NaN payload, infinities, complex parts."""
    fill = {"a": "0x7fc00001", "b": "-Infinity", "c": [1.5, "NaN"], "d": -3, "t": 86400}
    data_type = _struct(("a", "float32"), ("b", "float64"), ("c", "complex128"), ("d", "int16"),
                        ("t", {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}))
    a = _open(_doc(data_type, fill))
    a.attrs["touched"] = True  # rewrites the metadata
    assert json.loads(a.store.get("zarr.json"))["fill_value"] == fill
    assert np.asarray(a[0]["a"]).view("u4") == 0x7FC00001


def test_legacy_structured_reads_tuple_fields_base64_fill_and_no_endian():
    dtype = np.dtype([("x", "<i2"), ("y", "<f4")])
    fill = np.array([(7, 2.5)], dtype=dtype)
    doc = _doc({"name": "structured", "configuration": {"fields": [["x", "int16"], ["y", "float32"]]}},
               base64.b64encode(fill.tobytes()).decode(), codecs=[{"name": "bytes"}])
    values = np.array([(1, 0.5), (2, 1.5), (3, -1.0)], dtype=dtype)
    a = _open(doc, values.tobytes())
    assert a[...].tolist() == values.tolist()
    assert a.fill_value.tolist() == (7, 2.5)
    a.store.delete("c/0")
    assert a[...].tolist() == [(7, 2.5)] * 3


@pytest.mark.parametrize("data_type, fill, message", [
    (_struct(("x", "int8"), ("x", "int8")), {"x": 0}, "fields/1/name: duplicate field name 'x'"),
    (_struct(("s", "string")), {"s": ""}, "fields/0/data_type: a struct field needs a fixed-size data type"),
    ({"name": "struct", "configuration": {"fields": []}}, {}, "fields: expected a non-empty list"),
    (_struct(("x", "int8"), ("y", "int8")), {"x": 0}, "fill_value: .*missing \\['y'\\]"),
    (_struct(("x", "int8")), {"x": 300}, "fill_value/x: invalid fill value 300"),
    ({"name": "struct", "configuration": {"fields": [["x", "int8"]]}}, {"x": 0}, "fields/0: expected"),
])
def test_bad_structs_name_the_field(data_type, fill, message):
    with pytest.raises(MetadataError, match=message):
        _open(_doc(data_type, fill))
