"""Interop with zarr-python >= 3.4 for the 2026 extensions: the rectilinear chunk grid, the
codecs cast_value (zarr-python's uses the cast-value-rs package), scale_offset and
numcodecs.bitround, the struct data type and the registry's ``bytes`` data type, both ways
and bit-exact. (zarr-python 3.4 has none of the other registry types zarrdask adds:
float8_e4m3/e3m4/e8m0fnu, float4/float6, complex_*.)

zarr-python 3.2+ needs Python 3.12, so the suite builds a small Python 3.12 environment
with it once (``.venv-py312`` in the repository, ignored by git) and runs the peer in a
subprocess. Without a Python 3.12 interpreter on the machine these tests skip, saying so.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import dask.array as da
import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / ".venv-py312"
PEER_PACKAGES = ("zarr==3.4.2", "cast-value-rs==0.5.1")  # cast_value needs cast-value-rs


def _python312() -> str | None:
    found = shutil.which("python3.12")
    candidates = [found] if found else []
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))
    for candidate in candidates:
        try:
            out = subprocess.run([candidate, "--version"], capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.startswith("Python 3.12"):
            return candidate
    return None


@pytest.fixture(scope="session")
def peer() -> str:
    """The Python of an environment with zarr-python 3.4 (built on first use)."""
    python = ENV / "bin" / "python"
    check = [str(python), "-c", "import zarr, cast_value_rs, sys; sys.exit(zarr.__version__ < '3.4')"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(python)
    base = _python312()
    if base is None:
        pytest.skip("no Python 3.12 interpreter on this machine: zarr-python >= 3.4 needs one")
    subprocess.run([base, "-m", "venv", "--clear", str(ENV)], check=True, timeout=300)
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              *PEER_PACKAGES], capture_output=True, text=True, timeout=900)
    if install.returncode != 0:  # the package registry is out of reach: nothing to test against
        pytest.skip(f"could not install {' '.join(PEER_PACKAGES)} for Python 3.12: {install.stderr.strip()[-300:]}")
    return str(python)


def _run(peer: str, script: str, *args: str) -> str:
    out = subprocess.run([peer, "-c", textwrap.dedent(script), *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


DATA = np.arange(10 * 6, dtype="int32").reshape(10, 6)

WRITE = """
    import sys, numpy as np, zarr
    path, kind = sys.argv[1], sys.argv[2]
    data = np.arange(60, dtype="int32").reshape(10, 6)
    with zarr.config.set({"array.rectilinear_chunks": True}):
        if kind == "plain":
            z = zarr.create_array(path, shape=(10, 6), dtype="int32", chunks=[[3, 7], [1, 5]], fill_value=-1)
        else:
            z = zarr.create_array(path, shape=(10, 6), dtype="int32", chunks=(2, 1), shards=[[4, 6], [1, 5]],
                                  fill_value=-1)
        z[...] = data
"""

READ = """
    import sys, json, numpy as np, zarr
    with zarr.config.set({"array.rectilinear_chunks": True}):
        z = zarr.open_array(sys.argv[1], mode="r")
        print(json.dumps({"values": z[...].tolist(), "grid": z.metadata.to_dict()["chunk_grid"]}))
