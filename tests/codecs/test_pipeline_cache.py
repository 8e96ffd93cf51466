"""Parsed codec configurations are shared and pipelines are cached by their identities:
a cached pipeline is always the one the chain and chunk spec ask for (hypothesis)."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.storage import MemoryStore

SETTINGS = settings(derandomize=True, deadline=None, max_examples=200, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


@st.composite
def chains(draw):
    inner = [BYTES]
    if draw(st.booleans()):
        inner.append({"name": "gzip", "configuration": {"level": draw(st.sampled_from([1, 2]))}})
    if draw(st.booleans()):
        return [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2], "codecs": inner, "index_location": draw(st.sampled_from(["start", "end"])),
            "index_codecs": [BYTES, {"name": "crc32c"}]}}]
    return inner


@SETTINGS
@given(st.lists(st.tuples(chains(), st.sampled_from(["float32", "int16"]),
                          st.sampled_from([0, 1, "NaN", "0x7fc00001", -0.0])), min_size=1, max_size=6))
def test_cached_pipelines_match_their_chain_and_spec(arrays):
    store = MemoryStore()
    for i, (codecs, dtype, fill) in enumerate(arrays):
        if dtype == "int16" and not isinstance(fill, int):
            fill = 3  # "NaN", hex and -0.0 are float fill values
        doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": dtype,
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
               "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs}
        store.set(f"a{i}/zarr.json", json.dumps(doc).encode())
        a = zarrdask.open_array(store, path=f"a{i}")
        got = a._pipeline
        assert [c["name"] for c in got.to_json()] == [c["name"] for c in codecs]
        assert got.spec.shape == (4,) and got.spec.dtype.name == dtype
        expected = np.asarray(a.fill_value, dtype=dtype).tobytes()
        assert np.asarray(got.spec.fill_value, dtype=dtype).tobytes() == expected
        if codecs[0]["name"] == "sharding_indexed":
            assert got.to_json()[0]["configuration"]["index_location"] == codecs[0]["configuration"]["index_location"]
            assert got.to_json()[0]["configuration"]["codecs"] == codecs[0]["configuration"]["codecs"]
        else:
            assert got.to_json() == codecs


def test_settings_of_another_json_type_are_not_shared():
    store = MemoryStore()
    for i, level in enumerate([1, True]):
        doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
               "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
               "codecs": [BYTES, {"name": "gzip", "configuration": {"level": level}}]}
        store.set(f"a{i}/zarr.json", json.dumps(doc).encode())
    ok = zarrdask.open_array(store, path="a0")
    assert ok._pipeline.to_json()[1]["configuration"]["level"] == 1
    try:
        zarrdask.open_array(store, path="a1")[...]
    except zarrdask.ZarrdaskError as exc:
        assert "level" in str(exc)
    else:
        raise AssertionError("a boolean gzip level was accepted")


def test_types_sharing_a_name_get_their_own_pipelines():
    """Configured data types share a name (``numpy.datetime64`` of any unit, ``struct`` of any
    fields): a pipeline cached for one is never reused for another (it was keyed by the name:
    a struct array was given another struct's pipeline)."""
    dates = np.array(["2001-01-01", "2002-02-02"], dtype="M8[s]")
    for dtype, values in (("M8[ns]", dates.astype("M8[ns]")), ("M8[s]", dates),
                          ([("a", "i1")], np.array([(1,), (2,)], [("a", "i1")])),
                          ([("a", "i2")], np.array([(3,), (4,)], [("a", "i2")]))):
        a = zarrdask.create_array(MemoryStore(), shape=(2,), dtype=dtype, chunks=(2,), codecs=[BYTES], fill_value=0)
        a[...] = values
        np.testing.assert_array_equal(a[...], values)
