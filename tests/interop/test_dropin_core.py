"""zarr-python 3 habits for opening and creating, run against zarr-python and zarrdask.

The same call runs on two copies of the same store; zarrdask must end with the same node
and files as zarr-python, or fail with a zarrdask error and leave its copy untouched, and it
never deletes or creates what zarr-python would not. Then: zarr-python's keywords
(accepted with their meaning, or refused naming the keyword), codec objects, and the
error messages, whose suggested fixes are run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from ast import literal_eval

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import (
    ArrayNotFoundError,
    ContainsNodeError,
    GroupNotFoundError,
    InvalidModeError,
    NodeNotFoundError,
    UnexpectedKeywordError,
    ZarrdaskError,
)

KINDS = ["none", "emptydir", "file", "array3", "group3", "array2", "group2"]
MODES = ["r", "r+", "a", "w", "w-"]
ARRAY_KW = {"shape": (3,), "dtype": "f4"}
CALLS = {
    "open": ("open", {}),
    "open+shape": ("open", ARRAY_KW),
    "open_array": ("open_array", {}),
    "open_array+shape": ("open_array", ARRAY_KW),
    "open_group": ("open_group", {}),
}


def make(kind: str, root: str) -> None:
    """An existing node of ``kind`` at ``root``, written by zarr-python."""
    if kind == "emptydir":
        os.makedirs(root)
    elif kind == "file":
        with open(root, "w") as f:
            f.write("not zarr")
    elif kind.startswith("array"):
        zarr.create_array(root, shape=(4,), dtype="i4", chunks=(2,), zarr_format=int(kind[-1]))[:] = 7
    elif kind.startswith("group"):
        g = zarr.create_group(root, zarr_format=int(kind[-1]))
        g.create_array("x", shape=(2,), dtype="i4")


def files(root: str) -> dict[str, bytes] | str | None:
    """Every file below ``root`` with its bytes (``"FILE"`` for a plain file)."""
    if os.path.isfile(root):
        return "FILE"
    if not os.path.exists(root):
        return None
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return out


def node_docs(tree: dict[str, bytes] | str | None) -> dict[str, dict]:
    """The metadata documents of a tree, by key, without zarr-python's extra members."""
    if not isinstance(tree, dict):
        return {}
    out = {}
    for key, blob in tree.items():
        if key.rsplit("/", 1)[-1] in ("zarr.json", ".zarray", ".zgroup"):
            doc = json.loads(blob)
            out[key] = {k: doc.get(k) for k in ("zarr_format", "node_type", "shape", "data_type", "dtype")}
    return out


