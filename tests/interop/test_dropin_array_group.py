"""zarr-python 3's Array and Group surface on zarrdask objects: the same calls on the same
data give the same values, the same member names and the same stored keys as zarr-python;
the selection methods also agree with numpy."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarr.core.buffer.cpu import Buffer

import zarrdask
from zarrdask.errors import (
    ContainsNodeError,
    NodeMismatchError,
    MemberNotFoundError,
    SelectionError,
    ShapeMismatchError,
    UnexpectedKeywordError,
)
from zarrdask.storage import MemoryStore

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _keys(root: Path) -> set[str]:
    """The keys under ``root``, but for v2 ``.zattrs`` documents holding no attributes
    (zarr-python writes them, zarrdask leaves them out; both read their absence as ``{}``)."""
    return {str(p.relative_to(root)).replace(os.sep, "/") for p in root.rglob("*")
            if p.is_file() and not (p.name == ".zattrs" and json.loads(p.read_text()) == {})}


def _pair(data: np.ndarray, chunks: tuple[int, ...], shards: tuple[int, ...] | None,
          zarr_format: int) -> tuple[zarr.Array, zarrdask.Array]:
    """The same array written by zarr-python into memory, and a copy of its store opened by zarrdask."""
    zp = zarr.create_array(zarr.storage.MemoryStore(), shape=data.shape, dtype=data.dtype, chunks=chunks,
                           shards=shards, zarr_format=zarr_format, fill_value=0)
    zp[...] = data
    store = MemoryStore()
    for key, value in zp.store._store_dict.items():
        store.set(key, value.to_bytes())
    return zp, zarrdask.open_array(store, mode="r+")


def _assert_same_stores(zp: zarr.Array, zd: zarrdask.Array) -> None:
    """The same keys stored, holding the same values (each library reads the other's store)."""
    stored = {key: zd.store.get(key) for key in zd.store.list_prefix("")}
    assert set(stored) == set(zp.store._store_dict)
    theirs = zarr.storage.MemoryStore({k: Buffer.from_bytes(v) for k, v in stored.items()})
    np.testing.assert_array_equal(zarr.open_array(theirs)[...], zp[...])
    np.testing.assert_array_equal(zarrdask.open_array(zp.store)[...], zd[...])


# -- random arrays and selections -------------------------------------------------------------

@st.composite
def layouts(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...] | None, int]:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, n + 1)) for n in shape)
    zarr_format = draw(st.sampled_from([2, 3]))
    shards = None
    if zarr_format == 3 and draw(st.booleans()):
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    seed = draw(st.integers(0, 2**16))
    values = np.random.default_rng(seed).integers(-3, 4, size=shape).astype("i4")
    return values, chunks, shards, zarr_format


def _dim_basic(draw: st.DrawFn, n: int) -> object:
    if draw(st.booleans()):
        return draw(st.integers(-n, n - 1))
    return slice(draw(st.none() | st.integers(-n - 2, n + 2)), draw(st.none() | st.integers(-n - 2, n + 2)),
                 draw(st.none() | st.integers(1, 3)))


@st.composite
def basic_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[object, ...]:
    return tuple(_dim_basic(draw, n) for n in shape)


@st.composite
def orthogonal_selections(draw: st.DrawFn, shape: tuple[int, ...], unique: bool) -> tuple[object, ...]:
    out: list[object] = []
    for n in shape:
        kind = draw(st.sampled_from(["basic", "ints", "bools"]))
        if kind == "basic":
            out.append(_dim_basic(draw, n))
        elif kind == "ints":
            ints = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=unique))
            out.append(np.array(ints))
        else:
            out.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
    return tuple(out)


@st.composite
def coordinate_selections(draw: st.DrawFn, shape: tuple[int, ...], unique: bool) -> tuple[np.ndarray, ...]:
    flat = draw(st.lists(st.integers(0, int(np.prod(shape)) - 1), min_size=1, max_size=12, unique=unique))
    return tuple(np.array(c) for c in np.unravel_index(flat, shape))


