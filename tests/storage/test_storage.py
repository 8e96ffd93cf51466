"""Store conformance tests run against every backend, plus backend-specific and coalescing tests."""

from __future__ import annotations

import os
import pickle
import re
import threading
import uuid
import zipfile

import numpy as np
import pytest
from _s3 import s3_storage_options
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.errors import ContainsNodeError, InvalidKeyError, InvalidStoreError, ReadOnlyError, StoreError
from zarrdask.storage import (
    ByteRange,
    FsspecStore,
    LocalStore,
    MemoryStore,
    PrefixedStore,
    ReadOnlyStore,
    Store,
    SuffixRange,
    ZarrPythonStore,
    ZipStore,
    coalesce_ranges,
    get_storage_transformer,
    open_store,
    register_storage_transformer,
    split_coalesced,
)
from zarrdask.storage.link import MAX_REACH_BYTES, MIN_REACH_BYTES
from zarrdask.storage.mapping import MappingStore
from zarrdask.storage.transformers import WrapperStore
from zarrdask.storage.write_behind import WriteBehindStore

DATA = {
    "zarr.json": b'{"zarr_format": 3}',
    "a/b/c": bytes(range(100)),
    "a/b/d": b"xyz",
    "a/e": b"",
    "ab/x": b"sibling",
    "f/g/h/i": b"deep",
}

BAD_KEYS = ["../x", "/abs", "a//b", "a/./b", "a/../b", "a/", "C:x", "a\\b"]


def _read_all(store: Store) -> dict[str, bytes | None]:
    return {k: store.get(k) for k in store.list_prefix("")}


