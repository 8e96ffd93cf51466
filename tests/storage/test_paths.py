"""Keys and node names that would leave the store root, on every store.

Every store (local, memory, zip, fsspec over memory and local files, S3 on a loopback
moto server) refuses keys with ``..`` / ``.`` / empty segments, absolute paths, a
drive letter, ``\\`` or NUL, for every operation, before any I/O. Zarr v3 nodes are not
created under names starting with ``__`` (reserved by the spec); consolidated metadata
whose entries point outside the group is a MetadataError.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import zarrdask
from zarrdask.errors import InvalidKeyError, InvalidStoreError, MetadataError
from zarrdask.storage import ByteRange, FsspecStore, LocalStore, MemoryStore, PrefixedStore, ZipStore

from _s3 import s3_storage_options

BAD_KEYS = ["../x", "a/../../x", "..", ".", "./a", "a/./b", "/abs", "/", "a//b", "a/", "C:/x", "c:x", "a\\b",
            "..\\x", "a\x00b", "\x00"]
#: prefixes are listed with their outer "/" stripped, so these are the root, "abs" and "a"
LISTABLE = ("/", "/abs", "a/")
KINDS = ["local", "memory", "zip-read", "zip-write", "fsspec-memory", "fsspec-local", "prefixed", "s3"]


@pytest.fixture
def store_of(tmp_path: Path, request: pytest.FixtureRequest):
    """A writable (or, for a zip being read, readable) store of the given kind."""
    made = []

    def make(kind: str):
        root = tmp_path / "root" / "store"
        root.mkdir(parents=True, exist_ok=True)
        if kind == "local":
            return LocalStore(root)
        if kind == "memory":
            return MemoryStore()
        if kind == "zip-read":
            with ZipStore(tmp_path / "r.zip", mode="w") as z:
                z.set("a/b", b"1")
            return ZipStore(tmp_path / "r.zip")
        if kind == "zip-write":
            z = ZipStore(tmp_path / "w.zip", mode="w")
            made.append(z)
            return z
        if kind == "fsspec-memory":
            return FsspecStore(f"memory://paths-{os.getpid()}-{id(tmp_path)}")
        if kind == "fsspec-local":
            return FsspecStore(f"file://{root}")
        if kind == "prefixed":
            return PrefixedStore(LocalStore(tmp_path / "root"), "store")
        endpoint = request.getfixturevalue("s3_endpoint")
        url = request.getfixturevalue("s3_url")
        return zarrdask.open_store(url, mode="a", storage_options=s3_storage_options(endpoint))

    yield make
    for z in made:
        z.close()


@pytest.mark.parametrize("kind", KINDS)
def test_keys_leaving_the_root_are_refused_everywhere(store_of, tmp_path: Path, kind: str) -> None:
    store = store_of(kind)
    for key in BAD_KEYS:
        calls = [lambda: store.get(key), lambda: store.get_ranges([(key, ByteRange(0, 4))]),
                 lambda: store.get_many([key]), lambda: store.exists(key), lambda: store.size(key)]
        if key not in LISTABLE:
            calls += [lambda: list(store.list_prefix(key)), lambda: store.list_dir(key)]
        if not store.read_only:
            calls += [lambda: store.set(key, b"x"), lambda: store.set_many({key: b"x"}),
                      lambda: store.delete(key), lambda: store.delete_many([key])]
        for call in calls:
            with pytest.raises(InvalidKeyError):
                call()
    # nothing was written anywhere beside or above the store
    assert sorted(p.name for p in (tmp_path / "root").iterdir()) == ["store"]
    assert not list((tmp_path / "root" / "store").iterdir())


@pytest.mark.parametrize("kind", ["local", "memory", "fsspec-memory", "fsspec-local", "prefixed", "s3"])
def test_node_paths_leaving_the_root_and_reserved_names(store_of, kind: str) -> None:
    store = store_of(kind)
    root = zarrdask.create_group(store)
    for bad in ("../x", "a/../../x", "a\\b", "a\x00b", "C:/x"):  # ("/a" is "a": node paths are root-relative)
        with pytest.raises(InvalidKeyError):
            zarrdask.create_array(store, path=bad, shape=(2,), dtype="i1", chunks=(1,))
        with pytest.raises(InvalidKeyError):
            root.create_group(bad)
        with pytest.raises(InvalidKeyError):
            zarrdask.open(store, path=bad)
        with pytest.raises(InvalidKeyError):
            root[bad]
    for reserved in ("__x", "a/__b", "__zarr"):
        with pytest.raises(InvalidKeyError, match="reserve"):
            zarrdask.create_array(store, path=reserved, shape=(2,), dtype="i1", chunks=(1,))
        with pytest.raises(InvalidKeyError, match="reserve"):
            root.create_group(reserved)
    assert not list(store.list_prefix(""))[1:], list(store.list_prefix(""))  # only the root's zarr.json
    made = zarrdask.create_array(store, path="__x", shape=(2,), dtype="i1", chunks=(1,), allow_reserved_names=True)
    assert zarrdask.open(store, path="__x").shape == made.shape  # existing ones open
    # Zarr v2 has no reserved prefix (xarray names unnamed DataArrays "__xarray_dataarray_variable__")
    v2 = zarrdask.create_group(store, path="v2", zarr_format=2)
    v2.create_array("__xarray_dataarray_variable__", shape=(2,), dtype="i1", chunks=(1,))[...] = 3
    assert v2["__xarray_dataarray_variable__"][...].tolist() == [3, 3]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("entry", ["../evil", "a/../../evil", "/abs", "a\\b", "", "a//b"])
def test_consolidated_entries_leaving_the_group(entry: str, zarr_format: int) -> None:
    store = MemoryStore()
    group = zarrdask.create_group(store, zarr_format=zarr_format)
    group.create_array("a", shape=(2,), dtype="i1", chunks=(1,))
    zarrdask.consolidate_metadata(store)
    if zarr_format == 3:
        doc = json.loads(store.get("zarr.json"))
        entries = doc["consolidated_metadata"]["metadata"]
        entries[entry] = entries["a"]
        store.set("zarr.json", json.dumps(doc).encode())
    else:
        doc = json.loads(store.get(".zmetadata"))
        doc["metadata"][f"{entry}/.zarray"] = doc["metadata"]["a/.zarray"]
        store.set(".zmetadata", json.dumps(doc).encode())
    with pytest.raises(MetadataError) as info:
        zarrdask.open_group(store)
    assert "not a path below the group" in str(info.value) or "empty path" in str(info.value)
    assert zarrdask.open_group(store, use_consolidated=False)["a"].shape == (2,)


def test_key_segments_are_checked_as_split_segments() -> None:
    """normalize_key's substring tests refuse exactly the keys with an empty, '.' or '..'
    segment (every key of up to 7 characters of 'a', '.', '/'), with the one message."""
    import itertools

    from zarrdask.storage.base import join_path, normalize_key

    for length in range(1, 8):
        for chars in itertools.product("a./", repeat=length):
            key = "".join(chars)
            bad = key.startswith("/") or any(part in ("", ".", "..") for part in key.split("/"))
            if bad:
                with pytest.raises(InvalidKeyError, match="absolute|segment"):
                    normalize_key(key)
            else:
                assert normalize_key(key) == key
    assert join_path("", "/a/", "b", "//", "c/") == "a/b/c" and join_path() == join_path("", "/") == ""


@pytest.mark.parametrize("call", [
    lambda p: zarrdask.open_array(p), lambda p: zarrdask.open_group(p, mode="r"),
    lambda p: zarrdask.create_array(p, shape=(1,), dtype="i1"), lambda p: zarrdask.consolidate_metadata(p),
    lambda p: zarrdask.from_zarr(p), lambda p: zarrdask.verify(p),
])
@pytest.mark.parametrize("path", ["\x00", "a\x00b.zarr", "file:///tmp/a\x00b"])
def test_a_nul_in_a_local_path_is_named(call, path):
    """No file system takes a NUL in a name; every os call would raise a bare ValueError."""
    with pytest.raises(InvalidStoreError, match=r"contains a NUL character .* pass the path without it"):
        call(path)
