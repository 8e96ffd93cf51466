"""Errors a user can act on, in the metadata model: each problem prints its JSON path once,
names the document's key, what was expected and what was found; an unknown name (codec,
data type, chunk grid, key encoding, codec setting, extension field) names the nearest
known one.

The broken documents start from the conformance corpus's valid arrays (v3 ``zarr.json``
and v2 ``.zarray``) with one value replaced at a random JSON path.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.codecs.registry import unknown_codec, unknown_numcodecs_id
from zarrdask.errors import MetadataError, Problem, UnknownExtensionError, UnsupportedDataTypeError
from zarrdask.storage import MemoryStore

from _util import corpus_dir, load_manifest

CORPUS = corpus_dir()
#: the fields whose values are mutated (nested deep: codecs' configurations, sharding's inner codecs)
FIELDS = ("codecs", "chunk_grid", "chunk_key_encoding", "data_type", "fill_value",
          "compressor", "filters", "dtype", "chunks")


def _corpus_arrays() -> list[tuple[str, dict]]:
    """(document name, document) of every array in the corpus's cases that must open."""
    manifest = load_manifest()
    assert manifest is not None, f"conformance corpus not found at {CORPUS}"
    docs = []
    for case in manifest["cases"]:
        if "error" in case["expect"]:
            continue
        for name in ("zarr.json", ".zarray"):
            path = CORPUS / case["path"] / name
            if path.exists():
                doc = json.loads(path.read_text(encoding="utf-8"))
                if name == ".zarray" or doc.get("node_type") == "array":
                    docs.append((name, doc))
    return docs


DOCS = _corpus_arrays()
V3_SHARDED = next(doc for name, doc in DOCS if name == "zarr.json" and doc["codecs"][0]["name"] == "sharding_indexed"
                  and len(doc["codecs"][0]["configuration"]["codecs"]) > 1)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every JSON path inside ``value`` (containers and leaves)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _open(name: str, doc: dict) -> Any:
    store = MemoryStore()
    store._data[f"a/{name}"] = json.dumps(doc).encode()
    return zarrdask.open_array(store, path="a")


def _error(name: str, doc: dict) -> MetadataError:
    with pytest.raises(MetadataError) as info:
        _open(name, doc)
    return info.value


def _swap(text: str, i: int) -> str:
    """``text`` with the letters at ``i`` and ``i + 1`` swapped (the commonest typo)."""
    return text[:i] + text[i + 1] + text[i] + text[i + 2:]


def _assert_path_once(problem: Problem) -> None:
    """The problem prints as ``path: message`` and the message repeats no part of its path."""
    where = "/".join(map(str, problem.loc))
    assert str(problem) == f"{where or '<document>'}: {problem.message}"
    if problem.loc:
        first = re.escape(str(problem.loc[0]))
        assert not re.search(rf"(^|[\s'\"]){first}(/|: )", problem.message), str(problem)


# -- every broken document --------------------------------------------------------------

_REPLACEMENTS = ("x", 7, -1, None, [], {}, True, 2.5)


@st.composite
def broken_documents(draw: Any) -> tuple[str, dict, tuple, Any]:
    """A corpus document with the value at one path under FIELDS replaced (by a plain
    value, a one-typo copy of a string, or an object with one key misspelled)."""
    name, doc = draw(st.sampled_from(DOCS))
    doc = copy.deepcopy(doc)
    path = draw(st.sampled_from([p for p in _paths(doc) if p and p[0] in FIELDS]))
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    old = parent[path[-1]]
    choices = list(_REPLACEMENTS)
    if isinstance(old, str) and len(old) > 1:
        choices.append(_swap(old, draw(st.integers(0, len(old) - 2))))
    if isinstance(old, dict) and old:
        key = draw(st.sampled_from(sorted(old)))
        if len(key) > 1:
            typo = _swap(key, draw(st.integers(0, len(key) - 2)))
            choices.append({(typo if k == key else k): v for k, v in old.items()})
    new = draw(st.sampled_from(choices))
    parent[path[-1]] = new
    return name, doc, path, new


#: what was expected, in a message
_EXPECTED = re.compile(r"\bexpected\b|known:|allowed:|\bmust\b|\bneeds?\b|\bbut\b|\bis not\b")


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(broken_documents())
@example((".zarray", {"shape": [10], "chunks": [3], "dtype": "|O", "fill_value": [], "order": "C",  # (found by a
          "filters": [{"id": "vlen-utf8"}], "dimension_separator": ".", "compressor": None,  # 10x run: the
          "zarr_format": 2}, ("fill_value",), []))  # object fill's own problem was wrapped, naming the field twice