"""


@pytest.mark.parametrize("kind", ["plain", "sharded"])
def test_zarrdask_reads_rectilinear_arrays_zarr_python_wrote(peer, tmp_path, kind):
    path = str(tmp_path / "z.zarr")
    _run(peer, WRITE, path, kind)
    a = zarrdask.open_array(path)
    np.testing.assert_array_equal(a[...], DATA)
    np.testing.assert_array_equal(a[2:9, 1:4], DATA[2:9, 1:4])
    expected_blocks = ((3, 7), (1, 5)) if kind == "plain" else ((4, 6), (1, 5))
    assert zarrdask.from_zarr(path).chunks == expected_blocks
    np.testing.assert_array_equal(zarrdask.from_zarr(path).compute(), DATA)


def test_zarr_python_reads_irregular_dask_chunks_zarrdask_stored_as_they_are(peer, tmp_path):
    """The issue's example: chunks ((3, 7), (1, 5)) become a rectilinear array with exactly
    those chunks, written by one task per chunk and no rechunk."""
    x = da.from_array(DATA, chunks=((3, 7), (1, 5)))
    path = str(tmp_path / "d.zarr")
    delayed = zarrdask.to_zarr(x, path, chunks="dask", compute=False)
    layers = dict(delayed.__dask_graph__().layers)
    assert not any("rechunk" in name for name in layers), list(layers)
    writes = [k for k in delayed.__dask_graph__() if isinstance(k, tuple) and k[0].startswith("zarrdask-write")]
    assert len(writes) == 4
    delayed.compute()
    got = json.loads(_run(peer, READ, path))
    assert got["grid"]["name"] == "rectilinear"
    assert got["grid"]["configuration"]["chunk_shapes"] == [[3, 7], [1, 5]]
    np.testing.assert_array_equal(np.array(got["values"]), DATA)
    assert zarrdask.from_zarr(path).chunks == ((3, 7), (1, 5))


def test_zarr_python_reads_rectilinear_shards_zarrdask_wrote(peer, tmp_path):
    path = str(tmp_path / "s.zarr")
    a = zarrdask.create_array(path, shape=(10, 6), dtype="int32", chunks=(2, 1), shards=((4, 6), (1, 5)),
                              fill_value=-1)
    a[...] = DATA
    a[3:5, 2:4] = 0
    expected = DATA.copy()
    expected[3:5, 2:4] = 0
    got = json.loads(_run(peer, READ, path))
    np.testing.assert_array_equal(np.array(got["values"]), expected)


# -- codecs and data types ----------------------------------------------------------------

PEER_WRITE = """
    import sys, json, numpy as np, zarr
    path, spec = sys.argv[1], json.loads(sys.argv[2])
    field = lambda f: (f[0], [field(g) for g in f[1]] if isinstance(f[1], list) else f[1])
    dtype = np.dtype([field(f) for f in spec["dtype"]] if isinstance(spec["dtype"], list) else spec["dtype"])
    plain = lambda v: tuple(map(plain, v.values())) if isinstance(v, dict) else float(v) if v == "NaN" else v
    fill = np.array(plain(spec["fill"]), dtype)[()] if dtype.fields else spec["fill"]
    z = zarr.create_array(path, shape=spec["shape"], dtype=dtype, chunks=spec["chunks"], filters=spec["filters"],
                          serializer=spec["serializer"], compressors=None, fill_value=fill)
    z[...] = np.frombuffer(bytes.fromhex(spec["values"]), dtype=dtype).reshape(spec["shape"])
"""

PEER_READ = """
    import sys, numpy as np, zarr
    z = zarr.open_array(sys.argv[1], mode="r")
    print(np.ascontiguousarray(z[...]).tobytes().hex())