def run(module, function: str, root: str, mode: str, kwargs: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            node = getattr(module, function)(root, mode=mode, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the outcome is compared
            return exc
    return ("array", tuple(node.shape)) if hasattr(node, "shape") else ("group",)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_modes_match_zarr_python(tmp_path_factory, kind, mode, call):
    """Every call x mode x starting state (the whole matrix, not a sample)."""
    base = tmp_path_factory.mktemp("m")
    ref, ours = str(base / "ref.zarr"), str(base / "ours.zarr")
    make(kind, ref)
    make(kind, ours)
    before = files(ours)
    function, kwargs = CALLS[call]
    expected = run(zarr, function, ref, mode, kwargs)
    got = run(zarrdask, function, ours, mode, kwargs)
    after_ref, after_ours = files(ref), files(ours)
    if isinstance(got, Exception):
        assert isinstance(got, (ZarrdaskError, TypeError)), repr(got)
        assert after_ours == before, f"{call} mode={mode} on {kind} failed but changed the store"
        return
    if isinstance(expected, Exception):
        # zarr-python's open(mode='w-') without shape= fails inside zarr.create (it wants a
        # shape); zarrdask creates the group that mode promises, in a place holding no node.
        assert (call, mode, got) == ("open", "w-", ("group",)) and kind in ("none", "emptydir"), (call, mode, kind)
        return
    assert got == expected
    assert node_docs(after_ours) == node_docs(after_ref)
    if isinstance(before, dict):  # the chunks zarr-python kept, zarrdask kept too (metadata: compared above)
        kept = {k: v for k, v in before.items() if after_ref.get(k) == v and k not in node_docs(before)}
        assert {k: after_ours.get(k) for k in kept} == kept


def test_open_w_with_shape_replaces_an_array_like_zarr_python(tmp_path):
    root = str(tmp_path / "victim.zarr")
    zarrdask.create_array(root, shape=(20, 6), dtype="f4", chunks=(5, 3))[...] = 1
    a = zarrdask.open(root, mode="w", shape=(10, 4), dtype="float32", chunks=(5, 2))
    assert isinstance(a, zarrdask.Array) and (a.shape, a.chunks) == ((10, 4), (5, 2))
    assert sorted(os.listdir(root)) == ["zarr.json"]
    back = zarr.open_array(root, mode="r")
    assert back.shape == (10, 4) and back.chunks == (5, 2) and back.dtype == np.float32


def test_destructive_mode_never_runs_on_bad_keywords(tmp_path):
    root = str(tmp_path / "keep.zarr")
    zarrdask.create_array(root, shape=(8,), dtype="i4", chunks=(4,))[...] = np.arange(8)
    before = files(root)
    bad = [
        dict(shape=(3,), dtype="f4", compresors="zstd"),        # typo
        dict(shape=(3,), dtype="f4", compressors="zsdt"),       # unknown codec
        dict(shape=(3,), dtype="f4", synchronizer=object()),    # refused
        dict(shape=(3,), dtype="f4", chunks=(0,)),              # invalid value
        dict(dtype="f4"),                                        # array keyword without shape
        dict(shape=(3,)),                                        # no dtype
    ]
    for kwargs in bad:
        for function in (zarrdask.open, zarrdask.open_array):
            with pytest.raises(ZarrdaskError):
                function(root, mode="w", **kwargs)
            assert files(root) == before, (function, kwargs)
    with pytest.raises(ZarrdaskError):
        zarrdask.open_array(root, mode="w")
    assert files(root) == before


CREATE_CASES = [
    dict(shape=(10, 6), dtype="f4", chunks=(5, 3)),
    dict(data=np.arange(12, dtype="i2").reshape(3, 4), chunks=(2, 2)),
    dict(shape=(8,), dtype="u1", chunks=(4,), compressors=zarr.codecs.ZstdCodec(level=3), fill_value=9),
    dict(shape=(8,), dtype="f8", chunks=(2,), shards=(4,), compressors=None),
    dict(shape=(4, 4), dtype="i4", chunks=(2, 2), filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
         attributes={"units": "K"}, dimension_names=["y", "x"]),
    dict(shape=(6,), dtype="f4", chunks=(3,), compressors=zarr.codecs.BloscCodec(cname="lz4", clevel=3),
         chunk_key_encoding={"name": "v2", "separator": "."}),
    dict(shape=(6,), dtype="i8", chunks=(3,), zarr_format=2, compressors=numcodecs.Zstd(level=1), fill_value=0),
    dict(data=np.arange(6, dtype="f4"), chunks=(4,), zarr_format=2, config={"write_empty_chunks": True}),
]


def _chain(doc: dict) -> object:
    """The stored codec chain with its settings (v3 ``codecs``; v2 compressor and filters)."""
    if doc["zarr_format"] == 3:
        return doc["codecs"]
    return doc.get("compressor"), doc.get("filters")


def _semantics(root: str, name: str) -> dict:
    a = zarr.open_array(root, path=name, mode="r")
    codecs = [type(c).__name__ for c in (*a.filters, *([a.serializer] if a.serializer else []), *a.compressors)]
    return {"shape": a.shape, "chunks": a.chunks, "shards": a.shards, "dtype": str(a.dtype),
            "fill_value": a.fill_value.item() if hasattr(a.fill_value, "item") else a.fill_value,
            "attrs": dict(a.attrs), "format": a.metadata.zarr_format, "codecs": codecs,
            "chain": _chain(a.metadata.to_dict()),
            "values": a[...].tolist(),  # zarr-python writes an empty .zattrs, zarrdask none: the same attributes
            "keys": sorted(k for k in files(os.path.join(root, name)) if k != ".zattrs")}


@pytest.mark.parametrize("kwargs", CREATE_CASES, ids=range(len(CREATE_CASES)))
def test_create_array_keywords_match_zarr_python(tmp_path, kwargs):
    ref, ours = str(tmp_path / "ref.zarr"), str(tmp_path / "ours.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(ref, name="a", **kwargs)
    zarrdask.create_array(ours, name="a", **kwargs)
    assert _semantics(ours, "a") == _semantics(ref, "a")


@st.composite
def create_keywords(draw):
    """create_array keywords as a zarr-python user writes them: shapes, chunks, shards,
    codecs as zarr-python objects, numcodecs objects or JSON, fill values, names, data."""
    fmt = draw(st.sampled_from([2, 3]))
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    dtype = draw(st.sampled_from(["i1", "u2", "i4", "f4", "f8"]))
    kw: dict = {"chunks": chunks}
    if draw(st.booleans()):
        kw["data"] = (np.arange(int(np.prod(shape))) % 100).astype(dtype).reshape(shape)
    else:
        kw.update(shape=shape, dtype=dtype, fill_value=draw(st.sampled_from([None, 0, 3])))
    if fmt == 2:
        kw["zarr_format"] = 2
        kw["compressors"] = draw(st.sampled_from([None, numcodecs.Zstd(level=2), numcodecs.GZip(level=1),
                                                  {"id": "zlib", "level": 3}]))
    else:
        if draw(st.booleans()):
            kw["shards"] = tuple(c * draw(st.integers(1, 2)) for c in chunks)
        kw["compressors"] = draw(st.sampled_from([
            None, zarr.codecs.ZstdCodec(level=3), zarr.codecs.GzipCodec(level=2),
            [zarr.codecs.ZstdCodec(level=1, checksum=True)], {"name": "gzip", "configuration": {"level": 4}},
            zarr.codecs.BloscCodec(cname="zstd", clevel=2, shuffle="bitshuffle")]))
        if draw(st.booleans()):
            kw["dimension_names"] = [f"d{i}" for i in range(ndim)]
    if draw(st.booleans()):
        kw["attributes"] = {"units": "K"}
    return kw


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kwargs=create_keywords())
def test_generated_create_array_matches_zarr_python(tmp_path_factory, kwargs):
    base = tmp_path_factory.mktemp("c")
    ref, ours = str(base / "ref.zarr"), str(base / "ours.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(ref, name="a", **kwargs)
    zarrdask.create_array(ours, name="a", **kwargs)
    assert _semantics(ours, "a") == _semantics(ref, "a")


def test_create_array_config_and_write_data(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "c.zarr"), shape=(4,), dtype="f4", config={"write_empty_chunks": True})
    assert a.options.write_empty_chunks is True
    b = zarrdask.create_array(str(tmp_path / "d.zarr"), data=np.ones(4), write_data=False)
    assert b.shape == (4,) and files(str(tmp_path / "d.zarr")).keys() == {"zarr.json"}
    with pytest.raises(InvalidModeError, match="data= or shape="):
        zarrdask.create_array(str(tmp_path / "e.zarr"), data=np.ones(4), shape=(4,))
    with pytest.raises(UnexpectedKeywordError, match="config has no key 'write_empty_chunk'.*write_empty_chunks"):
        zarrdask.create_array(str(tmp_path / "e.zarr"), shape=(4,), dtype="f4", config={"write_empty_chunk": True})
    with pytest.raises(InvalidModeError, match="order='F'"):
        zarrdask.create_array(str(tmp_path / "e.zarr"), shape=(4,), dtype="f4", config={"order": "F"})
    assert not os.path.exists(tmp_path / "e.zarr/zarr.json")


def test_open_array_creates_with_zarr_create_keywords(tmp_path):
    root = str(tmp_path / "n.zarr")
    a = zarrdask.open_array(root, mode="a", shape=(6,), dtype="i4", chunk_shape=(3,), compressor=None,
                            dimension_separator=".", fill_value=5)
    assert a.chunks == (3,) and a[...].tolist() == [5] * 6
    z = zarr.open_array(root, mode="r")
    assert z.compressors == () and z.metadata.chunk_key_encoding.separator == "."
    again = zarrdask.open_array(root, mode="a", shape=(6,), dtype="i4", chunk_shape=(3,))  # opens, not recreates
    assert again.shape == (6,)
    with pytest.raises(ZarrdaskError, match="shape"):
        zarrdask.open_array(root, mode="a", shape=(7,), dtype="i4")


REFUSED = ["synchronizer", "chunk_store", "cache_metadata", "cache_attrs", "meta_array", "object_codec",
           "read_only", "zarr_version"]


@pytest.mark.parametrize("name", REFUSED)
@pytest.mark.parametrize("function", ["open", "open_array"])
def test_refused_zarr_python_keywords_say_what_instead(tmp_path, function, name):
    with pytest.raises(UnexpectedKeywordError, match=rf"zarrdask\.{function}\(\) does not take '{name}': \w"):
        getattr(zarrdask, function)(str(tmp_path / "x.zarr"), mode="w", shape=(2,), dtype="f4", **{name: 1})
    assert not os.path.exists(tmp_path / "x.zarr")


@pytest.mark.parametrize("name", ["cache_attrs", "synchronizer", "chunk_store", "meta_array", "zarr_version"])
def test_open_group_refuses_what_it_cannot_honour(tmp_path, name):
    with pytest.raises(UnexpectedKeywordError, match=rf"zarrdask\.open_group\(\) does not take '{name}'"):
        zarrdask.open_group(str(tmp_path / "g.zarr"), **{name: 1})
    assert not os.path.exists(tmp_path / "g.zarr")


@pytest.mark.parametrize("function,typo,meant", [
    ("create_array", "compresors", "compressors"), ("create_array", "dimention_names", "dimension_names"),
    ("open", "chunk_shap", "chunk_shape"), ("open_array", "fil_value", "fill_value"),
    ("open_group", "atributes", "attributes")])
def test_unknown_keywords_name_the_function_and_nearest(tmp_path, function, typo, meant):
    kwargs = {} if function == "open_group" else {"shape": (2,), "dtype": "f4"}
    with pytest.raises(UnexpectedKeywordError, match=rf"zarrdask\.{function}\(\) .*'{typo}'.*'{meant}'"):
        getattr(zarrdask, function)(str(tmp_path / "t.zarr"), **kwargs, **{typo: 1})


def test_open_group_defaults_to_mode_a(tmp_path):
    g = zarrdask.open_group(str(tmp_path / "new.zarr"), attributes={"title": "t"})
    assert isinstance(g, zarrdask.Group) and not g.read_only
    assert zarr.open_group(str(tmp_path / "new.zarr"), mode="r").attrs["title"] == "t"


def test_codec_objects_names_and_dicts_give_the_same_chain(tmp_path):
    forms = ["zstd", {"name": "zstd", "configuration": {"level": 0, "checksum": False}}, numcodecs.Zstd(level=0),
             zarr.codecs.ZstdCodec(level=0)]
    chains = [zarrdask.create_array("memory://", shape=(4,), dtype="f4", compressors=c).metadata.codecs for c in forms]
    assert all(c == chains[0] for c in chains)
    sharded = zarrdask.create_array("memory://", shape=(8,), dtype="f4",
                                    codecs=[zarr.codecs.ShardingCodec(chunk_shape=(2,))], chunks=(4,))
    assert sharded.shards == (4,) and sharded.chunks == (2,)


@pytest.mark.parametrize("given,meant", [("zsdt", "zstd"), ("gzp", "gzip"), ("delta", "numcodecs.delta")])
def test_unknown_codec_names_get_a_did_you_mean(given, meant):
    with pytest.raises(ZarrdaskError, match=rf"compressors/0: unknown codec '{given}' \(did you mean '{meant}'\?\)"):
        zarrdask.create_array("memory://", shape=(4,), dtype="f4", compressors=given)
    with pytest.raises(ZarrdaskError, match=r"compressors/0: cannot interpret 3 as a codec; expected"):
        zarrdask.create_array("memory://", shape=(4,), dtype="f4", compressors=3)


# -- errors that tell the cases apart, and whose fixes work --------------------------------
def _text(message: str) -> str:
    """The message without the store's repr (which shows the store's own mode)."""
    return re.sub(r"\w+Store\([^)]*\)", "<store>", message)


def _fix_modes(message: str) -> list[str]:
    return re.findall(r"mode='([rwa+-]+)'", _text(message))


def test_missing_path_and_empty_directory_suggest_modes_that_work(tmp_path):
    for root, reason in ((tmp_path / "nothing.zarr", "does not exist"), (tmp_path / "empty", "is an empty directory")):
        if reason.startswith("is an"):
            root.mkdir()
        with pytest.raises(NodeNotFoundError, match=reason) as info:
            zarrdask.open(str(root))
        assert not root.exists() or not os.listdir(root)
        for mode in _fix_modes(str(info.value)):
            assert isinstance(zarrdask.open(str(root), mode=mode), zarrdask.Group)


def test_a_file_and_a_non_zarr_directory_are_not_zarr_stores(tmp_path):
    (tmp_path / "data.csv").write_text("1,2\n")
    with pytest.raises(NodeNotFoundError, match="is a file, not a Zarr store") as info:
        zarrdask.open(str(tmp_path / "data.csv"))
    assert "mode=" not in _text(str(info.value))
    with pytest.raises(NodeNotFoundError, match=r"not a Zarr store: it holds data\.csv but no zarr\.json"):
        zarrdask.open_group(str(tmp_path), mode="r")


def test_other_zarr_version_names_the_zarr_format_that_works(tmp_path):
    root = str(tmp_path / "v2.zarr")
    zarr.create_array(root, shape=(4,), dtype="i4", zarr_format=2)[:] = 3
    for mode in ("r", "a"):
        with pytest.raises(NodeNotFoundError, match=r"holds Zarr v2 metadata \(\.zarray\); open with zarr_format=2 "
                                                    "or leave zarr_format unset"):
            zarrdask.open(root, mode=mode, zarr_format=3)
    assert sorted(os.listdir(root)) == [".zarray", ".zattrs", "0"]
    assert zarrdask.open(root, zarr_format=2)[...].tolist() == [3] * 4
    assert zarrdask.open(root)[...].tolist() == [3] * 4
    g3 = str(tmp_path / "g3.zarr")
    zarrdask.create_group(g3)
    with pytest.raises(GroupNotFoundError, match="holds Zarr v3 metadata"):
        zarrdask.open_group(g3, zarr_format=2)


def test_open_array_on_a_group_lists_its_arrays_and_the_path_works(tmp_path):
    root = str(tmp_path / "g.zarr")
    g = zarrdask.create_group(root)
    g.create_array("temp", shape=(3,), dtype="f4")
    g.create_group("sub")
    with pytest.raises(ArrayNotFoundError, match=r"is a group, not an array; it holds the arrays 'temp'") as info:
        zarrdask.open_array(root)
    path = re.search(r"path='([^']+)'", str(info.value)).group(1)
    assert zarrdask.open_array(root, path=path).shape == (3,)
    with pytest.raises(ArrayNotFoundError, match="it holds no arrays; zarrdask.open_group opens it"):
        zarrdask.open_array(root, path="sub")
    zarrdask.create_group(root, path="g/inner")
    with pytest.raises(ArrayNotFoundError, match="no arrays, only the groups 'inner'"):
        zarrdask.open_array(root, path="g")
    with pytest.raises(GroupNotFoundError, match=r"is an array, not a group; open it with zarrdask\.open_array"):
        zarrdask.open_group(root, path="temp")
    assert zarrdask.open_array(root, path="temp", mode="r").shape == (3,)


def test_exists_hints_name_a_fix_of_the_function_called(tmp_path):
    root = str(tmp_path / "a.zarr")
    zarrdask.create_array(root, shape=(2,), dtype="i4")
    with pytest.raises(ContainsNodeError, match=r"pass overwrite=True") as info:
        zarrdask.create_array(root, shape=(3,), dtype="i4")
    assert zarrdask.create_array(root, shape=(3,), dtype="i4", overwrite=True).shape == (3,)
    with pytest.raises(ContainsNodeError, match="overwrite=True"):
        zarrdask.create_group(root)
    for function, kwargs in ((zarrdask.open, {}), (zarrdask.open_array, dict(shape=(5,), dtype="i4")),
                             (zarrdask.open_group, {})):
        with pytest.raises(ContainsNodeError) as info:
            function(root, mode="w-", **kwargs)
        modes = _fix_modes(str(info.value))
        assert modes and "overwrite" not in str(info.value)
        if function is not zarrdask.open_group:
            for mode in modes:
                function(root, mode=mode, **kwargs)
            zarrdask.create_array(root, shape=(3,), dtype="i4", overwrite=True)
    assert isinstance(zarrdask.open_group(root, mode="w"), zarrdask.Group)


@pytest.mark.parametrize("passed", [dict(shape=(8,)), dict(dtype="f4"), dict(chunks=(3,)), dict(shards=(2,)),
                                   dict(shape=(8,), dtype="u2")])
def test_an_existing_array_unlike_the_keywords_names_them_and_fixes_that_work(tmp_path, passed):
    """zarr-python's mode='a' opens an existing array whatever shape=/dtype= say; zarrdask
    refuses a mismatch, and the message names what was passed, what is stored, and fixes
    that work as printed."""
    root = str(tmp_path / "a.zarr")
    zarrdask.create_array(root, shape=(4,), dtype="i2", chunks=(2,), shards=(4,))[...] = [1, 2, 3, 4]
    keywords = {"shape": (4,), "dtype": "i2", **passed}
    with pytest.raises(ZarrdaskError) as info:
        zarrdask.open_array(root, mode="a", **keywords)
    message = str(info.value)
    assert message.startswith("zarrdask.open_array(): the array at") and "a.zarr" in message
    for name, value in passed.items():
        assert f"{name}=" in message and "leave " in message
    left_out = re.search(r"leave ([\w=, ]+) out", message).group(1)
    kept = {k: v for k, v in keywords.items() if f"{k}=" not in left_out}
    assert zarrdask.open_array(root, mode="a", **kept)[...].tolist() == [1, 2, 3, 4]
    if "shape" in passed:
        shape = literal_eval(re.search(r"\.resize\((\(\d+,\))\)", message).group(1))
        zarrdask.open_array(root, mode="r+").resize(shape)
        assert zarrdask.open_array(root).shape == passed["shape"]
        zarrdask.open_array(root, mode="r+").resize((4,))
    if "shape" in passed and "dtype" not in passed:  # the dask reader names itself and offers no mode='w'
        with pytest.raises(ZarrdaskError, match=r"^zarrdask\.from_zarr\(\): .*leave shape= out") as read:
            zarrdask.from_zarr(root, shape=passed["shape"])
        assert "mode='w'" not in str(read.value)
    assert "mode='w' replaces it" in message
    assert zarrdask.open_array(root, mode="w", **keywords).shape == keywords["shape"]