@st.composite
def block_selections(draw: st.DrawFn, counts: tuple[int, ...]) -> tuple[object, ...]:
    out: list[object] = []
    for n in counts:
        if draw(st.booleans()):
            out.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.integers(0, n - 1))
            out.append(slice(start, draw(st.integers(start + 1, n))))
    return tuple(out)


def _numpy_block(data: np.ndarray, selection: tuple[object, ...], units: tuple[int, ...]) -> np.ndarray:
    index = []
    for item, unit, n in zip(selection, units, data.shape):
        count = -(-n // unit)
        if isinstance(item, int):
            k = item % count
            index.append(slice(k * unit, (k + 1) * unit))
        else:
            index.append(slice(item.start * unit, item.stop * unit))
    return data[tuple(index)]


def _numpy_orthogonal(data: np.ndarray, selection: tuple[object, ...]) -> np.ndarray:
    out = data
    for d, item in reversed(list(enumerate(selection))):
        index = [slice(None)] * out.ndim
        index[d] = item
        out = out[tuple(index)]
    return out


@SETTINGS
@given(data=st.data(), layout=layouts())
def test_get_selections_match_zarr_python_and_numpy(data, layout):
    values, chunks, shards, zarr_format = layout
    zp, zd = _pair(values, chunks, shards, zarr_format)
    basic = data.draw(basic_selections(values.shape))
    np.testing.assert_array_equal(zd.get_basic_selection(basic), values[basic])
    np.testing.assert_array_equal(zd.get_basic_selection(basic), zp.get_basic_selection(basic))
    ortho = data.draw(orthogonal_selections(values.shape, unique=False))
    np.testing.assert_array_equal(zd.get_orthogonal_selection(ortho), _numpy_orthogonal(values, ortho))
    np.testing.assert_array_equal(zd.get_orthogonal_selection(ortho), zp.get_orthogonal_selection(ortho))
    coords = data.draw(coordinate_selections(values.shape, unique=False))
    np.testing.assert_array_equal(zd.get_coordinate_selection(coords), values[coords])
    np.testing.assert_array_equal(zd.get_coordinate_selection(coords), zp.get_coordinate_selection(coords))
    mask = values > 0
    np.testing.assert_array_equal(zd.get_mask_selection(mask), values[mask])
    np.testing.assert_array_equal(zd.get_mask_selection(mask), zp.get_mask_selection(mask))
    counts = tuple(-(-n // u) for n, u in zip(values.shape, shards or chunks))
    blocks = data.draw(block_selections(counts))
    np.testing.assert_array_equal(zd.blocks[blocks], _numpy_block(values, blocks, shards or chunks))
    np.testing.assert_array_equal(zd.get_block_selection(blocks), zp.get_block_selection(blocks))
    np.testing.assert_array_equal(zd.blocks[blocks], zp.blocks[blocks])


@SETTINGS
@given(data=st.data(), layout=layouts())
def test_set_selections_write_what_zarr_python_writes(data, layout):
    values, chunks, shards, zarr_format = layout
    rng = np.random.default_rng(7)
    zp, zd = _pair(values, chunks, shards, zarr_format)
    expected = values.copy()
    basic = data.draw(basic_selections(values.shape))
    new = rng.integers(-2, 3, size=expected[basic].shape).astype("i4")
    for target in (zp, zd):
        target.set_basic_selection(basic, new)
    expected[basic] = new
    ortho = data.draw(orthogonal_selections(values.shape, unique=True))
    new = rng.integers(-2, 3, size=_numpy_orthogonal(expected, ortho).shape).astype("i4")
    zd.set_orthogonal_selection(ortho, new)
    index = [np.array([o % n]) if isinstance(o, (int, np.integer)) else np.arange(n)[o]
             for o, n in zip(ortho, values.shape)]
    expected[np.ix_(*index)] = new.reshape([len(i) for i in index])
    try:
        zp.set_orthogonal_selection(ortho, new)
    except (ValueError, IndexError):  # zarr-python 3.1.6 fails some orthogonal writes into shards: write ours
        assert shards is not None
        zp[...] = zd[...]
    coords = data.draw(coordinate_selections(values.shape, unique=True))
    new = rng.integers(-2, 3, size=len(coords[0])).astype("i4")
    for target in (zp, zd):
        target.set_coordinate_selection(coords, new)
    expected[coords] = new
    mask = expected == 1
    for target in (zp, zd):
        target.set_mask_selection(mask, 0)
    expected[mask] = 0
    counts = tuple(-(-n // u) for n, u in zip(values.shape, shards or chunks))
    blocks = data.draw(block_selections(counts))
    new = rng.integers(-2, 3, size=zp.blocks[blocks].shape).astype("i4")
    for target in (zp, zd):
        target.blocks[blocks] = new
    _numpy_block(expected, blocks, shards or chunks)[...] = new
    np.testing.assert_array_equal(zd[...], expected)
    _assert_same_stores(zp, zd)


# -- properties -----------------------------------------------------------------------------------

LAYOUTS = [
    pytest.param({"chunks": (4, 5), "zarr_format": 2}, id="v2"),
    pytest.param({"chunks": (4, 5), "zarr_format": 3}, id="v3"),
    pytest.param({"chunks": (2, 5), "shards": (4, 10), "zarr_format": 3}, id="v3-sharded"),
    pytest.param({"chunks": (4, 5), "zarr_format": 3, "compressors": None,
                  "filters": [zarr.codecs.TransposeCodec(order=(1, 0))]}, id="v3-filter"),
]


def _as_json(codecs, zarr_format: int) -> list[dict]:
    """Codecs (zarr-python's objects, or zarrdask's JSON) as comparable JSON: v3 codec
    documents, v2 the config of the numcodecs codec they make."""
    if zarr_format == 2:
        return [numcodecs.get_codec(dict(c)).get_config() if isinstance(c, dict) else c.get_config() for c in codecs]
    return [json.loads(json.dumps(c if isinstance(c, dict) else c.to_dict())) for c in codecs]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_array_properties_match_zarr_python(tmp_path, layout):
    zp = zarr.create_array(str(tmp_path / "a.zarr"), name="x/y", shape=(10, 13), dtype="f4", fill_value=-1.0,
                           attributes={"units": "m"}, **layout)
    zp[:6] = np.arange(78, dtype="f4").reshape(6, 13)
    zd = zarrdask.open_array(tmp_path / "a.zarr", path="x/y", mode="r+")
    for name in ("shape", "chunks", "shards", "cdata_shape", "nchunks", "ndim", "size",
                 "dtype", "order", "read_only", "name", "basename", "path", "nbytes"):
        assert getattr(zd, name) == getattr(zp, name), name
    assert zd.zarr_format == zp.metadata.zarr_format and zd.fill_value == zp.fill_value and zd.itemsize == 4
    assert zd.nbytes_stored() == zp.nbytes_stored()
    # zarr-python counts every inner chunk of a stored shard; zarrdask the inner chunks stored
    stored_inner = 3 * 3 if zd.shards else zp.nchunks_initialized  # rows 0-5: 3 inner rows of 3 inner columns
    assert zd.nchunks_initialized == stored_inner and (zd.shards is not None or stored_inner == 6)
    assert dict(zd.attrs) == zp.attrs.asdict()
    assert _as_json(zd.compressors, zd.zarr_format) == _as_json(zp.compressors, zd.zarr_format)
    assert _as_json(zd.filters, zd.zarr_format) == _as_json(zp.filters, zd.zarr_format)
    assert zd.serializer == (None if zp.serializer is None else _as_json([zp.serializer], 3)[0])
    # what the properties give, create_array takes back: the same chain
    back = zarrdask.create_array(tmp_path / "b.zarr", shape=zd.shape, dtype=zd.dtype, chunks=zd.chunks,
                                 shards=zd.shards, zarr_format=zd.zarr_format, compressors=zd.compressors,
                                 filters=zd.filters, **({} if zd.serializer is None else {"serializer": zd.serializer}))
    assert back.codecs == zd.codecs
    assert zd.update_attributes({"long_name": "height"}) is zd
    assert zarr.open_array(str(tmp_path / "a.zarr"), path="x/y").attrs.asdict() == {"units": "m", "long_name": "height"}


def test_resize_append_shape_setter_match_zarr_python(tmp_path):
    values = np.arange(1, 61, dtype="i4").reshape(6, 10)
    zp, zd = _pair(values, (4, 4), None, 3)
    for arr in (zp, zd):
        arr.resize((5, 7))
        assert arr.append(np.full((2, 7), 9, dtype="i4")) == (7, 7)
        arr.shape = (7, 12)
    assert zd.shape == zp.shape == (7, 12)
    np.testing.assert_array_equal(zd[:, :7], zp[:, :7])
    # zarr-python shows the values beyond the old edge again (column 7 of a kept chunk); zarrdask the fill value
    assert (zd[:, 7:] == 0).all() and (zp[:5, 7] == values[:5, 7]).all()


def test_fields_and_out(tmp_path):
    dtype = np.dtype([("a", "i4"), ("b", "f8"), ("c", "u1")])
    values = np.zeros(12, dtype=dtype)
    values["a"], values["b"], values["c"] = np.arange(12), np.arange(12) / 2, 7
    zp = zarr.create_array(str(tmp_path / "s.zarr"), shape=(12,), dtype=dtype, chunks=(5,), zarr_format=2)
    zp[...] = values
    zd = zarrdask.open_array(tmp_path / "s.zarr", mode="r+")
    # (zarr-python 3.1.6 fails on fields=; the reference is numpy, as zarr-python documents it)
    np.testing.assert_array_equal(zd.get_basic_selection(slice(2, 9), fields="a"), values["a"][2:9])
    assert zd.get_basic_selection(3, fields="b") == 1.5
    both = zd.get_orthogonal_selection(np.array([1, 4, 11]), fields=["c", "a"])
    assert both.dtype == np.dtype([("c", "u1"), ("a", "i4")])  # packed, as zarr-python
    assert both.tolist() == [(7, 1), (7, 4), (7, 11)]
    zd.set_basic_selection(slice(0, 3), 5.5, fields="b")
    values["b"][:3] = 5.5
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "s.zarr"))[...], values)  # the other fields kept
    zd.set_coordinate_selection(([4, 2],), np.array([(1, 9)], dtype=[("c", "u1"), ("a", "i4")]), fields=["c", "a"])
    values["c"][[4, 2]], values["a"][[4, 2]] = 1, 9
    np.testing.assert_array_equal(zd[...], values)
    with pytest.raises(SelectionError, match="no field 'd'"):
        zd.get_basic_selection(fields="d")

    plain = zarrdask.create_array(tmp_path / "p.zarr", shape=(6, 8), dtype="i8", chunks=(4, 3))
    plain[...] = np.arange(48).reshape(6, 8)
    out = np.full((3, 8), -1, dtype="i8")
    assert plain.get_basic_selection(slice(1, 4), out=out) is out
    np.testing.assert_array_equal(out, np.arange(48).reshape(6, 8)[1:4])
    wide = np.zeros((4, 6), dtype="i8")  # a strided view: filled through a copy
    plain.get_orthogonal_selection((np.array([0, 5]), slice(0, 8, 3)), out=wide[1:3, ::2])
    np.testing.assert_array_equal(wide[1:3, ::2], np.arange(48).reshape(6, 8)[[0, 5]][:, ::3])
    with pytest.raises(ShapeMismatchError, match=r"out has shape \(2,\)"):
        plain.get_coordinate_selection(([0, 1, 2], [0, 1, 2]), out=np.zeros(2, dtype="i8"))
    with pytest.raises(SelectionError, match="has no fields"):
        plain.get_basic_selection(fields="a")
    with pytest.raises(UnexpectedKeywordError, match=r"Array.get_mask_selection\(\) does not take 'prototype'"):
        plain.get_mask_selection(np.ones((6, 8), bool), prototype=object())
    with pytest.raises(SelectionError, match="boolean array of the array's shape"):
        plain.get_mask_selection(np.ones((6,), bool))
    with pytest.raises(SelectionError, match="step 1"):
        plain.blocks[::2]


# -- groups -------------------------------------------------------------------------------------------

def _build(root, zarr_format: int) -> None:
    """The same calls on a zarr-python and a zarrdask group."""
    root.update_attributes({"title": "t"})
    for name in ("quux", "baz", "a_arr"):
        root.create_array(name, shape=(3, 4), dtype="i4", chunks=(2, 2))
    sub = root.create_group("foo", attributes={"k": 1})
    sub.create_array("inner", shape=(5,), dtype="f4", chunks=(5,), fill_value=1.5)
    sub.require_group("deep").require_groups("d1", "d2")
    root.require_group("bar")
    assert root.require_array("baz", shape=(3, 4), dtype="i8").name == "/baz"
    root.require_array("made", shape=(2,), dtype="u1", chunks=(1,))
    root.create("via_create", shape=(2, 2), dtype="f8", chunks=(2, 2))
    root["assigned"] = np.arange(6, dtype="i2").reshape(2, 3)


def _names(pairs) -> list[str]:
    return sorted(name for name, _ in pairs)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_members_match_zarr_python(tmp_path, zarr_format):
    zp = zarr.create_group(str(tmp_path / "zp.zarr"), zarr_format=zarr_format)
    zd = zarrdask.create_group(tmp_path / "zd.zarr", zarr_format=zarr_format)
    _build(zp, zarr_format)
    _build(zd, zarr_format)
    assert _keys(tmp_path / "zp.zarr") == _keys(tmp_path / "zd.zarr")
    for g in (zp, zd):
        del g["quux"]
    assert _keys(tmp_path / "zp.zarr") == _keys(tmp_path / "zd.zarr")
    assert list(zd) == sorted(zp) and list(zd.keys()) == sorted(zp.keys()) and len(zd) == len(zp)
    for depth in (0, 1, None):
        assert [k for k, _ in zd.members(max_depth=depth)] == sorted(
            (k for k, _ in zp.members(max_depth=depth)), key=lambda k: (k.count("/"), k))
        assert zd.nmembers(max_depth=depth) == zp.nmembers(max_depth=depth)
    assert list(zd.array_keys()) == sorted(zp.array_keys()) and list(zd.group_keys()) == sorted(zp.group_keys())
    assert _names(zd.arrays()) == _names(zp.arrays()) and _names(zd.groups()) == _names(zp.groups())
    assert [a.name for a in zd.array_values()] == sorted(a.name for a in zp.array_values())
    assert [g.name for g in zd.group_values()] == sorted(g.name for g in zp.group_values())
    for path in ("foo/inner", "foo/deep/d2", "nope", "foo/nope"):
        assert (path in zd) == (path in zp)
    inner = zd["foo/inner"]
    assert (inner.name, inner.path, inner.basename) == (zp["foo/inner"].name, zp["foo/inner"].path, "inner")
    np.testing.assert_array_equal(zd["assigned"][...], zp["assigned"][...])
    assert inner[0] == 1.5 and zd.get("nope") is None and zd.get("nope", 3) == 3
    assert dict(zd.attrs) == zp.attrs.asdict() and dict(zd["foo"].attrs) == {"k": 1}
    assert zd.tree() + "\n" == repr(zp.tree(plain=True))
    assert zd.tree(level=0) + "\n" == repr(zp.tree(level=0, plain=True))
    cut = zd.tree(max_nodes=2).splitlines()
    assert cut[0] == "Truncated at max_nodes=2, some nodes and their children may be missing" and len(cut) == 4


def test_group_errors_name_the_method(tmp_path):
    g = zarrdask.create_group(tmp_path / "g.zarr")
    g.create_array("x", shape=(4,), dtype="i2", chunks=(2,))
    with pytest.raises(UnexpectedKeywordError, match=r"Group.create_array\(\).*'chunk' \(did you mean 'chunks'\?\)"):
        g.create_array("y", shape=(4,), dtype="i2", chunk=(2,))
    with pytest.raises(UnexpectedKeywordError, match=r"Group.create\(\)"):
        g.create("y", shape=(4,), dtype="i2", compresors=None)
    with pytest.raises(UnexpectedKeywordError, match=r"Group.require_array\(\)"):
        g.require_array("x", shape=(4,), dtype="i2", fill=0)
    assert "y" not in g  # nothing was created
    # a TypeError, as in zarr-python
    with pytest.raises(TypeError, match=r"shape=\(5,\)\): the array has shape \(4,\)"):
        g.require_array("x", shape=(5,))
    with pytest.raises(NodeMismatchError, match="dtype is int16"):
        g.require_array("x", shape=(4,), dtype="i1")
    with pytest.raises(NodeMismatchError, match="dtype is int16"):
        g.require_array("x", shape=(4,), dtype="i4", exact=True)
    assert g.require_array("x", shape=4, dtype="f4").name == "/x"  # int16 casts safely to float32
    with pytest.raises(TypeError, match=r"Group.require_group\('x'\).*is an array"):
        g.require_group("x")
    with pytest.raises(MemberNotFoundError):
        del g["nope"]
    with pytest.raises(UnexpectedKeywordError, match="expand"):
        g.tree(expand=True)
    with pytest.raises(UnexpectedKeywordError, match="use_consolidated_for_children"):
        g.members(use_consolidated_for_children=False)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_delete_member_updates_consolidated_metadata(tmp_path, zarr_format):
    root = zarrdask.create_group(tmp_path / "c.zarr", zarr_format=zarr_format)
    root.create_group("keep").create_array("x", shape=(2,), dtype="i1")
    root.create_group("gone").create_array("y", shape=(2,), dtype="i1")
    zarrdask.consolidate_metadata(tmp_path / "c.zarr")
    opened = zarrdask.open_group(tmp_path / "c.zarr", mode="r+")
    assert opened.consolidated
    opened.create_group("unlisted")  # (added to the stored consolidated metadata; this open's copy lacks it)
    del opened["gone"]  # (drops "gone" from the consolidated metadata as stored: "unlisted" stays)
    assert [k for k, _ in opened.members(max_depth=None)] == ["keep", "unlisted", "keep/x"]  # (listed from the store)
    again = zarr.open_group(str(tmp_path / "c.zarr"), use_consolidated=True, zarr_format=zarr_format)
    assert _names(again.members(max_depth=None)) == ["keep", "keep/x", "unlisted"]
    assert [k for k, _ in zarrdask.open_group(tmp_path / "c.zarr").members(max_depth=None)] == [
        "keep", "unlisted", "keep/x"]
    nested = zarrdask.open_group(tmp_path / "c.zarr", mode="r+")
    del nested["keep/x"]  # a nested member: served from the consolidated metadata, which loses it
    assert nested.consolidated and [k for k, _ in nested.members(max_depth=None)] == ["keep", "unlisted"]
    again = zarr.open_group(str(tmp_path / "c.zarr"), use_consolidated=True, zarr_format=zarr_format)
    assert _names(again.members(max_depth=None)) == ["keep", "unlisted"]


def test_blocks_and_chunk_counts_on_rectilinear_grids():
    values = np.arange(60, dtype="i4").reshape(10, 6)
    plain = zarrdask.create_array(MemoryStore(), shape=(10, 6), dtype="i4", chunks=((3, 7), (1, 5)))
    plain[...] = values
    assert plain.cdata_shape == (2, 2) and plain.nchunks == 4
    np.testing.assert_array_equal(plain.blocks[1, 1], values[3:, 1:])
    np.testing.assert_array_equal(plain.get_block_selection((slice(0, 2), -2)), values[:, :1])
    sharded = zarrdask.create_array(MemoryStore(), shape=(10, 6), dtype="i4", chunks=(2, 3), shards=((4, 6), (6,)))
    sharded.blocks[1] = values[4:]  # blocks are the shards
    assert sharded.cdata_shape == (5, 2) and sharded.nchunks == 10
    np.testing.assert_array_equal(sharded[...], np.where(np.arange(10)[:, None] >= 4, values, 0))