class ReadableStoreTests:
    """Conformance tests of the read side. Subclasses provide an ``empty_store`` fixture
    (writable, empty) or override ``store`` (already populated with DATA)."""

    expect_local = False  # Store.is_local
    expect_guard: str | None = None  # Store.guard
    expect_held_in: str | None = None  # Store.held_in
    expect_deletes = True  # Store.supports_deletes
    expect_cached = True  # Store.identity() names the contents (the decoded-chunk cache trusts it)
    expect_files = False  # Store.file_of gives local files
    expect_dirs = False  # Store.holds_under answers without a request or a scan of the keys
    expect_reach = False  # Store.reach() measured from the requests (remote stores), else 0
    expect_versions = False  # Store.get_ranges_versioned tells versions (local files)

    @pytest.fixture
    def store(self, empty_store: Store) -> Store:
        empty_store.set_many(DATA)
        return empty_store

    # -- reads -----------------------------------------------------------------
    def test_get(self, store: Store) -> None:
        for key, value in DATA.items():
            got = store.get(key)
            assert got == value and isinstance(got, bytes)
        for missing in ["nope", "a", "a/b", "a/b/c/d", "zarr"]:
            assert store.get(missing) is None

    def test_get_many(self, store: Store) -> None:
        keys = ["a/b/d", "nope", "zarr.json", "a/e", "a"]
        assert store.get_many(keys) == [DATA.get(k) for k in keys]
        assert store.get_many([]) == []

    def test_get_ranges(self, store: Store) -> None:
        c = DATA["a/b/c"]
        requests = [
            ("a/b/c", ByteRange(10, 5)),
            ("a/b/d", ByteRange(0, None)),
            ("a/b/c", SuffixRange(7)),
            ("nope", ByteRange(0, 4)),
            ("a/b/c", ByteRange(95, 20)),  # runs past the end
            ("a/b/c", ByteRange(150, 5)),  # starts past the end
            ("a/b/c", ByteRange(150)),
            ("a/b/c", SuffixRange(500)),  # longer than the value
            ("a/b/c", ByteRange(3)),
            ("a/e", SuffixRange(3)),  # empty value
            ("a/e", ByteRange(0, 4)),
            ("a/b/c", ByteRange(5, 0)),
            ("nope", SuffixRange(0)),
            ("a", ByteRange(0, 2)),  # a "directory"
            ("a/b/c", ByteRange(0, 100)),
        ]
        expected = [c[10:15], b"xyz", c[-7:], None, c[95:], b"", b"", c, c[3:], b"", b"", b"", None, None, c]
        assert store.get_ranges(requests) == expected
        assert store.get_ranges([]) == []

    def test_get_ranges_versioned(self, store: Store) -> None:
        requests = [("a/b/c", ByteRange(10, 5)), ("nope", ByteRange(0, 4)), ("a/b/d", SuffixRange(2)),
                    ("a/b/c", ByteRange(5, 0)), ("a/e", ByteRange(0))]
        got = store.get_ranges_versioned(requests)
        assert got.values == store.get_ranges(requests)
        assert store.get_ranges_versioned([]) == ([], [])
        with pytest.raises(InvalidKeyError):
            store.get_ranges_versioned([("../x", ByteRange(0))])
        if not self.expect_versions:
            assert got.versions == [None] * len(requests)
            return
        c, nope, d, c_again, e = got.versions
        assert nope is None and c is not None and c == c_again and len({c, d, e}) == 3
        assert store.get_ranges_versioned(requests).versions == got.versions  # (nothing changed)
        if store.read_only:
            return
        store.set("a/b/c", bytes(range(1, 101)))
        after = store.get_ranges_versioned(requests).versions
        assert after[0] != c and after[0] == after[3] and after[2] == d and after[4] == e
        store.delete("a/b/d")
        assert store.get_ranges_versioned([("a/b/d", ByteRange(0))]).versions == [None]

    def test_get_then(self, store: Store) -> None:
        c, d = DATA["a/b/c"], DATA["a/b/d"]
        seen = []

        def then(i: int, first: bytes | None, version: object) -> list:
            seen.append((i, first))
            return {0: [ByteRange(0, 3), SuffixRange(2)], 2: [ByteRange(1), ByteRange(5, 0)]}.get(i, [])

        requests = [("a/b/c", ByteRange(10, 5)), ("nope", ByteRange(0, 4)), ("a/b/d", None), ("a/e", SuffixRange(2)),
                    ("a", ByteRange(0, 2))]
        got = store.get_then(requests, then)
        assert sorted(seen) == [(0, c[10:15]), (2, None), (3, b"")]  # (not for the absent keys)
        assert [r.first for r in got] == [c[10:15], None, None, b"", None]
        assert [r.values for r in got] == [[c[:3], c[-2:]], [], [d[1:], b""], [], []]
        assert not any(r.changed for r in got)
        versions = [r.version for r in got]
        assert versions[1] is None and versions[4] is None
        if self.expect_versions:
            assert versions[:4:2] == store.get_ranges_versioned([("a/b/c", ByteRange(0)), ("a/b/d", ByteRange(0))]).versions
        else:
            assert versions == [None] * len(requests)
        assert store.get_then([], then) == []
        with pytest.raises(InvalidKeyError):
            store.get_then([("../x", None)], then)
        if not self.expect_versions or store.read_only:
            return

        def rewriting(i: int, first: bytes | None, version: object) -> list:
            store.set("a/b/c", bytes(range(1, 101)))  # (another writer, between the two steps)
            return [ByteRange(0, 3)]

        (read,) = store.get_then([("a/b/c", ByteRange(0, 2))], rewriting)
        assert read.changed and read.first == c[:2]

    def test_iter_ranges(self, store: Store) -> None:
        requests = [("a/b/c", ByteRange(10, 5)), ("nope", ByteRange(0)), ("a/b/d", SuffixRange(2)),
                    ("a/e", ByteRange(0)), ("a/b/c", ByteRange(5, 0))]
        arrived = list(store.iter_ranges(requests))
        assert sorted(i for i, _ in arrived) == list(range(len(requests)))  # each once, in any order
        assert dict(arrived) == dict(enumerate(store.get_ranges(requests)))
        assert list(store.iter_ranges([])) == []
        with pytest.raises(InvalidKeyError):
            store.iter_ranges([("../x", ByteRange(0))])

    def test_exists(self, store: Store) -> None:
        assert all(store.exists(k) for k in DATA)
        assert not any(store.exists(k) for k in ["nope", "a", "a/b", "zarr"])

    def test_size(self, store: Store) -> None:
        assert all(store.size(k) == len(v) for k, v in DATA.items())
        assert all(store.size(k) is None for k in ["nope", "a", "a/b", "zarr"])

    def test_list_prefix(self, store: Store) -> None:
        assert sorted(store.list_prefix("")) == sorted(DATA)
        assert sorted(store.list_prefix("a")) == ["a/b/c", "a/b/d", "a/e"]
        assert sorted(store.list_prefix("a/")) == ["a/b/c", "a/b/d", "a/e"]
        assert sorted(store.list_prefix("a/b")) == ["a/b/c", "a/b/d"]
        assert sorted(store.list_prefix("f/g")) == ["f/g/h/i"]
        for nothing in ["nope", "a/b/c", "zarr"]:
            assert list(store.list_prefix(nothing)) == []

    def test_list_sizes(self, store: Store) -> None:
        """The listing of ``list_prefix``, each key with its value's size."""
        for prefix in ["", "a", "a/", "a/b", "f/g", "nope", "a/b/c", "zarr"]:
            got = list(store.list_sizes(prefix))
            assert sorted(got) == sorted((k, len(DATA[k])) for k in store.list_prefix(prefix)), prefix
        with pytest.raises(InvalidKeyError):
            list(store.list_sizes("../x"))

    def test_list_dir(self, store: Store) -> None:
        assert store.list_dir("") == (["zarr.json"], ["a", "ab", "f"])
        assert store.list_dir("a") == (["e"], ["b"])
        assert store.list_dir("a/b/") == (["c", "d"], [])
        assert store.list_dir("f/g") == ([], ["h"])
        assert store.list_dir("nope") == ([], [])
        assert store.list_dir("a/b/c") == ([], [])

    def test_invalid_keys(self, store: Store) -> None:
        for key in BAD_KEYS:
            for call in (
                lambda: store.get(key),
                lambda: store.get_ranges([(key, ByteRange(0, 1))]),
                lambda: store.exists(key),
                lambda: store.set(key, b"x"),
                lambda: store.delete(key),
            ):
                with pytest.raises((InvalidKeyError, ReadOnlyError)):
                    call()
        for key in ["../x", "a/../b"]:
            with pytest.raises(InvalidKeyError):
                store.get(key)
            with pytest.raises(InvalidKeyError):
                list(store.list_prefix(key))

    def test_pickle_round_trip(self, store: Store) -> None:
        clone = pickle.loads(pickle.dumps(store))
        assert clone == store and hash(clone) == hash(store)
        assert clone.url == store.url and clone.read_only == store.read_only
        assert clone.get("a/b/d") == b"xyz"
        assert len(pickle.dumps(store)) < 2000  # arguments, never contents

    def test_is_local(self, store: Store) -> None:
        """Stores in this process's memory or on local disk say so (readers then fetch from
        several threads instead of batching); wrappers say what their inner store says."""
        assert store.is_local is self.expect_local

    def test_reach(self, store: Store) -> None:
        """What one request may bring beyond what a reader needs: what the link sends in a
        round trip on remote stores (64 KiB before anything is measured, 64 MiB at most),
        nothing where a request costs next to nothing; wrappers say what their inner says."""
        reach = store.reach()
        if self.expect_reach:
            assert MIN_REACH_BYTES <= reach <= MAX_REACH_BYTES
        else:
            assert reach == 0
        assert open_store(store, mode="r").reach() == reach

    def test_guard(self, store: Store) -> None:
        """How the store guards a read-modify-write; wrappers say what their inner says."""
        assert store.guard == self.expect_guard
        assert open_store(store, mode="r").guard == store.guard

    def test_held_in(self, store: Store) -> None:
        """Where the contents live when the store travels (the Dask writers refuse what a
        worker process would not share); wrappers say what their inner says."""
        assert store.held_in == self.expect_held_in
        assert open_store(store, mode="r").held_in == store.held_in

    def test_supports_deletes(self, store: Store) -> None:
        """Whether keys can be deleted (what a write keeps for a while, its record, is kept
        only where it can be); wrappers say what their inner says."""
        assert store.supports_deletes is self.expect_deletes
        assert open_store(store, mode="r").supports_deletes is store.supports_deletes

    def test_supports_writes(self, store: Store) -> None:
        """Whether the store can be written when opened for writing (every store here; an
        HTTP server cannot, see test_open_store_dispatch); wrappers say what their inner says."""
        assert store.supports_writes is True
        assert open_store(store, mode="r").supports_writes is store.supports_writes

    def test_cache_identity(self, store: Store) -> None:
        """What names the contents for the decoded-chunk cache: hashable, the same for an
        equal store, and not another store's; None where the URL may not name them."""
        ident = store.identity()
        if not self.expect_cached:
            assert ident is None
            return
        assert ident is not None and hash(ident) == hash(pickle.loads(pickle.dumps(store)).identity())
        assert ident != MemoryStore(f"other-{uuid.uuid4().hex}").identity()
        assert ident != PrefixedStore(store, "elsewhere").identity()

    def test_file_of(self, store: Store) -> None:
        """The local file of a key, where keys are files here (else None)."""
        path = store.file_of("a/b/d")
        if not self.expect_files:
            assert path is None
            return
        assert path is not None and open(path, "rb").read() == b"xyz"
        assert store.file_of("not/there") is not None and not os.path.exists(store.file_of("not/there"))

    def test_holds_under(self, store: Store) -> None:
        """Whether a directory holds keys, where the store can tell without a scan (else None)."""
        answers = [store.holds_under(p) for p in ("a", "a/b", "a/b/d", "not", "not/there")]
        if not self.expect_dirs:
            assert answers == [None] * 5
            return
        assert answers == [True, True, False, False, False]
        if isinstance(self, StoreTests):
            store.set("n/m/k.json", b"{}")
            assert store.holds_under("n") and store.holds_under("n/m")
            store.delete("n/m/k.json")
            assert store.holds_under("n") is False and store.holds_under("n/m") is False

    def test_identity(self, store: Store) -> None:
        assert isinstance(store.url, str) and store.url
        assert store.url in repr(store)
        assert store.__dask_tokenize__() == pickle.loads(pickle.dumps(store)).__dask_tokenize__()

    def test_read_only(self, store: Store) -> None:
        ro = open_store(store, mode="r")
        assert ro.read_only and ro.get("a/b/d") == b"xyz"
        assert ro.get_ranges([("a/b/c", SuffixRange(1))]) == [b"c"]
        for call in (
            lambda: ro.set("k", b"v"),
            lambda: ro.set_many({"k": b"v"}),
            lambda: ro.delete("a/b/d"),
            lambda: ro.delete_many(["a/b/d"]),
            lambda: ro.delete_prefix("a"),
        ):
            with pytest.raises(ReadOnlyError):
                call()
        assert ro.get("a/b/d") == b"xyz"
        assert pickle.loads(pickle.dumps(ro)).read_only


