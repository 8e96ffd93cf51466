"""The conformance corpus (tests/data/conformance, a copy of the public corpus): one test per manifest case.

Every case must pass: core and zarr-python-extension cases read bit-exact (floats by bit
pattern), sharding cases included, must-fail cases raise ``zarrdask.ZarrdaskError`` with a
message that names what is wrong. TensorStore's bfloat16/int4/float8 types are optional
in the spec ecosystem, but with ``ml_dtypes`` installed zarrdask supports them, so they
are compared by bit pattern; without ``ml_dtypes`` they must fail with
``UnsupportedDataTypeError`` naming the type.

A missing corpus is a failure, not a skip.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import UnsupportedDataTypeError

from _util import (
    assert_bitwise_equal,
    assert_exact_equal,
    assert_string_values_equal,
    corpus_dir,
    decode_fill_json,
    json_equal,
    load_manifest,
    metadata_document,
    read_all,
    walk_hierarchy,
)

CORPUS = corpus_dir()
MANIFEST = load_manifest()
HAVE_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None

# TensorStore extension types whose npy holds raw bit patterns
ML_DTYPE_NAMES = ("bfloat16", "int4", "float8_e4m3fn", "float8_e5m2")


def _case_params():
    if MANIFEST is None:
        return [pytest.param(None, id="corpus-missing")]
    return [pytest.param(case, id=case["id"]) for case in MANIFEST["cases"]]


def test_corpus_present():
    assert MANIFEST is not None, f"conformance corpus not found at {CORPUS} (expected tests/data/conformance)"
    assert len(MANIFEST["cases"]) == MANIFEST.get("n_cases", len(MANIFEST["cases"]))
    ids = [c["id"] for c in MANIFEST["cases"]]
    assert len(ids) == len(set(ids)), "duplicate case ids"


# --------------------------------------------------------------------------------------
# array checks
# --------------------------------------------------------------------------------------
def _dtype_json(doc: dict, zarr_format: int):
    return doc["data_type"] if zarr_format == 3 else doc["dtype"]


def _inner_chunk_shape_on_disk(root: Path, rel: str) -> tuple[int, ...] | None:
    """The sharding codec's inner chunk_shape from the zarr.json on disk (None if unsharded)."""
    path = root / rel / "zarr.json" if rel else root / "zarr.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    codecs = doc.get("codecs") or []
    for c in codecs:
        if isinstance(c, dict) and c.get("name") == "sharding_indexed":
            return tuple(c["configuration"]["chunk_shape"])
    return None


