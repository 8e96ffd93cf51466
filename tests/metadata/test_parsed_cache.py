"""Opens of byte-identical ``zarr.json`` documents share one parse
(``metadata/parsed_cache.py``), but never a mutable value: attributes come from each open's
own document, so changing them in place (or through ``attrs``) is seen by no other open."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import MetadataError
from zarrdask.metadata import parsed_cache
from zarrdask.storage import MemoryStore


def _array(store, **kwargs):
    a = zarrdask.create_array(store, shape=(4,), dtype="int32", chunks=(2,), attributes={"units": ["m"], "n": 1},
                              **kwargs)
    a[...] = np.arange(4)
    return a


def test_reopened_arrays_share_the_parse_but_not_the_attributes():
    store = MemoryStore()
    _array(store)
    first, second = zarrdask.open_array(store), zarrdask.open_array(store)
    assert first._metadata.codecs is second._metadata.codecs  # one parse
    first.attrs["units"].append("changed in place")
    assert zarrdask.open_array(store).attrs["units"] == ["m"]
    assert second.attrs["units"] == ["m"]


def test_a_changed_document_is_parsed_again():
    store = MemoryStore()
    _array(store)
    zarrdask.open_array(store, mode="r+").attrs["n"] = 2
    assert zarrdask.open_array(store).attrs["n"] == 2
    zarrdask.open_array(store, mode="r+").resize((6,))
    assert zarrdask.open_array(store).shape == (6,)


def test_consolidated_members_get_their_own_attributes():
    store = MemoryStore()
    root = zarrdask.open_group(store, mode="w")
    root.create_array("a", shape=(2,), dtype="int8", attributes={"tags": ["x"]})
    zarrdask.consolidate_metadata(store)
    one, two = zarrdask.open_group(store), zarrdask.open_group(store)
    assert one.consolidated and two.consolidated
    one["a"].attrs["tags"].append("y")
    assert two["a"].attrs["tags"] == ["x"]
    assert zarrdask.open_group(store)["a"].attrs["tags"] == ["x"]


def test_a_bad_document_raises_on_every_open():
    store = MemoryStore()
    doc = json.loads(_array(store)._metadata.to_documents()["zarr.json"])
    doc["shape"] = [-1]
    store.set("zarr.json", json.dumps(doc).encode())
    for _ in range(2):
        with pytest.raises(MetadataError, match="shape"):
            zarrdask.open_array(store)


def test_the_cache_stays_within_its_bytes(monkeypatch):
    monkeypatch.setattr(parsed_cache, "CACHE_BYTES", 4000)
    monkeypatch.setattr(parsed_cache, "_parsed", type(parsed_cache._parsed)())
    monkeypatch.setattr(parsed_cache, "_held", 0)
    store = MemoryStore()
    for i in range(20):
        zarrdask.create_array(store, path=f"v{i}", shape=(i + 1,), dtype="int8", attributes={"i": i})
        zarrdask.open_array(store, path=f"v{i}")
    assert 0 < parsed_cache._held <= 4000
    assert parsed_cache._held == sum(len(raw) for raw, _ in parsed_cache._parsed)
    assert len(parsed_cache._parsed) < 20


def test_a_hit_equals_a_fresh_parse_field_for_field():
    """A hit copies the parsed metadata with the open's own attributes: equal to parsing the
    document anew (dimension names, fill value, codecs and all), for an array and for a
    consolidated group and its members."""
    from zarrdask.metadata.v3 import parse_v3

    store = MemoryStore()
    root = zarrdask.open_group(store, mode="w", attributes={"title": "t"})
    root.create_array("a", shape=(4, 3), dtype="float32", chunks=(2, 3), fill_value=float("nan"),
                      dimension_names=["y", None], attributes={"units": "K"})
    root.create_group("sub", attributes={"k": [1]})
    zarrdask.consolidate_metadata(store)
    for path in ("a", ""):
        raw = store.get(f"{path}/zarr.json" if path else "zarr.json")
        zarrdask.open_group(store) if not path else zarrdask.open_array(store, path=path)  # (cached now)
        assert (raw, True) in parsed_cache._parsed
        doc = json.loads(raw)
        hit = parsed_cache.parse_v3_cached(raw, doc, "zarr.json", True)
        fresh = parse_v3(json.loads(raw), key="zarr.json")
        assert type(hit) is type(fresh)
        assert repr(hit) == repr(fresh)  # (== alone would let NaN fill values differ)
        assert hit.attributes == fresh.attributes and hit.attributes is not doc.get("attributes")
    assert root.attrs["title"] == "t"
