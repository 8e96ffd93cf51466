"""zarr-specs #375 at creation: a Zarr v3 node may not be named ``zarr.json``; v2 may."""

from __future__ import annotations

import pytest

import zarrdask
from zarrdask.errors import InvalidKeyError
from zarrdask.storage import MemoryStore


@pytest.mark.parametrize("path", ["zarr.json", "a/zarr.json", "zarr.json/b"])
def test_a_v3_node_named_zarr_json_is_refused_at_creation(path):
    store = MemoryStore()
    with pytest.raises(InvalidKeyError, match="zarr.json"):
        zarrdask.create_array(store, path=path, shape=(2,), dtype="i1")
    with pytest.raises(InvalidKeyError, match="zarr.json"):
        zarrdask.create_group(store, path=path)
    assert not list(store.list_prefix(""))


def test_v2_keeps_the_name():
    a = zarrdask.create_array(MemoryStore(), path="g/zarr.json", shape=(2,), dtype="i1", zarr_format=2)
    assert a.path == "g/zarr.json"