def check_array(arr, exp: dict, zarr_format: int, store_root: Path, rel: str) -> None:
    where = rel or "<root>"
    assert isinstance(arr, zarrdask.Array), f"{where}: opened a {type(arr).__name__}, expected an Array"
    assert arr.zarr_format == zarr_format, f"{where}: zarr_format {arr.zarr_format} != {zarr_format}"

    # shape / ndim
    assert tuple(arr.shape) == tuple(exp["shape"]), f"{where}: shape {arr.shape} != {exp['shape']}"
    assert arr.ndim == len(exp["shape"])

    # data type: the JSON the library reports must be the JSON on disk
    doc = metadata_document(arr)
    got_dt = _dtype_json(doc, zarr_format)
    assert json_equal(got_dt, exp["dtype"]), f"{where}: data type JSON {got_dt!r} != {exp['dtype']!r}"

    # chunk grid: the manifest gives the grid's chunk shape (= the shard shape when sharded)
    inner = _inner_chunk_shape_on_disk(store_root, rel) if zarr_format == 3 else None
    if inner is None:
        assert tuple(arr.chunks) == tuple(exp["chunk_shape"]), f"{where}: chunks {arr.chunks} != {exp['chunk_shape']}"
        assert arr.shards is None, f"{where}: unsharded array reports shards={arr.shards}"
    else:
        assert arr.shards is not None and tuple(arr.shards) == tuple(exp["chunk_shape"]), (
            f"{where}: shards {arr.shards} != {exp['chunk_shape']}"
        )
        assert tuple(arr.chunks) == inner, f"{where}: inner chunks {arr.chunks} != {inner}"

    # dimension names (v2: from _ARRAY_DIMENSIONS)
    dn = arr.dimension_names
    dn = None if dn is None else list(dn)
    assert dn == exp["dimension_names"], f"{where}: dimension_names {dn!r} != {exp['dimension_names']!r}"

    # attributes
    attrs = dict(arr.attrs)
    assert json_equal(attrs, exp["attributes"]), f"{where}: attributes {attrs!r} != {exp['attributes']!r}"

    # values
    expected = np.load(CORPUS / exp["npy"], allow_pickle=False)
    data = arr[...]
    data = np.asarray(data)
    also = np.asarray(arr)  # the __array__ protocol must give the same thing
    assert also.shape == data.shape

    if exp.get("npy_is_bit_pattern"):
        _check_bit_pattern_values(arr, data, expected, exp, where)
    elif exp["compare"] == "bitwise":
        assert_bitwise_equal(data, expected, f"{where} values")
        assert_bitwise_equal(also, expected, f"{where} np.asarray values")
    elif exp["compare"] == "exact":
        assert_exact_equal(data, expected, f"{where} values")
    elif exp["compare"] == "string-values":
        assert_string_values_equal(data, expected, f"{where} values")
    else:  # pragma: no cover - unknown compare mode in a newer manifest
        raise AssertionError(f"unknown compare mode {exp['compare']!r}")

    _check_fill_value(arr, exp, expected.dtype, where)

    # partial reads of the same store (partial chunks / shards, strides, fancy selections)
    if expected.ndim and expected.size and not exp.get("npy_is_bit_pattern"):
        compare = {"bitwise": assert_bitwise_equal, "exact": assert_exact_equal,
                   "string-values": assert_string_values_equal}[exp["compare"]]
        mid = tuple(slice(n // 3, max(n // 3 + 1, (2 * n) // 3 + 1)) for n in expected.shape)
        compare(np.asarray(arr[mid]), expected[mid], f"{where}[{mid}]")
        strided = tuple(slice(None, None, -2) if i == 0 else slice(1, None, 3) for i in range(expected.ndim))
        compare(np.asarray(arr[strided]), expected[strided], f"{where}[{strided}]")
        last = tuple(n - 1 for n in expected.shape)
        compare(np.asarray(arr[last]), expected[last], f"{where}[{last}]")
        idx = tuple(np.array([n - 1, 0, n // 2]) for n in expected.shape)
        compare(np.asarray(arr.vindex[idx]), expected[idx], f"{where}.vindex")
        oidx = tuple(np.array(sorted({0, n - 1})) for n in expected.shape)
        compare(np.asarray(arr.oindex[oidx]), expected[np.ix_(*oidx)], f"{where}.oindex")


def _check_bit_pattern_values(arr, data, expected, exp, where):
    name = exp["dtype"] if isinstance(exp["dtype"], str) else exp["dtype"]["name"]
    assert np.dtype(arr.dtype).name == name, f"{where}: dtype {arr.dtype} is not {name}"
    assert data.shape == expected.shape, f"{where}: shape {data.shape} != {expected.shape}"
    if name == "int4":
        # the npy holds the int4 values as int8
        assert_exact_equal(data.astype(np.int8), expected, f"{where} int4 values")
    else:
        assert data.dtype.itemsize == expected.dtype.itemsize
        bits = np.ascontiguousarray(data).view(expected.dtype)
        assert_exact_equal(bits, expected, f"{where} {name} bit patterns")


def _check_fill_value(arr, exp, npy_dtype, where):
    fv_json = exp["fill_value"]
    if exp.get("npy_is_bit_pattern"):
        name = exp["dtype"]
        want = np.array(fv_json, dtype=np.dtype(name))  # ml_dtypes dtype (checked above)
        got = np.asarray(arr.fill_value).astype(np.dtype(name))
        assert got.tobytes() == want.tobytes(), f"{where}: fill_value {arr.fill_value!r} != {fv_json!r}"
        return
    if fv_json is None:
        # v2 "no fill value": accept None (preferred) or the zero default
        fv = arr.fill_value
        assert fv is None or not np.any(np.asarray(fv)), f"{where}: null fill_value reported as {fv!r}"
        return
    want = decode_fill_json(fv_json, npy_dtype)
    got = arr.fill_value
    kind = np.dtype(npy_dtype).kind
    if kind in "US":
        got_v = got.item() if isinstance(got, np.generic) else got
        want_v = want.item()
        if kind == "S" and isinstance(got_v, str):
            got_v = got_v.encode()
        assert got_v == want_v, f"{where}: fill_value {got!r} != {want_v!r} (JSON {fv_json!r})"
        return
    got_arr = np.asarray(got)
    if kind == "V":
        assert bytes(np.ascontiguousarray(got_arr).tobytes()) == want.tobytes(), (
            f"{where}: fill_value {got!r} != {want!r}"
        )
        return
    if kind in "mM":
        got_i = got_arr.astype(npy_dtype).view(np.int64) if got_arr.dtype.kind in "mM" else got_arr.astype(np.int64)
        assert int(got_i) == int(want.view(np.int64)), f"{where}: fill_value {got!r} != {fv_json!r}"
        return
    got_n = got_arr.astype(np.dtype(npy_dtype).newbyteorder("="))
    want_n = want.astype(np.dtype(npy_dtype).newbyteorder("="))
    assert got_n.tobytes() == want_n.tobytes(), (
        f"{where}: fill_value {got!r} (bits {got_n.tobytes().hex()}) != JSON {fv_json!r} "
        f"(bits {want_n.tobytes().hex()})"
    )


# --------------------------------------------------------------------------------------
# must-fail cases: what the message has to mention
# --------------------------------------------------------------------------------------
_ERROR_FEATURE_WORDS = {
    "error:bad_zarr_format": ("zarr_format",),
    "error:checksum_mismatch": ("crc32c", "checksum"),
    "error:missing_required_field": ("fill_value",),
}


def _expected_mentions(case: dict) -> tuple[str, ...]:
    """Words one of which the error message must contain."""
    words: list[str] = []
    for feat in case["features"]:
        words.extend(_ERROR_FEATURE_WORDS.get(feat, ()))
    if not words:
        # the offending extension name is quoted in the manifest's explanation
        quoted = re.findall(r"'([^']+)'", case["expect"]["error"])
        words.extend(quoted)
    if not words and "error:unknown_data_type" in case["features"]:
        # ... or it is the data type named in the document
        doc = json.loads((CORPUS / case["path"] / "zarr.json").read_text(encoding="utf-8"))
        dt = doc["data_type"]
        words.append(dt["name"] if isinstance(dt, dict) else dt)
    if not words:  # pragma: no cover - a new kind of error case
        raise AssertionError(f"don't know what the error of {case['id']} must mention: {case['expect']['error']}")
    return tuple(words)


def _check_error_case(case: dict) -> None:
    path = CORPUS / case["path"]
    with pytest.raises(zarrdask.ZarrdaskError) as ei:
        node = zarrdask.open(path)
        read_all(node)
    msg = str(ei.value)
    words = _expected_mentions(case)
    assert any(w.lower() in msg.lower() for w in words), (
        f"error message does not say what is wrong (expected one of {words}): {msg!r}"
    )
    if "error:checksum_mismatch" in case["features"]:
        # and which chunk it was
        m = re.search(r"chunk (\S+) has", case["expect"]["error"])
        if m:
            assert m.group(1) in msg, f"checksum error does not name the chunk {m.group(1)!r}: {msg!r}"


# --------------------------------------------------------------------------------------
# extension data types without ml_dtypes
# --------------------------------------------------------------------------------------
def _ml_dtype_name(exp: dict) -> str | None:
    dt = exp.get("dtype")
    if isinstance(dt, str) and dt in ML_DTYPE_NAMES:
        return dt
    return None


# --------------------------------------------------------------------------------------
# the test
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", _case_params())
def test_case(case):
    assert case is not None, f"conformance corpus not found at {CORPUS} (expected tests/data/conformance)"
    exp = case["expect"]
    root = CORPUS / case["path"]
    assert root.exists(), f"store of case {case['id']} missing: {root}"
    zf = case["zarr_format"]

    if "error" in exp:
        _check_error_case(case)
        return

    if "npy" in exp:
        ml_name = _ml_dtype_name(exp)
        if ml_name is not None and not HAVE_ML_DTYPES:
            with pytest.raises(UnsupportedDataTypeError, match=ml_name):
                read_all(zarrdask.open(root))
            return
        node = zarrdask.open(root)
        check_array(node, exp, zf, root, "")
        # open_array gives the same node type
        arr2 = zarrdask.open_array(root)
        assert tuple(arr2.shape) == tuple(exp["shape"])
        return

    # a group
    group = zarrdask.open(root)
    assert isinstance(group, zarrdask.Group), f"root opened as {type(group).__name__}, expected a Group"
    if hasattr(group, "zarr_format"):
        assert group.zarr_format == zf
    hierarchy = walk_hierarchy(group)
    assert hierarchy == exp["hierarchy"], f"hierarchy {hierarchy} != {exp['hierarchy']}"
    for gpath, ginfo in exp["groups"].items():
        g = group if gpath == "" else group[gpath]
        assert isinstance(g, zarrdask.Group), f"{gpath!r} is a {type(g).__name__}, expected a Group"
        attrs = dict(g.attrs)
        assert json_equal(attrs, ginfo["attributes"]), f"group {gpath!r}: attributes {attrs!r} != {ginfo['attributes']!r}"
    for apath, aexp in exp["arrays"].items():
        check_array(group[apath], aexp, zf, root, apath)
        # the same array opened directly (path= inside the store)
        direct = zarrdask.open_array(root, path=apath)
        assert tuple(direct.shape) == tuple(aexp["shape"])
    if gpaths := [p for p, kind in exp["hierarchy"].items() if kind == "group" and p]:
        sub = zarrdask.open_group(root, path=gpaths[0])
        assert isinstance(sub, zarrdask.Group)
