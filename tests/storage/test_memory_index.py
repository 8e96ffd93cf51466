"""MemoryStore's directory index (``_Bucket``) answers ``list_dir`` and ``holds_under`` as a
scan of every key would, whatever sets, deletes and conditional commits came before."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.storage import MemoryStore
from zarrdask.storage.base import split_listing

KEYS = st.lists(st.sampled_from(["a", "b", "zarr.json", ".zarrdask-writes"]), min_size=1, max_size=4).map("/".join)
PREFIXES = ["", "a", "b", "a/b", "a/a/a", "zarr.json", "b/.zarrdask-writes"]


@settings(derandomize=True, deadline=None, max_examples=300, database=None)
@given(st.lists(st.tuples(st.sampled_from(["set", "delete", "commit"]), KEYS), max_size=40))
def test_the_index_lists_as_a_scan_does(ops):
    store, keys = MemoryStore(), set()
    for op, key in ops:
        if op == "set":
            store.set(key, b"x")
            keys.add(key)
        elif op == "delete":
            store.delete(key)
            keys.discard(key)
        else:  # a guarded read-modify-write that deletes a present key and writes an absent one
            with store.update([key]) as update:
                present = update.values[key] is not None
                update.commit({key: None if present else b"y"})
            (keys.discard if present else keys.add)(key)
        for prefix in PREFIXES:
            head = f"{prefix}/" if prefix else ""
            below = [k for k in keys if k.startswith(head)]
            assert store.list_dir(prefix) == split_listing(prefix, below)
            assert store.holds_under(prefix) is bool(below)