def test_broken_metadata_names_key_path_once_and_expectation(case):
    name, doc, path, new = case
    try:
        _open(name, doc)
    except MetadataError as exc:
        text = str(exc)
        assert text.startswith(f"a/{name}: "), text  # the key, once
        assert text.count(f"a/{name}") == 1, text
        for problem in exc.problems:
            _assert_path_once(problem)
            # what was expected (or the names that are known / allowed)
            assert _EXPECTED.search(problem.message), text
        assert f"{exc.problems[0].loc[0]}" in text


# -- did you mean -----------------------------------------------------------------------

def _v3(**changes: Any) -> dict:
    doc = {"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "float32",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "fill_value": 0, "attributes": {},
           "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                      {"name": "zstd", "configuration": {"level": 1, "checksum": False}}]}
    doc.update(changes)
    return doc


@pytest.mark.parametrize(("changes", "path", "suggestion"), [
    ({"data_type": "flaot32"}, "data_type", "float32"),
    ({"data_type": "<f4"}, "data_type", "float32"),  # a numpy spelling: its v3 name
    ({"data_type": {"name": "float32", "ocnfiguration": {}}}, "data_type", "configuration"),
    ({"chunk_grid": {"name": "reglar", "configuration": {"chunk_shape": [2, 3]}}}, "chunk_grid/name", "regular"),
    ({"chunk_key_encoding": {"name": "defualt"}}, "chunk_key_encoding/name", "default"),
    ({"codecs": [{"name": "bytes", "configuraton": {"endian": "little"}}]}, "codecs/0", "configuration"),
    ({"codecs": [{"name": "bytes"}, {"name": "zstd", "configuration": {"levle": 3}}]},
     "codecs/1/configuration", "level"),
    ({"codecs": [{"name": "bytes", "configuration": {"endian": "litle"}}]},
     "codecs/0/configuration/endian", "little"),
])
def test_unknown_names_suggest_the_nearest(changes, path, suggestion):
    err = _error("zarr.json", _v3(**changes))
    assert str(err).startswith(f"a/zarr.json: {path}: "), str(err)
    assert f"(did you mean {suggestion!r}?)" in str(err)


def test_a_data_type_object_names_each_field_it_cannot_take():
    err = _error("zarr.json", _v3(data_type={"nmae": "float32"}))
    assert [(p.loc, p.message) for p in err.problems] == [
        (("data_type", "name"), "expected a data type name (a string), got None"),
        (("data_type",), "unexpected field 'nmae' (did you mean 'name'?) in a data type object; allowed: "
                         "'configuration', 'must_understand', 'name'")]
    err = _error("zarr.json", _v3(data_type={"name": "float32", "configuration": 3}))
    assert str(err) == "a/zarr.json: data_type/configuration: expected an object, got 3"


def test_unknown_top_level_field_suggests_the_field():
    doc = _v3()
    doc["fill_valeu"] = doc.pop("fill_value")
    err = _error("zarr.json", doc)
    assert isinstance(err, UnknownExtensionError)
    assert "fill_valeu: unknown field 'fill_valeu' (did you mean 'fill_value'?)" in str(err)
    assert "fill_value: required field 'fill_value' is missing" in str(err)


def test_unknown_codec_key_says_what_is_allowed():
    err = _error("zarr.json", _v3(codecs=[{"name": "bytes"}, {"name": "zstd", "configuration": {"levle": 3}}]))
    assert str(err) == ("a/zarr.json: codecs/1/configuration: unknown key 'levle' (did you mean 'level'?); "
                        "allowed: 'checksum', 'level'")


def _codec_settings() -> list[tuple[dict, tuple, str]]:
    """(document, path of a codec's configuration, setting) for every setting of a codec
    zarrdask configures itself (numcodecs.* take numcodecs' own keywords) in the corpus."""
    out = []
    for name, doc in DOCS:
        if name != "zarr.json":
            continue
        for path in _paths(doc["codecs"], ("codecs",)):
            if len(path) >= 3 and path[-1] == "configuration":
                codec = doc
                for part in path[:-1]:
                    codec = codec[part]
                if not codec["name"].startswith("numcodecs."):
                    out += [(doc, path, key) for key in codec["configuration"] if len(set(key)) > 1]
    return out


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(_codec_settings()), st.data())
def test_misspelled_codec_setting_suggests_it(setting, data):
    """Swap two different letters of any setting of any codec in the corpus: the error
    names the misspelled setting and the one meant."""
    doc, path, key = setting
    i = data.draw(st.sampled_from([i for i in range(len(key) - 1) if key[i] != key[i + 1]]))
    typo = _swap(key, i)
    doc = copy.deepcopy(doc)
    config = doc
    for part in path:
        config = config[part]
    config[typo] = config.pop(key)
    err = _error("zarr.json", doc)
    where = "/".join(map(str, path))
    assert str(err).startswith(f"a/zarr.json: {where}: unknown key {typo!r} (did you mean {key!r}?)"), str(err)


