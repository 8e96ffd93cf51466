"""The decoded-chunk cache through groups: ``open_group``/``open`` hand ``cache_bytes`` to
the arrays opened through the group, and deleting a node through a group forgets every
array below it, so an array created again there by another tool never reads stale chunks."""

from __future__ import annotations

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import UnexpectedKeywordError


@pytest.fixture(autouse=True)
def _fresh_pool():
    zarrdask.cache_clear()
    yield
    zarrdask.cache_clear()


def _group(path, zarr_format=3):
    g = zarrdask.open_group(path, mode="w", zarr_format=zarr_format)
    g.create_group("sub").create_array("b", shape=(6, 6), dtype="i4", chunks=(3, 3))[...] = np.arange(36).reshape(6, 6)
    g.create_array("a", shape=(8, 8), dtype="f4", chunks=(4, 4))[...] = np.arange(64, dtype="f4").reshape(8, 8)
    return g


@pytest.mark.parametrize("opener", ["open_group", "open"])
def test_group_hands_cache_bytes_to_its_arrays(tmp_path, opener):
    _group(str(tmp_path / "g"))
    g = getattr(zarrdask, opener)(str(tmp_path / "g"), mode="r", cache_bytes="1 MiB")
    for name in ("a", "sub/b"):
        a = g[name]
        first, second = a[...], a[...]
        np.testing.assert_array_equal(first, second)
        info = a.cache_info()
        assert (info.hits, info.misses, info.budget) == (4, 4, 1 << 20), (name, info)
    plain = zarrdask.open_group(str(tmp_path / "g"), mode="r")["a"]
    plain[...]
    assert plain.cache_info().budget == 0


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("deleted", ["a", "sub"])
def test_deleting_through_a_group_forgets_the_arrays_below(tmp_path, zarr_format, deleted):
    zarr = pytest.importorskip("zarr")
    path = str(tmp_path / "g")
    _group(path, zarr_format)
    g = zarrdask.open_group(path, mode="r+", cache_bytes="1 MiB")
    member = "a" if deleted == "a" else "sub/b"
    old = g[member][...]
    assert g[member].cache_info().entries == 4
    del g[deleted]
    # the same array again, written by another library: same metadata, other values
    meta_of = {"a": dict(shape=(8, 8), dtype="f4", chunks=(4, 4)), "sub/b": dict(shape=(6, 6), dtype="i4", chunks=(3, 3))}
    z = zarr.create_array(store=path, name=member, zarr_format=zarr_format, fill_value=0,
                          **meta_of[member], **({} if zarr_format == 3 else {"compressors": None}))
    z[...] = old + 1
    again = zarrdask.open_array(path, path=member, cache_bytes="1 MiB")
    np.testing.assert_array_equal(again[...], old + 1)


def test_open_group_refuses_unknown_keywords_naming_them(tmp_path):
    _group(str(tmp_path / "g"))
    with pytest.raises(UnexpectedKeywordError, match="cache_byte"):
        zarrdask.open_group(str(tmp_path / "g"), cache_byte="1 MiB")


def test_arrays_created_through_the_group_take_its_options(tmp_path):
    g = zarrdask.open_group(str(tmp_path / "g"), mode="w", cache_bytes="8 MiB", missing_chunks="raise")
    a = g.create_array("a", shape=(8, 8), dtype="f4", chunks=(4, 4))
    b = g.create_group("sub").create_array("b", shape=(4,), dtype="i4", chunks=(2,), cache_bytes=0)
    assert (a.options.cache_bytes, a.options.missing_chunks) == (8 << 20, "raise")
    assert (b.options.cache_bytes, b.options.missing_chunks) == (0, "raise")  # given here: wins
    a[...] = np.ones((8, 8), "f4")
    a[...], a[...]
    assert a.cache_info().hits == 4
    plain = zarrdask.open_group(str(tmp_path / "g"), mode="a").create_array("c", shape=(2,), dtype="i4")
    assert plain.options == zarrdask.ArrayOptions()