"""

BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
_RNG = np.random.default_rng(7)
_POINT = [("x", "<f4"), ("y", "<f4")]
_RECORD = np.dtype([("id", "<i4"), ("flags", "u1"), ("value", "<f8"), ("point", _POINT)])
_RECORDS = np.zeros(7, _RECORD)
_RECORDS["id"], _RECORDS["flags"] = np.arange(7), np.arange(7) * 30
_RECORDS["value"], _RECORDS["point"]["y"] = _RNG.normal(size=7), _RNG.normal(size=7).astype("f4")

FEATURES = {
    "scale_offset+cast_value uint8, NaN mapped": dict(
        dtype="<f8", values=np.r_[_RNG.uniform(0, 2540, 9), np.nan], fill="NaN",
        filters=[{"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
                 {"name": "cast_value", "configuration": {"data_type": "uint8", "scalar_map": {
                     "encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}]),
    "cast_value float32 to int16 towards-zero, clamped": dict(
        dtype="<f4", values=_RNG.normal(scale=30000, size=10).astype("f4"), fill=0.0,
        filters=[{"name": "cast_value", "configuration": {"data_type": "int16", "rounding": "towards-zero",
                                                          "out_of_range": "clamp"}}]),
    "cast_value int64 to float16 nearest-away": dict(
        dtype="<i8", values=_RNG.integers(-60000, 60000, 10), fill=0,
        filters=[{"name": "cast_value", "configuration": {"data_type": "float16", "rounding": "nearest-away"}}]),
    "numcodecs.bitround": dict(
        dtype="<f4", values=_RNG.normal(size=10).astype("f4"), fill=0.0,
        filters=[{"name": "numcodecs.bitround", "configuration": {"keepbits": 5}}]),
    "struct, nested, big endian": dict(
        dtype=_RECORD, values=_RECORDS, fill={"id": -1, "flags": 0, "value": "NaN", "point": {"x": 0.0, "y": 1.5}},
        filters=[], serializer={"name": "bytes", "configuration": {"endian": "big"}}),
}


def _spec(feature: str) -> dict:
    f = FEATURES[feature]
    values = np.asarray(f["values"], dtype=f["dtype"])
    dtype = np.dtype(f["dtype"])
    return {"shape": list(values.shape), "chunks": [4], "filters": f["filters"],
            "serializer": f.get("serializer", BYTES_LE), "fill": f["fill"], "values": values.tobytes().hex(),
            "dtype": json.loads(json.dumps(dtype.descr)) if dtype.fields else dtype.str}


def _field(f: list) -> tuple:
    return (f[0], [_field(g) for g in f[1]] if isinstance(f[1], list) else f[1])


def _zarrdask_write(path: str, spec: dict) -> np.ndarray:
    dtype = np.dtype([_field(f) for f in spec["dtype"]] if isinstance(spec["dtype"], list) else spec["dtype"])
    values = np.frombuffer(bytes.fromhex(spec["values"]), dtype=dtype)
    a = zarrdask.create_array(path, shape=tuple(spec["shape"]), dtype=dtype, chunks=tuple(spec["chunks"]),
                              codecs=[*spec["filters"], spec["serializer"]], fill_value=_fill(dtype, spec["fill"]))
    a[...] = values
    return values


def _fill(dtype: np.dtype, fill: object) -> object:
    """The JSON fill value as create_array takes it (numbers; a mapping per struct field)."""
    if isinstance(fill, dict):
        return {k: _fill(dtype[k], v) for k, v in fill.items()}
    return float(fill) if fill == "NaN" else fill


def _chunks(path: str) -> dict[str, bytes]:
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.name != "zarr.json"}


@pytest.mark.parametrize("feature", list(FEATURES))
def test_codecs_and_struct_round_trip_both_ways_bit_exact(peer, tmp_path, feature):
    """The same values written by zarr-python and by zarrdask give identical chunk files;
    each reads the other's array exact (bit for bit, NaNs included)."""
    spec = _spec(feature)
    theirs, ours = str(tmp_path / "theirs.zarr"), str(tmp_path / "ours.zarr")
    _run(peer, PEER_WRITE, theirs, json.dumps(spec))
    values = _zarrdask_write(ours, spec)
    assert _chunks(ours) == _chunks(theirs)
    read_by_us = np.ascontiguousarray(zarrdask.open_array(theirs)[...])
    their_view = zarrdask.open_array(ours)[...]
    read_by_them = bytes.fromhex(_run(peer, PEER_READ, ours).strip())
    assert read_by_them == np.ascontiguousarray(their_view).tobytes()
    assert read_by_us.tobytes() == np.ascontiguousarray(their_view).tobytes()
    if not FEATURES[feature]["filters"]:  # lossless: exactly the values written
        assert read_by_us.tobytes() == values.tobytes()
    meta = json.loads((Path(ours) / "zarr.json").read_text())
    theirs_meta = json.loads((Path(theirs) / "zarr.json").read_text())
    assert meta["data_type"] == theirs_meta["data_type"] and meta["fill_value"] == theirs_meta["fill_value"]


CAST_RS = """
    import sys, json, numpy as np
    from cast_value_rs import cast_array
    out = []
    for case in json.loads(sys.stdin.read()):
        values = np.frombuffer(bytes.fromhex(case["values"]), dtype=case["source"])
        row = []
        for v in values:
            try:
                r = cast_array(np.array([v]), target_dtype=np.dtype(case["target"]), rounding_mode=case["rounding"],
                               out_of_range_mode=case["out_of_range"], scalar_map_entries=None)
                row.append(r.tobytes().hex())
            except Exception:
                row.append("error")
        out.append(row)
    print(json.dumps(out))
"""

_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "int64", "uint64", "float16", "float32", "float64"]