@pytest.mark.parametrize(("dtype", "zarr_format", "suggestion"), [
    ("flaot32", 3, "float32"), ("flaot32", 2, "float32"), ("int33", 3, "int32"),
    ("uint8x", 3, "uint8"), ("f<4", 3, "<f4"), ("datetime65", 3, "datetime64"),
])
def test_create_array_dtype_typo_suggests_the_dtype(dtype, zarr_format, suggestion):
    from zarrdask.metadata.dtypes import data_type_from_numpy

    with pytest.raises(UnsupportedDataTypeError, match=re.escape(f"{dtype!r} is not a data type (did you mean "
                                                                 f"{suggestion!r}?)")):
        data_type_from_numpy(dtype, zarr_format)
    if zarr_format == 3:  # what create_array passes its dtype through
        with pytest.raises(UnsupportedDataTypeError, match=re.escape(f"(did you mean {suggestion!r}?)")):
            zarrdask.create_array(tempfile.mkdtemp(), shape=(2,), dtype=dtype)


def test_v2_dtype_typo_suggests_the_typestr():
    doc = next(copy.deepcopy(d) for n, d in DOCS if n == ".zarray" and d["dtype"] == "<f4")
    doc["dtype"] = "f<4"
    assert "got 'f<4' (did you mean '<f4'?)" in str(_error(".zarray", doc))


def test_unknown_codec_names_suggest_registered_ones():
    problem = unknown_codec("zsdt", ("codecs", 1, "name"))
    assert problem.unknown_extension
    assert str(problem).startswith("codecs/1/name: unknown codec 'zsdt' (did you mean 'zstd'?); known: ")
    assert "sharding_indexed" in problem.message
    problem = unknown_numcodecs_id("blsoc", ("compressor", "id"))
    assert str(problem).startswith("compressor/id: unknown numcodecs codec 'blsoc' (did you mean 'blosc'?); known: ")


# -- each path once -------------------------------------------------------------------------

def test_codec_setting_error_prints_its_path_once():
    err = _error("zarr.json", _v3(codecs=[{"name": "bytes"}, {"name": "zstd", "configuration": {"level": "x"}}]))
    assert str(err) == "a/zarr.json: codecs/1/configuration/level: expected an integer from -131072 to 22, got 'x'"
    assert err.problems[0].loc == ("codecs", 1, "configuration", "level")


def test_sharding_inner_codec_error_prints_its_path_once():
    doc = copy.deepcopy(V3_SHARDED)
    inner = doc["codecs"][0]["configuration"]["codecs"]
    inner.append({"name": "gzip", "configuration": {"level": "x"}})
    n = len(inner) - 1
    err = _error("zarr.json", doc)
    assert str(err) == (f"a/zarr.json: codecs/0/configuration/codecs/{n}/configuration/level: "
                        "expected an integer from 0 to 9, got 'x'")


def test_problem_takes_the_path_of_an_inner_message():
    assert Problem(("codecs", 1), "codecs/1/configuration/level: bad").loc == ("codecs", 1, "configuration", "level")
    assert str(Problem(("codecs", 1), "codecs/1: codecs/1/configuration: bad")) == "codecs/1/configuration: bad"
    # a message that only looks like a path elsewhere is kept
    assert str(Problem(("fill_value",), "expected 'a/b: c'")) == "fill_value: expected 'a/b: c'"
    assert str(Problem(("codecs", 1), "codecs/10: x")) == "codecs/1: codecs/10: x"


def test_v2_datetime_without_fill_value_opens():
    doc = next(copy.deepcopy(d) for n, d in DOCS if n == ".zarray" and str(d["dtype"]).startswith("<M8"))
    doc["fill_value"] = None
    array = _open(".zarray", doc)
    assert array.fill_value is None
    assert array.dtype == np.dtype(doc["dtype"])


@pytest.mark.parametrize("dtype", ["|S0", "S", "|V0", []])
def test_v2_dtype_of_zero_bytes_is_refused(dtype):
    doc = next(copy.deepcopy(d) for n, d in DOCS if n == ".zarray" and d["dtype"] == "<f4")
    doc["dtype"], doc["fill_value"] = dtype, None
    assert str(_error(".zarray", doc)) == (f"a/.zarray: dtype: expected a data type of at least 1 byte per item "
                                           f"(such as '|S5'), got {dtype!r} (0 bytes)")


@pytest.mark.parametrize(("dtype", "fix"), [("|a5", "'|S5'"), ("<a3", "'<S3'"), ([["x", "<i4"], ["y", "a2"]], "'S2'"),
                                          ([["n", [["z", "|a4"]]]], "'|S4'"),
                                          ("a", "'S' with a length, such as '|S5'")])
