"""Opening nodes over HTTP (tests/_http.py's loopback server): one request per document,
and one round trip (one batch of requests in flight together) per open where the format
is known; a listing's documents are fetched together."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from _http import LoopbackServer
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import StoreError
from zarrdask.storage import FsspecStore


def _group(root, zarr_format: int = 3, n: int = 4, consolidated: bool = False) -> str:
    g = zarrdask.create_group(str(root / "g.zarr"), zarr_format=zarr_format)
    for i in range(n):
        g.create_array(f"v{i}", shape=(10, 20), dtype="f4", chunks=(10, 20), attributes={"units": "K", "i": i})
    if consolidated:
        zarrdask.consolidate_metadata(str(root / "g.zarr"))
    return "g.zarr"


@pytest.fixture
def batches(monkeypatch):
    """The keys of each batched read the HTTP store makes (one batch: one round trip)."""
    seen: list[list[str]] = []
    inner = FsspecStore._iter_ranges

    def counted(self, requests):
        seen.append([key for key, _ in requests])
        return inner(self, requests)

    monkeypatch.setattr(FsspecStore, "_iter_ranges", counted)
    return seen


def test_an_array_opens_with_one_request(tmp_path, batches):
    _group(tmp_path)
    with LoopbackServer(root=str(tmp_path)) as server:
        a = zarrdask.open_array(f"{server.url}/g.zarr/v1")
        assert a.shape == (10, 20) and a.attrs["i"] == 1
        assert server.counts == {"GET": 1}
    assert batches == [["zarr.json"]]


def test_each_member_of_a_group_without_consolidated_metadata_is_one_request(tmp_path, batches):
    _group(tmp_path)
    with LoopbackServer(root=str(tmp_path), delay=0.005) as server:
        g = zarrdask.open_group(f"{server.url}/g.zarr")
        assert server.counts == {"GET": 1}
        for i in range(4):
            server.reset()
            assert g[f"v{i}"].attrs["i"] == i
            assert server.counts == {"GET": 1}
    assert batches == [["zarr.json"]] + [[f"v{i}/zarr.json"] for i in range(4)]


def test_a_consolidated_group_serves_its_members_from_its_one_document(tmp_path):
    _group(tmp_path, n=50, consolidated=True)
    with LoopbackServer(root=str(tmp_path)) as server:
        g = zarrdask.open_group(f"{server.url}/g.zarr")
        assert [g[f"v{i}"].shape for i in range(50)] == [(10, 20)] * 50
        assert [a.attrs["i"] for _, a in g.arrays()] == sorted(range(50), key=lambda i: f"v{i}")
        assert server.counts == {"GET": 1}


def test_a_v2_member_is_one_round_trip(tmp_path, batches):
    """A v2 group's member: its zarr.json (which would make it a v3 node) and its v2
    documents in one batch, not one batch after the other."""
    _group(tmp_path, zarr_format=2)
    with LoopbackServer(root=str(tmp_path)) as server:
        g = zarrdask.open_group(f"{server.url}/g.zarr")
        batches.clear()
        server.reset()
        assert g["v2"].attrs["i"] == 2
        assert server.counts == {"GET": 5}
    assert batches == [["v2/zarr.json", "v2/.zarray", "v2/.zgroup", "v2/.zattrs", "v2/.zmetadata"]]


def test_a_v2_member_with_a_zarr_json_is_the_v3_node(tmp_path):
    """zarr_format=2 with both documents there: the zarr.json still wins (the v2 ones are
    not even decoded), as when the v2 documents were read after it."""
    _group(tmp_path, zarr_format=2)
    (tmp_path / "g.zarr" / "v1" / ".zattrs").write_text("not JSON")
    v3 = zarrdask.create_array(str(tmp_path / "v3.zarr"), shape=(3,), dtype="i1")
    (tmp_path / "g.zarr" / "v1" / "zarr.json").write_bytes((tmp_path / "v3.zarr" / "zarr.json").read_bytes())
    assert v3.shape == (3,)
    g = zarrdask.open_group(str(tmp_path / "g.zarr"))
    with pytest.raises(zarrdask.errors.MemberNotFoundError, match="no member 'v1'"):
        g["v1"]
    with pytest.raises(zarrdask.errors.NodeNotFoundError, match="holds Zarr v3 metadata"):
        zarrdask.open_array(str(tmp_path / "g.zarr" / "v1"), zarr_format=2)
    assert zarrdask.open_array(str(tmp_path / "g.zarr" / "v1")).shape == (3,)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_listed_members_are_fetched_together(tmp_path, batches, zarr_format):
    _group(tmp_path, zarr_format=zarr_format, n=12)
    with LoopbackServer(root=str(tmp_path), listing=True, delay=0.02) as server:
        g = zarrdask.open_group(f"{server.url}/g.zarr")
        batches.clear()
        server.reset()
        assert [a.attrs["i"] for _, a in g.arrays()] == sorted(range(12), key=lambda i: f"v{i}")
        per_member = 1 if zarr_format == 3 else 5
        assert server.counts == {"GET": 1 + 12 * per_member}  # the listing, then the documents
        assert server.peak >= 4, server.peak
    assert len(batches) == 1 and len(batches[0]) == 12 * per_member


def test_a_server_that_answers_403_for_absent_keys(tmp_path):
    """S3, and servers like it, answer 403 for a key that does not exist where the reader
    may not list: refused by default, naming the key and the store option that reads such
    keys as absent; with it a v2 group (whose zarr.json is absent) opens, on this machine
    and pickled to a dask task, and a chunk never written reads as the fill value."""
    g = zarrdask.create_group(str(tmp_path / "g.zarr"), zarr_format=2)
    g.create_array("a", shape=(4,), chunks=(2,), dtype="i4", fill_value=7)[:2] = [1, 2]
    with LoopbackServer(root=str(tmp_path), absent_status=403) as server:
        url = f"{server.url}/g.zarr"
        fix = re.escape(f"zarrdask.storage.FsspecStore({url!r}, forbidden_is_absent=True)")
        with pytest.raises(StoreError, match=rf"key 'zarr.json' \({re.escape(url)}/zarr.json\): 403.*{fix}"):
            zarrdask.open_group(url)
        store = FsspecStore(url, forbidden_is_absent=True)
        assert zarrdask.open_group(store)["a"][...].tolist() == [1, 2, 7, 7]
        assert pickle.loads(pickle.dumps(store)) == store
        assert zarrdask.from_zarr(store, path="a").compute().tolist() == [1, 2, 7, 7]
        assert store != FsspecStore(url)


#: node names as zarrdask takes them: any characters but ``/``, ``\`` and NUL, not ``.`` or
#: ``..``, not ``zarr.json``, not starting with ``__`` (reserved) nor with a drive's ``x:``
_NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\\\x00"), min_size=1,
                 max_size=12).filter(lambda n: n not in (".", "..", "zarr.json") and not n.startswith("__")
                                     and n[1:2] != ":" and len(n.encode()) <= 200)


@pytest.fixture(scope="module")
def names_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    with LoopbackServer(root=str(root), listing=True) as server:
        yield root, server


@settings(max_examples=60, deadline=None)
@given(name=_NAMES, seed=st.integers(0, 2**32 - 1))
def test_any_node_name_reads_and_lists_over_http(names_server, name, seed):
    """A member named with ``%``, ``?``, ``#``, spaces or any Unicode is read over HTTP by
    its name, and a listing names it as written (keys are percent-encoded into URLs and
    decoded out of a listing's links)."""
    root, server = names_server
    group = f"g{seed}"
    values = np.random.default_rng(seed).integers(0, 100, 5).astype("i2")
    zarrdask.create_group(str(root / group), overwrite=True).create_array(name, shape=(5,), dtype="i2")[...] = values
    g = zarrdask.open_group(f"{server.url}/{group}", use_consolidated=False)
    np.testing.assert_array_equal(g[name][...], values)
    assert [n for n, _ in g.members()] == [name]