def _values(source: str, rng: np.random.Generator) -> np.ndarray:
    if source.startswith(("int", "uint")):
        info = np.iinfo(source)
        edges = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 2**24 + 1, 2**53 + 1, 65520, 300, 128]
        picked = [e for e in edges if info.min <= e <= info.max]
        random = rng.integers(info.min, info.max, 12, dtype=source, endpoint=True)
        return np.concatenate([np.array(picked, dtype=source), random])
    finfo = np.finfo(source)
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.5, 1.5, 2.5, -2.5, 127.5, 128.0, -128.6, 65519.0, 65520.0,
                float(finfo.max), float(finfo.tiny), 2.0**-25, 3 * 2.0**-26, 1e-30, 2**31 + 0.5, 2**63]
    random = np.concatenate([rng.normal(scale=s, size=4) for s in (1, 300, 1e5, 1e10)])
    with np.errstate(over="ignore"):
        return np.concatenate([np.array(specials), random]).astype(source)


def test_cast_value_agrees_with_cast_value_rs(peer):
    """Every pair of core integer/float types, every rounding mode, each out_of_range setting:
    each value casts to the same bits as zarr-python's cast-value-rs, or both refuse it."""
    rng = np.random.default_rng(11)
    cases = []
    for source in _TYPES:
        for target in _TYPES:
            if source == target:
                continue
            modes = [None, "clamp"] + (["wrap"] if not target.startswith("float") else [])
            for rounding in ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away"):
                for out_of_range in modes:
                    cases.append({"source": source, "target": target, "rounding": rounding,
                                  "out_of_range": out_of_range, "values": _values(source, rng).tobytes().hex()})
    out = subprocess.run([peer, "-c", textwrap.dedent(CAST_RS)], input=json.dumps(cases), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    from zarrdask.codecs._casting import cast, numeric
    from zarrdask.metadata.dtypes import data_type_from_numpy
    from zarrdask.errors import CodecError

    mismatches = []
    for case, expected in zip(cases, json.loads(out.stdout)):
        src, dst = numeric(data_type_from_numpy(case["source"])), numeric(data_type_from_numpy(case["target"]))
        for v, want in zip(np.frombuffer(bytes.fromhex(case["values"]), dtype=case["source"]), expected):
            try:
                got = cast(np.array([v]), src, dst, case["rounding"], case["out_of_range"]).tobytes().hex()
            except CodecError:
                got = "error"
            if got != want:
                mismatches.append((case["source"], case["target"], case["rounding"], case["out_of_range"], v.item(),
                                   want, got))
    assert not mismatches, f"{len(mismatches)} differences, e.g. {mismatches[:10]}"


PEER_BYTES = """
    import sys, json, numpy as np, zarr
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "write":
        z = zarr.create_array(path, shape=(5,), dtype="variable_length_bytes", chunks=(2,), compressors=None,
                              fill_value=b"\\x01\\x02\\x03")
        z[:4] = np.array([b"", b"\\x00abc\\xff", b"x" * 300, b"\\n"], dtype=object)
    else:
        z = zarr.open_array(path, mode="r")
        print(json.dumps({"dtype": str(z.metadata.data_type.to_json(3)), "fill": z.fill_value.hex(),
                          "values": [v.hex() for v in z[...].tolist()]}))
"""


def test_bytes_data_type_both_ways(peer, tmp_path):
    """The registry's ``bytes`` type: zarr-python 3.4 reads it (as its variable_length_bytes,
    which it writes), values and fill value; the chunk files are the same either way and
    zarrdask reads zarr-python's array."""
    theirs, ours = str(tmp_path / "theirs.zarr"), str(tmp_path / "ours.zarr")
    values = [b"", b"\x00abc\xff", b"x" * 300, b"\n", b"\x01\x02\x03"]
    _run(peer, PEER_BYTES, theirs, "write")
    a = zarrdask.create_array(ours, shape=(5,), dtype="bytes", chunks=(2,), compressors=None,
                              fill_value=[1, 2, 3])
    a[:4] = np.array(values[:4], dtype=object)
    assert json.loads((Path(ours) / "zarr.json").read_text())["data_type"] == "bytes"
    assert _chunks(ours) == _chunks(theirs)
    seen = json.loads(_run(peer, PEER_BYTES, ours, "read"))
    assert seen == {"dtype": "variable_length_bytes", "fill": "010203", "values": [v.hex() for v in values]}
    b = zarrdask.open_array(theirs)
    assert b.metadata.data_type.name == "variable_length_bytes" and b[...].tolist() == values


def test_zarr_python_reads_record_arrays_migrate_wrote(peer, tmp_path):
    """A Zarr v1 record array (written by zarr 1.1.0) migrated to the registry's ``struct``
    data type reads bit-exact in zarr-python 3.4 (3.1 knows only its own ``structured``)."""
    shutil.copytree(ROOT / "tests" / "data" / "old_formats" / "v1" / "dtype_record", tmp_path / "a")
    want = zarrdask.open_array(tmp_path / "a")[...]
    zarrdask.migrate(tmp_path / "a")
    out = _run(peer, """
        import sys, json, zarr
        got = zarr.open_array(sys.argv[1], mode="r")[...]
        print(json.dumps({"descr": [list(f) for f in got.dtype.descr], "hex": got.tobytes().hex()}))
    """, str(tmp_path / "a"))
    got = json.loads(out)
    assert [tuple(f) for f in got["descr"]] == want.dtype.descr
    assert got["hex"] == want.tobytes().hex()


CONVENIENCE = """
    import sys, json, warnings, numpy as np, zarr
    warnings.simplefilter("ignore")
    root, cases = sys.argv[1], json.loads(sys.argv[2])
    out = []
    for k, case in enumerate(cases):
        fn = getattr(zarr, case["function"])
        args = [case["shape"], case["fill"]] if case["function"] == "full" else [case["shape"]]
        chunks = case["chunks"] if not isinstance(case["chunks"], list) else tuple(case["chunks"])
        a = fn(*args, store=f"{root}/zp{k}.zarr", chunks=chunks, dtype=case["dtype"], zarr_format=case["fmt"])
        out.append({"chunks": list(a.chunks), "fill": float(a.fill_value), "dtype": str(a.dtype),
                    "format": a.metadata.zarr_format})
    zarr.save(f"{root}/saved_by_zarr.zarr", np.arange(7, dtype="i2"))
    out.append(zarr.load(f"{root}/saved_by_zd.zarr").tolist())
    print(json.dumps(out))
"""


def test_convenience_calls_match_zarr_python_34(peer, tmp_path):
    """zeros/ones/full/empty with zarr.create's chunk forms make zarr-python 3.4's arrays, and
    save/load work both ways with it."""
    cases = [{"function": f, "shape": [9, 7], "chunks": c, "dtype": d, "fill": 5, "fmt": fmt}
             for f, c, d, fmt in [("zeros", 4, "f8", 3), ("ones", [3, -1], "i2", 2), ("full", False, "u1", 3),
                                  ("empty", [-1, 2], "f4", 2), ("zeros", [9, 7], "i4", 3)]]
    zarrdask.save(str(tmp_path / "saved_by_zd.zarr"), np.arange(5, dtype="f4"))
    theirs = json.loads(_run(peer, CONVENIENCE, str(tmp_path), json.dumps(cases)))
    for k, case in enumerate(cases):
        args = [case["shape"], case["fill"]] if case["function"] == "full" else [case["shape"]]
        chunks = tuple(case["chunks"]) if isinstance(case["chunks"], list) else case["chunks"]
        a = getattr(zarrdask, case["function"])(*args, store=str(tmp_path / f"zd{k}.zarr"), chunks=chunks,
                                                dtype=case["dtype"], zarr_format=case["fmt"])
        ours = {"chunks": list(a.chunks), "fill": float(a.fill_value), "dtype": str(a.dtype),
                "format": a.metadata.zarr_format}
        assert ours == theirs[k], (case, ours, theirs[k])
    assert theirs[-1] == [0.0, 1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(zarrdask.load(str(tmp_path / "saved_by_zarr.zarr")), np.arange(7, dtype="i2"))


# -- v2 text and bytes arrays' fill values ------------------------------------------------

PEER_OBJECT_FILLS = """
    import sys, json, zarr
    out = []
    for path in json.loads(sys.argv[1]):
        z = zarr.open_array(path, mode="r")
        out.append([v.hex() if isinstance(v, bytes) else v for v in z[...].tolist()])
    print(json.dumps(out))
"""


@settings(derandomize=True, deadline=None, max_examples=8, database=None)
@given(fills=st.lists(st.one_of(
    st.tuples(st.just("vlen-utf8"), st.one_of(st.none(), st.text(), st.booleans(), st.integers(-2**53, 2**53),
                                               st.floats(allow_nan=False, allow_infinity=False))),
    st.tuples(st.just("vlen-bytes"), st.one_of(st.none(), st.binary().map(lambda b: base64.b64encode(b).decode())))),
    min_size=1, max_size=12))
def test_unwritten_items_of_v2_text_and_bytes_arrays_read_as_zarr_python_reads_them(peer, tmp_path_factory, fills):
    """Arrays with one chunk written and one not, fill values drawn as JSON: every item reads
    the same in zarrdask and zarr-python 3.4, the unwritten ones included (zarr-python 3.4
    refuses a number as a bytes array's fill value, so none is drawn there)."""
    root = tmp_path_factory.mktemp("fills")
    paths = []
    for k, (codec, fill) in enumerate(fills):
        path = root / f"a{k}.zarr"
        path.mkdir()
        meta = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|O", "compressor": None,
                "fill_value": fill, "order": "C", "filters": [{"id": codec}]}
        (path / ".zarray").write_text(json.dumps(meta))
        items = np.array([b"a", b"bb"] if codec == "vlen-bytes" else ["a", "bb"], dtype=object)
        (path / "0").write_bytes(numcodecs.get_codec({"id": codec}).encode(items))
        paths.append(str(path))
    theirs = json.loads(_run(peer, PEER_OBJECT_FILLS, json.dumps(paths)))
    ours = [[v.hex() if isinstance(v, bytes) else v for v in zarrdask.open_array(p)[...].tolist()] for p in paths]
    assert ours == theirs


def test_zarr_python_reads_the_fill_values_of_v2_text_and_bytes_arrays_zarrdask_created(peer, tmp_path):
    paths = []
    for k, (dtype, fill) in enumerate([(str, "x"), (str, None), (bytes, b"\x00y"), (bytes, None)]):
        path = str(tmp_path / f"a{k}.zarr")
        a = zarrdask.create_array(path, shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2, fill_value=fill)
        a[3] = "c" if dtype is str else b"c"
        paths.append(path)
    theirs = json.loads(_run(peer, PEER_OBJECT_FILLS, json.dumps(paths)))
    assert theirs == [["x", "x", "x", "c"], ["", "", "", "c"], ["0079", "0079", "0079", "63"], ["", "", "", "63"]]


PEER_V2_DEFAULT_FILLS = """
    import sys, json, numpy as np, zarr
    root, dtypes = sys.argv[1], json.loads(sys.argv[2])
    out = []
    for k, name in enumerate(dtypes):
        dtype = str if name == "str" else np.dtype([tuple(f) for f in name] if isinstance(name, list) else name)
        zarr.create_array(f"{root}/zp{k}.zarr", shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2)
        out.append(json.load(open(f"{root}/zp{k}.zarr/.zarray"))["fill_value"])
    print(json.dumps(out))
"""


def test_v2_arrays_created_without_a_fill_value_get_zarr_python_34s_default(peer, tmp_path):
    """The same ``fill_value`` in the document: zero, NaT for dates and durations, an empty
    item for text (``|S`` is left out: zarrdask spells b"" as the base64 of its item's zero
    bytes, "AAA=", which reads as the same empty value)."""
    dtypes = ["str", "<f4", "<i8", "|b1", "<M8[s]", "<m8[ms]", "<U3", "<c8", [["a", "<i4"], ["b", "<f8"]]]
    theirs = json.loads(_run(peer, PEER_V2_DEFAULT_FILLS, str(tmp_path), json.dumps(dtypes)))
    ours = []
    for k, name in enumerate(dtypes):
        dtype = str if name == "str" else np.dtype([tuple(f) for f in name] if isinstance(name, list) else name)
        zarrdask.create_array(str(tmp_path / f"zd{k}.zarr"), shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2)
        ours.append(json.loads((tmp_path / f"zd{k}.zarr" / ".zarray").read_text())["fill_value"])
    assert ours == theirs