def test_v2_dtype_of_numpys_deprecated_bytes_alias_is_refused_with_its_spelling(dtype, fix):
    """numpy 2 reads 'a' (its bytes alias, deprecated) with a DeprecationWarning and a later
    numpy not at all; zarr-python refuses it. The error names the 'S' typestr to write,
    which opens."""
    import warnings

    doc = next(copy.deepcopy(d) for n, d in DOCS if n == ".zarray" and d["dtype"] == "<f4")
    doc["dtype"], doc["fill_value"] = dtype, None
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        message = str(_error(".zarray", doc))
        assert message.startswith("a/.zarray: dtype: ") and "numpy's deprecated alias of 'S'" in message
        assert message.endswith(f"write {fix}")
        if "length" not in fix:
            doc["dtype"] = json.loads(json.dumps(dtype).replace(fix.strip("'").replace("S", "a"), fix.strip("'")))
            assert _open(".zarray", doc).dtype.kind in "SV"


@pytest.mark.parametrize("keyword", ["cache_size", "chunk_cache", "cache", "max_size"])
@pytest.mark.parametrize("call", ["open_array", "from_zarr"])
def test_a_chunk_cache_asked_by_another_name_points_to_cache_bytes(tmp_path, keyword, call):
    """``cache_size`` is spelled nearest ``index_cache_size`` (a count of shard indexes):
    the error points to the decoded-chunk cache's ``cache_bytes``, which then works."""
    import numpy as np

    import zarrdask
    from zarrdask.errors import UnexpectedKeywordError

    path = str(tmp_path / "a")
    zarrdask.create_array(path, data=np.arange(4.0))
    with pytest.raises(UnexpectedKeywordError) as err:
        getattr(zarrdask, call)(path, **{keyword: 1 << 20})
    assert f"unexpected keyword argument {keyword!r} (did you mean 'cache_bytes'" in str(err.value)
    assert "index_cache_size" not in str(err.value)
    opened = getattr(zarrdask, call)(path, cache_bytes=1 << 20)
    np.testing.assert_array_equal(np.asarray(opened), np.arange(4.0))


#: a bad value of each ArrayOptions keyword, and one the message's fix allows
BAD_OPTIONS = [("threads", 0, 1), ("threads", 1.5, np.int64(2)), ("lock", True, None),
               ("missing_chunks", "zero", "raise"), ("write_empty_chunks", "no", np.False_), ("progress", 1, False), ("safe_chunks", None, True),
               ("verify_checksums", "yes", True), ("index_cache_size", -1, 0), ("coalesce_gap", 2.0, 4096),
               ("cache_bytes", "lots", "1 MiB")]


def _ways_in(path: str) -> dict[str, Any]:
    import dask.array as da

    return {
        "zarrdask.open_array": lambda **kw: zarrdask.open_array(path, **kw),
        "zarrdask.open": lambda **kw: zarrdask.open(path, **kw),
        "zarrdask.open_group": lambda **kw: zarrdask.open_group(path.rsplit("/", 1)[0], **kw),
        "zarrdask.create_array": lambda **kw: zarrdask.create_array(path + "-new", shape=(4,), dtype="f8",
                                                                    overwrite=True, **kw),
        "zarrdask.from_zarr": lambda **kw: zarrdask.from_zarr(path, **kw),
        "zarrdask.to_zarr": lambda **kw: zarrdask.to_zarr(da.zeros(4), path + "-dask", overwrite=True, **kw),
        "Array.with_options": lambda **kw: zarrdask.open_array(path).with_options(**kw),
    }


@pytest.mark.parametrize("name, bad, good", BAD_OPTIONS)
def test_a_bad_option_value_names_the_call_the_keyword_and_a_fix(tmp_path, name, bad, good):
    """Every way in refuses an ArrayOptions value it cannot use (a truthy string is not
    True) before it creates anything, naming the function called and ``name=value``; the
    value the fix names works there, numpy's integers and booleans too."""
    from zarrdask.errors import InvalidModeError

    path = str(tmp_path / "a")
    zarrdask.create_array(path, data=np.arange(4.0))
    for function, call in _ways_in(path).items():
        for made in ("a-new", "a-dask"):
            shutil.rmtree(tmp_path / made, ignore_errors=True)
        with pytest.raises(InvalidModeError) as err:
            call(**{name: bad})
        message = str(err.value)
        assert message.startswith(f"{function}(): {name}={bad!r}"), message
        assert ": pass " in message, message
        assert not (tmp_path / "a-new").exists() and not (tmp_path / "a-dask").exists()  # (refused before creating)
        call(**{name: good})