class StoreTests(ReadableStoreTests):
    """Conformance tests of a writable store (reads, then writes)."""

    race_payload = 200_000  # bytes per value in the concurrent-write test
    race_reads = 50

    # -- writes ----------------------------------------------------------------
    def test_set_overwrite_and_buffers(self, store: Store) -> None:
        store.set("a/b/d", b"new")
        store.set("n/m", bytearray(b"ba"))
        store.set("n/v", memoryview(b"0123456")[2:5])
        assert store.get("a/b/d") == b"new"
        assert store.get("n/m") == b"ba"
        assert store.get("n/v") == b"234"

    def test_set_parts(self, store: Store) -> None:
        """A value given as a list of parts is stored as their concatenation."""
        store.set("p/q", [b"ab", memoryview(b"cd"), bytearray(b"e")])
        store.set_many({"p/r": [b"x", b"y"], "p/s": b"z"})
        assert store.get_many(["p/q", "p/r", "p/s"]) == [b"abcde", b"xy", b"z"]
        assert store.size("p/q") == 5

    def test_set_many(self, store: Store) -> None:
        items = {f"s/{i}/{j}": bytes([i, j]) * 3 for i in range(3) for j in range(4)}
        store.set_many(items)
        assert store.get_many(list(items)) == list(items.values())
        store.set_many({})

    def test_delete(self, store: Store) -> None:
        store.delete("a/b/d")
        store.delete("a/b/d")  # missing is fine
        store.delete("never/was")
        assert store.get("a/b/d") is None and not store.exists("a/b/d")
        assert sorted(store.list_prefix("a")) == ["a/b/c", "a/e"]
        assert store.list_dir("a/b") == (["c"], [])
        store.delete_many(["a/b/c", "nope", "zarr.json"])
        assert store.get_many(["a/b/c", "zarr.json", "a/e"]) == [None, None, b""]

    def test_delete_prefix(self, store: Store) -> None:
        store.delete_prefix("a")
        assert sorted(store.list_prefix("")) == ["ab/x", "f/g/h/i", "zarr.json"]
        store.delete_prefix("")
        assert list(store.list_prefix("")) == []
        assert store.list_dir("")[0] == []

    def test_update(self, store: Store) -> None:
        """An update reads its keys and commits new values (None deletes); on a guarded store
        threads bumping one counter by read-modify-write lose no bump (a commit that finds
        the key changed stores nothing and says so; the bump is then read and merged again)."""
        with store.update(["a/b/d", "u/new", "a/e"]) as update:
            assert update.values == {"a/b/d": b"xyz", "u/new": None, "a/e": b""}
            assert update.commit({"a/b/d": b"changed", "u/new": [b"n", b"ew"], "a/e": None}) == set()
        assert store.get_many(["a/b/d", "u/new", "a/e"]) == [b"changed", b"new", None]
        with store.update(["u/new"]):
            pass  # nothing committed: nothing changes, nothing left behind
        assert store.get("u/new") == b"new" and sorted(store.list_prefix("u")) == ["u/new"]
        if store.guard not in ("lock", "compare"):
            return
        bumps, threads = 15, 4

        def bump() -> None:
            for _ in range(bumps):
                while True:
                    with store.update(["count"]) as u:
                        value = int(u.values["count"] or b"0")
                        if not u.commit({"count": str(value + 1).encode()}):
                            break

        workers = [threading.Thread(target=bump) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert store.get("count") == str(bumps * threads).encode()
        local_root = getattr(store, "root", None)
        if isinstance(local_root, str) and os.path.isdir(local_root):
            assert not [n for _, _, files in os.walk(local_root) for n in files if n.endswith(".tmp")]

    def test_no_leftover_temp_files(self, store: Store) -> None:
        for i in range(5):
            store.set("t/k", bytes([i]) * 10)
        store.set_many({"t/k": b"last", "t/j": b"j"})
        assert sorted(store.list_prefix("t")) == ["t/j", "t/k"]
        assert store.list_dir("t") == (["j", "k"], [])
        local_root = getattr(store, "root", None)
        if local_root is not None:
            names = [n for _, _, files in os.walk(local_root) for n in files]
            assert not [n for n in names if n.endswith(".tmp")]

    def test_concurrent_set_is_atomic(self, store: Store) -> None:
        values = [bytes([i]) * self.race_payload for i in range(4)]
        store.set("race", values[0])
        stop = threading.Event()
        seen: list[bytes | None] = []

        def writer(v: bytes) -> None:
            while not stop.is_set():
                store.set("race", v)

        threads = [threading.Thread(target=writer, args=(v,)) for v in values]
        for t in threads:
            t.start()
        try:
            for _ in range(self.race_reads):
                seen.append(store.get("race"))
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert all(v in values for v in seen)
        assert sorted(store.list_prefix("")) == sorted([*DATA, "race"])


class TestLocalStore(StoreTests):
    expect_versions = True
    expect_dirs = True
    expect_files = True
    expect_local = True
    expect_guard = "lock"

    @pytest.fixture
    def empty_store(self, tmp_path) -> Store:
        return LocalStore(tmp_path / "root")

    def test_layout_and_url(self, store: LocalStore, tmp_path) -> None:
        assert (tmp_path / "root" / "a" / "b" / "c").read_bytes() == DATA["a/b/c"]
        assert store.url == "file://" + str(tmp_path / "root")
        assert store == LocalStore(str(tmp_path / "root")) != LocalStore(tmp_path / "root", read_only=True)

    def test_temp_files_are_not_keys(self, store: LocalStore, tmp_path) -> None:
        (tmp_path / "root" / "a" / f".e.{uuid.uuid4().hex}.tmp").write_bytes(b"partial")
        assert sorted(store.list_prefix("a")) == ["a/b/c", "a/b/d", "a/e"]
        assert store.list_dir("a") == (["e"], ["b"])

    def test_delete_prunes_empty_directories(self, store: LocalStore, tmp_path) -> None:
        store.delete("f/g/h/i")
        assert not (tmp_path / "root" / "f").exists()
        store.delete_prefix("a")
        assert store.list_dir("") == (["zarr.json"], ["ab"])
        assert (tmp_path / "root").is_dir()

    def test_many_ranges_one_key(self, store: LocalStore) -> None:
        c = DATA["a/b/c"]
        requests = [("a/b/c", ByteRange(i, 3)) for i in range(0, 100, 7)] + [("a/b/d", SuffixRange(2))]
        assert store.get_ranges(requests) == [c[i : i + 3] for i in range(0, 100, 7)] + [b"yz"]

    def test_write_over_directory_fails(self, store: LocalStore) -> None:
        with pytest.raises(StoreError, match="'a/b'"):
            store.set("a/b", b"x")
        with pytest.raises(StoreError, match="a/b/c/z"):
            store.set("a/b/c/z", b"x")

    def test_read_only_root_need_not_exist(self, tmp_path) -> None:
        store = LocalStore(tmp_path / "missing", read_only=True)
        assert store.get("k") is None and list(store.list_prefix("")) == [] and store.list_dir("") == ([], [])


class TestMemoryStore(StoreTests):
    expect_dirs = True
    expect_held_in = "process"
    expect_local = True
    expect_guard = "compare"

    @pytest.fixture
    def empty_store(self) -> Store:
        return MemoryStore(f"test-{uuid.uuid4().hex}")

    def test_named_stores_share_content(self) -> None:
        name = f"shared-{uuid.uuid4().hex}"
        MemoryStore(name).set("k", b"v")
        assert MemoryStore(name).get("k") == b"v"
        assert open_store(f"memory://{name}").get("k") == b"v"
        assert MemoryStore().get("k") is None

    def test_anonymous_store_pickles_within_process(self) -> None:
        store = MemoryStore()
        store.set("k", b"v")
        clone = pickle.loads(pickle.dumps(store))
        assert clone == store and clone.get("k") == b"v"
        assert pickle.dumps(store).count(b"v") <= 1  # no contents


class TestFsspecMemory(StoreTests):
    expect_held_in = "process"
    expect_guard = "compare"

    @pytest.fixture
    def empty_store(self) -> Store:
        return FsspecStore(f"memory://zarrdask-{uuid.uuid4().hex}")

    def test_sizes_come_with_the_listing(self, empty_store: Store, monkeypatch) -> None:
        """An array's stored bytes (``nbytes_stored``, ``info_complete``) and a copy's plan
        take sizes from one listing: no request per key (on S3 1,000 keys took 5.7 s of
        HEADs against 0.2 s listed, on a loopback moto server)."""
        import zarrdask

        store = empty_store
        a = zarrdask.create_array(store, path="arr", shape=(6, 4), chunks=(2, 4), dtype="i4")
        a[...] = 1
        fs = store.fs  # type: ignore[attr-defined]
        for name in ("size", "info", "cat_file"):
            monkeypatch.setattr(fs, name, lambda *args, **kw: pytest.fail(f"a request per key ({name})"))
        assert a.nbytes_stored() == sum(n for _, n in store.list_sizes("arr")) > 0
        assert "3 of 3" in str(a.info_complete())

    def test_a_mapper_of_a_nested_path_lists_and_verifies(self) -> None:
        """An FSMap of ``memory://a/b``: the filesystem lists ``/a/b/...``, the path was
        given without the ``/``. Its keys listed (``verify`` found nothing stored there)."""
        import fsspec

        import zarrdask

        mapper = fsspec.get_mapper(f"memory://zarrdask-{uuid.uuid4().hex}/a.zarr")
        zarrdask.create_array(mapper, shape=(4,), chunks=(2,), dtype="i4")[...] = 1
        store = FsspecStore(mapper.fs, path=mapper.root.lstrip("/"))
        assert sorted(store.list_prefix("")) == ["c/0", "c/1", "zarr.json"]
        report = zarrdask.verify(mapper)
        assert report.ok and report.units_checked == 2

    def test_from_filesystem_and_path(self) -> None:
        import fsspec

        fs = fsspec.filesystem("memory")
        root = f"/zarrdask-{uuid.uuid4().hex}"
        store = FsspecStore(fs, path=root + "/sub")
        store.set("k", b"v")
        assert fs.cat_file(root + "/sub/k") == b"v"
        assert FsspecStore(f"memory://{root}", path="sub").get("k") == b"v"
        assert pickle.loads(pickle.dumps(store)).get("k") == b"v"
        with pytest.raises(ValueError):
            FsspecStore(fs, storage_options={"x": 1})


class TestFsspecLocal(StoreTests):
    expect_versions = True
    expect_dirs = True
    expect_files = True
    expect_guard = "lock"

    @pytest.fixture
    def empty_store(self, tmp_path) -> Store:
        return FsspecStore(f"file://{tmp_path}/root")

    def test_url(self, store: FsspecStore, tmp_path) -> None:
        assert store.url == f"file://{tmp_path}/root"
        assert (tmp_path / "root" / "a" / "b" / "d").read_bytes() == b"xyz"


class TestPrefixedStore(StoreTests):
    expect_dirs = True
    expect_held_in = "process"
    expect_local = True
    expect_guard = "compare"

    @pytest.fixture
    def empty_store(self) -> Store:
        inner = MemoryStore(f"test-{uuid.uuid4().hex}")
        inner.set("outside", b"o")
        return PrefixedStore(inner, "pre/fix")

    def test_keys_land_below_prefix(self, store: PrefixedStore) -> None:
        assert store.inner.get("pre/fix/a/b/d") == b"xyz"
        assert store.url.endswith("/pre/fix")
        assert "outside" not in list(store.list_prefix(""))


class TestPrefixedLocalStore(StoreTests):
    expect_versions = True
    expect_dirs = True
    expect_files = True
    expect_local = True
    expect_guard = "lock"

    @pytest.fixture
    def empty_store(self, tmp_path) -> Store:
        inner = LocalStore(tmp_path / "root")
        inner.set("outside", b"o")
        return PrefixedStore(inner, "deep/er")

    def test_sizes_and_listing_are_below_prefix(self, store: PrefixedStore) -> None:
        assert store.inner.size("deep/er/a/b/d") == 3 and store.size("a/b/d") == 3
        assert store.size("outside") is None
        assert "outside" not in list(store.list_prefix(""))


class TestWrapperStore(StoreTests):
    """The plain forwarding wrapper (the base of storage transformers)."""
    expect_dirs = True
    expect_held_in = "process"

    expect_local = True
    expect_guard = "compare"

    @pytest.fixture
    def empty_store(self) -> Store:
        return WrapperStore(MemoryStore(f"test-{uuid.uuid4().hex}"))


class TestMappingStore(StoreTests):
    """A plain dict as a store (zarr-python 3 takes one; dask's tests pass ``{}``)."""
    expect_held_in = "process"
    expect_cached = False

    expect_local = True
    expect_guard = "compare"

    @pytest.fixture
    def empty_store(self) -> Store:
        return open_store({}, mode="a")

    def test_the_dict_holds_the_bytes(self, store: Store) -> None:
        assert isinstance(store, MappingStore) and store.mapping["a/b/d"] == b"xyz"

    def test_values_are_any_buffer(self) -> None:
        store = open_store({"k": bytearray(b"ab"), "n": np.frombuffer(b"cd", "u1")}, mode="r")
        assert (store.get("k"), store.get("n")) == (b"ab", b"cd")

    @pytest.mark.parametrize(("mapping", "named"), [
        ({"c/0": 5}, "key 'c/0' is of type int, not bytes"),  # (bytes(5) would be five zero bytes)
        ({"zarr.json": "{}"}, "key 'zarr.json' is of type str, not bytes"),
    ])
    def test_a_value_that_is_not_bytes_is_refused_naming_its_key(self, mapping: dict, named: str) -> None:
        key = next(iter(mapping))
        with pytest.raises(StoreError, match=re.escape(named)):
            open_store(mapping, mode="r").get(key)

    def test_a_key_that_is_not_a_str_is_refused_naming_it(self) -> None:
        with pytest.raises(StoreError, match=re.escape("has the key 1 (int), not a str")):
            list(open_store({1: b"x", "zarr.json": b"{}"}, mode="r").list_prefix(""))


class TestDbmStore(StoreTests):
    """A ``dbm`` database (bytes keys) as a store, as zarr-python 2 took any MutableMapping."""
    expect_held_in = "process"
    expect_cached = False

    expect_local = True
    expect_guard = "compare"
    race_payload = 20_000

    @pytest.fixture
    def empty_store(self, tmp_path) -> Store:
        import dbm

        db = dbm.open(str(tmp_path / "db"), "c")
        yield open_store(db, mode="a")
        db.close()


class TestReadOnlyWrapper(ReadableStoreTests):
    expect_dirs = True
    expect_held_in = "process"
    expect_local = True
    expect_guard = "compare"

    @pytest.fixture
    def store(self) -> Store:
        inner = MemoryStore(f"test-{uuid.uuid4().hex}")
        inner.set_many(DATA)
        return ReadOnlyStore(inner)


class TestZipStore(ReadableStoreTests):
    """A zip is written once (mode "w", then closed) and read afterwards."""

    expect_guard = None
    expect_deletes = False

    @pytest.fixture
    def store(self, tmp_path) -> Store:
        path = tmp_path / "data.zip"
        with open_store(path, mode="w") as writer:
            assert isinstance(writer, ZipStore) and not writer.read_only
            writer.set_many(DATA)
            assert writer.exists("a/b/d") and sorted(writer.list_prefix("a")) == ["a/b/c", "a/b/d", "a/e"]
        assert zipfile.ZipFile(path).testzip() is None
        return open_store(path)

    def test_url_forms(self, store: ZipStore, tmp_path) -> None:
        path = str(tmp_path / "data.zip")
        assert store.read_only and store.url == f"zip://::{path}"
        assert open_store(f"zip://{path}").get("a/b/d") == b"xyz"
        assert open_store(f"zip://a/b::{path}").get("d") == b"xyz"
        assert open_store(f"file://{path}").get("a/e") == b""

    def test_write_mode_rules(self, store: ZipStore, tmp_path) -> None:
        path = tmp_path / "data.zip"
        with pytest.raises(ContainsNodeError):
            open_store(path, mode="w-")
        for mode in ("a", "r+"):
            with pytest.raises(StoreError, match="cannot be updated in place"):
                open_store(path, mode=mode)
        fresh = open_store(tmp_path / "new.zip", mode="a")
        with pytest.raises(StoreError, match="cannot be pickled"):
            pickle.dumps(fresh)
        fresh.set("k", b"v")
        fresh.close()
        fresh.close()
        assert ZipStore(tmp_path / "new.zip").get("k") == b"v"

    def test_unclosed_zip_is_finalised_on_collection(self, tmp_path) -> None:
        writer = ZipStore(tmp_path / "gc.zip", mode="w")
        writer.set("k", b"v")
        del writer
        assert ZipStore(tmp_path / "gc.zip").get("k") == b"v"

    def test_missing_archive(self, tmp_path) -> None:
        with pytest.raises(StoreError, match="missing.zip"):
            open_store(tmp_path / "missing.zip")


@pytest.mark.s3
class TestS3Store(StoreTests):
    expect_versions = True
    expect_reach = True
    expect_guard = "compare"
    race_payload = 20_000  # moto is slow: smaller values, fewer reads
    race_reads = 10

    @pytest.fixture
    def empty_store(self, s3_url: str, s3_endpoint: str) -> Store:  # noqa: F811
        store = open_store(s3_url, mode="w", storage_options=s3_storage_options(s3_endpoint))
        assert isinstance(store, FsspecStore)
        return store

    def test_url_and_options(self, store: FsspecStore, s3_url: str) -> None:  # noqa: F811
        assert store.url == s3_url
        assert store.storage_options["max_concurrency"] == 1

    def test_listing_sees_writes_by_another_instance(self, store: FsspecStore) -> None:
        assert store.list_dir("a/b") == (["c", "d"], [])
        import s3fs

        fresh_fs = s3fs.S3FileSystem(**store.storage_options, skip_instance_cache=True)
        FsspecStore(fresh_fs, path=store.root).set("a/b/z", b"z")
        assert store.list_dir("a/b") == (["c", "d", "z"], [])
        assert sorted(store.list_prefix("a/b")) == ["a/b/c", "a/b/d", "a/b/z"]


class TestZarrPythonMemoryStore(StoreTests):
    """zarr-python's own MemoryStore, accepted as a store (tests/storage/test_zarr_python_stores.py
    runs whole arrays, Dask and xarray through it)."""
    expect_held_in = "copied"
    expect_cached = False

    expect_guard = "compare"

    @pytest.fixture
    def empty_store(self) -> Store:
        import zarr.storage

        store = open_store(zarr.storage.MemoryStore(), mode="w")
        assert isinstance(store, ZarrPythonStore)
        return store

    def test_pickle_round_trip(self, store: Store) -> None:
        """zarr-python's MemoryStore pickles its contents (its own choice): a clone is a copy."""
        clone = pickle.loads(pickle.dumps(store))
        assert clone.get("a/b/d") == b"xyz" and clone.read_only == store.read_only
        clone.set("a/b/d", b"new")
        assert store.get("a/b/d") == b"xyz"

    def test_identity(self, store: Store) -> None:
        assert store.url.startswith("memory://") and store.url in repr(store)
        assert store == open_store(store.inner, mode="w") and hash(store) == hash(open_store(store.inner, mode="w"))


class TestZarrPythonLocalStore(StoreTests):
    expect_cached = False
    expect_guard = "lock"  # (writes go through a LocalStore on its directory)

    @pytest.fixture
    def empty_store(self, tmp_path) -> Store:
        import zarr.storage

        return open_store(zarr.storage.LocalStore(tmp_path / "zp"), mode="w")

    def test_read_only_view_and_pickle(self, store: Store, tmp_path) -> None:
        view = open_store(store.inner, mode="r")
        assert view.read_only and view.get("a/b/d") == b"xyz"
        with pytest.raises(ReadOnlyError):
            view.set("x", b"1")
        assert pickle.loads(pickle.dumps(store)).get("a/b/d") == b"xyz"
        assert store.url == f"file://{tmp_path / 'zp'}"


class TestWriteBehindStore(StoreTests):
    """Held writes behave as written for every reader of the wrapper (tests/storage/test_remote.py
    counts the requests it saves)."""
    expect_dirs = True
    expect_held_in = "process"
    expect_cached = False  # (held writes)

    expect_local = True
    expect_guard = "compare"

    @pytest.fixture
    def empty_store(self) -> Store:
        return WriteBehindStore(MemoryStore(f"test-{uuid.uuid4().hex}"))

    def test_pickle_round_trip(self, store: WriteBehindStore) -> None:
        with pytest.raises(StoreError, match="held"):
            pickle.dumps(store)
        store.flush()
        clone = pickle.loads(pickle.dumps(store))
        assert clone == store.inner and clone.get("a/b/d") == b"xyz"

    def test_identity(self, store: WriteBehindStore) -> None:
        assert store.url == store.inner.url and store.url in repr(store)

    def test_holds_under(self, store: WriteBehindStore) -> None:
        """No answer while writes are held (they would need a scan); the inner store's after."""
        assert [store.holds_under(p) for p in ("a", "not")] == [None, None]
        store.flush()
        super().test_holds_under(store)

    def test_read_only(self, store: WriteBehindStore) -> None:
        store.flush()  # (the view is pickled at the end: nothing may be held)
        super().test_read_only(store)

    def test_flush_sends_metadata_before_chunks_and_then_passes_through(self) -> None:
        inner = MemoryStore(f"test-{uuid.uuid4().hex}")
        inner.set_many({"old/zarr.json": b"{}", "old/c/0": b"x", "keep": b"k"})
        store = WriteBehindStore(inner)
        store.delete_prefix("old")
        store.set_many({"new/zarr.json": b"{}", "new/c/0": b"1"})
        assert store.list_prefix("") and sorted(store.list_prefix("")) == ["keep", "new/c/0", "new/zarr.json"]
        assert sorted(inner.list_prefix("")) == ["keep", "old/c/0", "old/zarr.json"]  # nothing sent yet
        sent = []
        real = MemoryStore._set_many
        MemoryStore._set_many = lambda self, items: sent.append(sorted(items)) or real(self, items)
        try:
            store.flush()
        finally:
            MemoryStore._set_many = real
        assert sent == [["new/zarr.json"], ["new/c/0"]]
        assert sorted(inner.list_prefix("")) == ["keep", "new/c/0", "new/zarr.json"]
        store.set("later", b"l")
        assert inner.get("later") == b"l"

    def test_a_surveyed_prefix_answers_absent_keys_without_asking(self) -> None:
        inner = MemoryStore(f"test-{uuid.uuid4().hex}")
        inner.set("p/x", b"x")
        store = WriteBehindStore(inner)
        store.survey("p")
        asked = []
        real = MemoryStore._iter_ranges
        MemoryStore._iter_ranges = lambda self, reqs: asked.extend(k for k, _ in reqs) or real(self, reqs)
        try:
            assert store.get_many(["p/x", "p/y", "q"]) == [b"x", None, None]
        finally:
            MemoryStore._iter_ranges = real
        assert asked == ["p/x", "q"]


# -- the contract --------------------------------------------------------------------
#: every public member of Store, and the contract test that covers it
CONTRACT = {
    "get": "test_get", "get_ranges": "test_get_ranges", "iter_ranges": "test_iter_ranges", "get_many": "test_get_many", "exists": "test_exists",
    "size": "test_size", "list_prefix": "test_list_prefix", "list_sizes": "test_list_sizes",
    "list_dir": "test_list_dir",
    "set": "test_set_overwrite_and_buffers", "set_many": "test_set_many", "delete": "test_delete",
    "delete_many": "test_delete", "delete_prefix": "test_delete_prefix", "read_only": "test_read_only",
    "writes_parts": "test_set_parts", "is_local": "test_is_local", "url": "test_identity",
    "reach": "test_reach", "guard": "test_guard", "update": "test_update", "held_in": "test_held_in",
    "supports_deletes": "test_supports_deletes", "supports_writes": "test_supports_writes",
    "identity": "test_cache_identity", "file_of": "test_file_of",
    "holds_under": "test_holds_under", "get_ranges_versioned": "test_get_ranges_versioned",
    "get_then": "test_get_then",
}
STORE_CLASSES = [
    TestLocalStore, TestMemoryStore, TestFsspecMemory, TestFsspecLocal, TestPrefixedStore,
    TestPrefixedLocalStore, TestWrapperStore, TestMappingStore, TestDbmStore, TestReadOnlyWrapper, TestZipStore, TestS3Store,
    TestZarrPythonMemoryStore, TestZarrPythonLocalStore, TestWriteBehindStore,
]


def test_every_store_method_has_a_contract_test_on_every_store() -> None:
    public = {name for name in dir(Store) if not name.startswith("_")}
    assert public == set(CONTRACT), f"Store members without a contract test: {sorted(public - set(CONTRACT))}"
    for cls in STORE_CLASSES:
        writable = issubclass(cls, StoreTests)
        for name, test in CONTRACT.items():
            if not writable and test in vars(StoreTests):
                continue  # read-only stores: the write tests are the read_only test
            assert hasattr(cls, test), f"{cls.__name__} lacks {test} for Store.{name}"


# -- open_store dispatch ---------------------------------------------------------------
def test_open_store_dispatch(tmp_path) -> None:
    assert open_store(tmp_path) == LocalStore(tmp_path, read_only=True)
    assert open_store(str(tmp_path), mode="a") == LocalStore(tmp_path)
    assert open_store(f"file://{tmp_path}", mode="w") == LocalStore(tmp_path)
    assert isinstance(open_store(f"file://{tmp_path}", storage_options={"auto_mkdir": True}), FsspecStore)
    assert isinstance(open_store("memory://x"), MemoryStore) and open_store("memory://x").read_only
    assert isinstance(open_store("memory://x", storage_options={"skip_instance_cache": True}), FsspecStore)
    http = open_store("http://127.0.0.1:9/data", mode="a")
    assert isinstance(http, FsspecStore) and http.read_only and not http.supports_writes
    with pytest.raises(ValueError, match="mode"):
        open_store(tmp_path, mode="x")
    with pytest.raises(InvalidStoreError):
        open_store(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidStoreError, match="nosuchproto"):
        open_store("nosuchproto://x")


def test_open_store_passes_stores_through(tmp_path) -> None:
    local = LocalStore(tmp_path)
    assert open_store(local, mode="a") is local
    ro = open_store(local)
    assert type(ro) is LocalStore and ro.read_only and not local.read_only
    ro_mem = open_store(MemoryStore("m"))
    assert type(ro_mem) is MemoryStore and ro_mem.read_only
    wrapped = open_store(PrefixedStore(local, "p"))
    assert isinstance(wrapped, ReadOnlyStore) and wrapped.read_only
    already = LocalStore(tmp_path, read_only=True)
    assert open_store(already) is already
    with pytest.raises(ValueError):
        open_store(local, storage_options={"a": 1})


# -- storage transformers --------------------------------------------------------------
def test_storage_transformer_registry() -> None:
    assert get_storage_transformer("zarrdask-test-no-such-transformer") is None

    def factory(configuration: dict, store: Store) -> Store:
        return PrefixedStore(store, configuration["prefix"])

    register_storage_transformer("zarrdask-test-prefix", factory)
    assert get_storage_transformer("zarrdask-test-prefix") is factory
    inner = MemoryStore()
    wrapped = factory({"prefix": "p"}, inner)
    wrapped.set("k", b"v")
    assert inner.get("p/k") == b"v"
    assert wrapped == PrefixedStore(inner, "p") != PrefixedStore(inner, "q")


# -- coalescing ------------------------------------------------------------------------
def test_coalesce_examples() -> None:
    ranges = [(0, 10), (12, 20), (100, 110), (5, 8), (20, 20)]
    assert coalesce_ranges(ranges, max_gap=2) == [(0, 20, [0, 3, 1, 4]), (100, 110, [2])]
    assert coalesce_ranges(ranges, max_gap=0) == [(0, 10, [0, 3]), (12, 20, [1, 4]), (100, 110, [2])]
    assert coalesce_ranges(ranges, max_gap=1000, max_size=20) == [(0, 20, [0, 3, 1, 4]), (100, 110, [2])]
    assert coalesce_ranges([], max_gap=5) == []


ranges_strategy = st.lists(
    st.tuples(st.integers(0, 1000), st.integers(0, 120)).map(lambda t: (t[0], t[0] + t[1])), max_size=30
)


@settings(max_examples=300, deadline=None)
@given(ranges=ranges_strategy, max_gap=st.integers(0, 200), max_size=st.none() | st.integers(1, 400))
def test_coalesce_properties(ranges: list[tuple[int, int]], max_gap: int, max_size: int | None) -> None:
    merged = coalesce_ranges(ranges, max_gap, max_size)
    members = sorted(i for _, _, idx in merged for i in idx)
    assert members == list(range(len(ranges)))  # each input exactly once
    for start, end, idx in merged:
        assert start == min(ranges[i][0] for i in idx) and end == max(ranges[i][1] for i in idx)
        if max_size is not None and len(idx) > 1:
            assert end - start <= max_size
    for (s0, e0, idx0), (s1, e1, _) in zip(merged, merged[1:]):
        assert s0 <= s1
        # not merged: too far apart, or merging would exceed max_size
        assert s1 > e0 + max_gap or (max_size is not None and max(e0, e1) - s0 > max_size)

    data = os.urandom(800)  # shorter than some ranges: pieces come back short
    fetched = [data[s:e] for s, e, _ in merged]
    pieces = split_coalesced(ranges, merged, fetched)
    assert [bytes(p) for p in pieces] == [data[s:e] for s, e in ranges]
    assert all(isinstance(p, memoryview) for p in pieces)

    store = MemoryStore()
    store.set("shard", data)
    for key in ("shard", "missing"):  # as the sharded read does: one batched request per merged range
        merged = coalesce_ranges(ranges, max_gap, max_size)
        fetched = store.get_ranges([(key, ByteRange(s, e - s)) for s, e, _ in merged])
        got = split_coalesced(ranges, merged, fetched)
        expected = [data[s:e] for s, e in ranges] if key == "shard" else [None] * len(ranges)
        assert [None if p is None else bytes(p) for p in got] == expected


def test_split_is_zero_copy() -> None:
    buf = bytearray(b"0123456789")
    pieces = split_coalesced([(2, 4), (6, 9)], [(2, 9, [0, 1])], [memoryview(buf)[2:9]])
    buf[2] = ord("X")
    assert bytes(pieces[0]) == b"X3" and bytes(pieces[1]) == b"678"
