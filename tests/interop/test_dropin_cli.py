"""``copy`` keeps what it copies and the command line is honest.

copy: every valid corpus case (v2 and v3) and generated arrays come out with the same
metadata documents and the same stored keys and bytes; changed chunks keep the codec
chain; v2 <-> v3 keeps what maps; every option that does not apply is an error and writes
nothing; --dry-run writes nothing; --overwrite. The CLI: --version, exit codes (0 clean,
1 problems, 2 errors) with no traceback, did-you-mean for commands, info --json against
the schema in docs/cli-json.md, verify on arrays whose chunks carry no checksum.
The CLI runs in-process through zarrdask.cli.main; one subprocess checks ``python -m``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.cli import main
from zarrdask.errors import ContainsNodeError, InvalidModeError, MetadataError, ShapeMismatchError

from _util import corpus_dir, load_manifest

MANIFEST = load_manifest()
VALID = [c for c in (MANIFEST["cases"] if MANIFEST else []) if "error" not in c["expect"]]
DOCS = Path(__file__).parents[2] / "docs" / "cli-json.md"


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def files(path: Path) -> dict[str, bytes]:
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()}


def schema(title: str) -> dict:
    """The JSON Schema of ``title`` as documented in docs/cli-json.md."""
    for block in re.findall(r"```json\n(.*?)```", DOCS.read_text(), re.S):
        doc = json.loads(block)
        if doc.get("title") == title:
            return doc
    raise AssertionError(f"docs/cli-json.md documents no schema titled {title!r}")


def values(path: Path) -> dict[str, np.ndarray]:
    """Every array's values below the node at ``path``, by path."""
    out: dict[str, np.ndarray] = {}
    pending = [("", zarrdask.open(path))]
    while pending:
        name, node = pending.pop()
        if isinstance(node, zarrdask.Array):
            out[name] = node[...]
        else:
            pending.extend((f"{name}/{n}", m) for n, m in node.members())
    return out


def assert_same_values(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        x, y = a[name], b[name]
        assert x.shape == y.shape and x.dtype.kind == y.dtype.kind, name
        if x.dtype.kind in "fcmM":
            assert x.tobytes() == y.astype(x.dtype).tobytes(), name
        else:
            assert np.array_equal(x, y), name


@pytest.fixture
def sharded(tmp_path: Path) -> Path:
    """130 shards of 4 chunks with zstd(level 3) > crc32c, dimension names, attributes."""
    path = tmp_path / "sharded.zarr"
    a = zarrdask.create_array(path, shape=(260, 40), dtype="int32", chunks=(2, 20), shards=(4, 20),
                              compressors=[{"name": "zstd", "configuration": {"level": 3, "checksum": False}},
                                           {"name": "crc32c"}],
                              dimension_names=["time", "x"], fill_value=-1, attributes={"units": "K"})
    a[...] = np.arange(260 * 40, dtype="int32").reshape(260, 40)
    return path


# -- copy keeps everything ------------------------------------------------------------------

@pytest.mark.parametrize("case", VALID, ids=[c["id"] for c in VALID])
def test_corpus_copy_is_identical(case: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = corpus_dir() / case["path"]
    code, out, err = run(capsys, "copy", source, tmp_path / "out.zarr", "--no-progress")
    assert code == 0, err
    assert files(tmp_path / "out.zarr") == files(source)  # documents, keys and stored bytes


@pytest.mark.parametrize("case", VALID, ids=[c["id"] for c in VALID])
def test_corpus_copy_to_the_other_format(case: dict, tmp_path: Path) -> None:
    """Values are kept, or the error says what the other format cannot hold (nothing written)."""
    source = corpus_dir() / case["path"]
    target = tmp_path / "out.zarr"
    try:
        zarrdask.copy(source, target, zarr_format=5 - case["zarr_format"])
    except (InvalidModeError, ShapeMismatchError) as exc:
        assert case["zarr_format"] == 3 and "v2" in str(exc) and not target.exists()
        return
    assert_same_values(values(target), values(source))
    assert zarrdask.verify(target).ok


def test_sharded_copy_keeps_layout_and_codecs(sharded: Path, tmp_path: Path) -> None:
    zarrdask.copy(sharded, tmp_path / "out.zarr")
    assert files(tmp_path / "out.zarr") == files(sharded)
    assert len(list((tmp_path / "out.zarr" / "c").rglob("*"))) - 65 == 130  # 130 shards (+ 65 directories)


@st.composite
def generated(draw: st.DrawFn) -> dict:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 12)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    fmt = draw(st.sampled_from([2, 3]))
    compressors = draw(st.sampled_from([
        None, [{"name": "zstd", "configuration": {"level": 5, "checksum": True}}],
        [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 7, "shuffle": "bitshuffle",
                                              "blocksize": 0}}],
        [{"name": "gzip", "configuration": {"level": 2}}]] + ([[{"name": "gzip", "configuration": {"level": 1}},
                                                                {"name": "crc32c"}]] if fmt == 3 else [])))
    shards = None
    if fmt == 3 and draw(st.booleans()):
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    return dict(shape=shape, chunks=chunks, shards=shards, compressors=compressors, zarr_format=fmt,
                dtype=draw(st.sampled_from(["int16", ">f8", "uint8"])), fill_value=draw(st.sampled_from([0, 3])))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=generated(), new=st.integers(1, 5))
def test_generated_copies(spec: dict, new: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("gen")
    kwargs = dict(spec)
    if spec["zarr_format"] == 2:
        kwargs["dtype"] = np.dtype(spec["dtype"])
    a = zarrdask.create_array(base / "src.zarr", dimension_names=[f"d{i}" for i in range(len(spec["shape"]))],
                              attributes={"a": [1, 2]}, **kwargs)
    data = np.arange(int(np.prod(spec["shape"])), dtype=a.dtype).reshape(spec["shape"]) % 7
    a[...] = data
    zarrdask.copy(base / "src.zarr", base / "same.zarr")
    assert files(base / "same.zarr") == files(base / "src.zarr")
    # new chunks: the chain (and every other field) stays, only the grid changes
    chunks = (new,) * a.ndim
    shards = None if a.shards is None else tuple(c * 2 for c in chunks)
    copied = zarrdask.copy(base / "src.zarr", base / "rechunked.zarr", chunks=chunks,
                           **({} if shards is None else {"shards": shards}))
    assert copied.chunks == chunks and copied.shards == shards
    np.testing.assert_array_equal(copied[...], data)
    before, after = a.metadata.to_json(), copied.metadata.to_json()
    if a.zarr_format == 3:
        inner = (lambda d: d["codecs"][0]["configuration"] if shards else d)
        assert inner(after)["codecs"] == inner(before)["codecs"]
        drop = {"chunk_grid", "codecs"}
        assert {k: v for k, v in after.items() if k not in drop} == {k: v for k, v in before.items() if k not in drop}
    else:
        assert {**after, "chunks": None} == {**before, "chunks": None}
        assert copied.attrs == a.attrs


def test_rechunk_keeps_sharding_codecs(sharded: Path, tmp_path: Path) -> None:
    copied = zarrdask.copy(sharded, tmp_path / "out.zarr", chunks=(1, 10))
    src = zarrdask.open_array(sharded)
    assert copied.shards == (4, 20) and copied.chunks == (1, 10)
    config = lambda a: {k: v for k, v in a.codecs[0]["configuration"].items() if k != "chunk_shape"}  # noqa: E731
    assert config(copied) == config(src)
    assert copied.fill_value == -1 and copied.attrs == {"units": "K"} and copied.dimension_names == ("time", "x")
    np.testing.assert_array_equal(copied[...], src[...])


def test_v2_to_v3_keeps_the_chunk_bytes(tmp_path: Path) -> None:
    source = corpus_dir() / "cases/v2-xarray-dims-attrs-zp/data.zarr"
    copied = zarrdask.copy(source, tmp_path / "v3.zarr", zarr_format=3)
    migrated = tmp_path / "migrated.zarr"
    zarrdask.copy(source, migrated)
    zarrdask.migrate(migrated)
    assert files(tmp_path / "v3.zarr") == files(migrated)  # what migrate writes: same keys, same chunk bytes
    assert copied.zarr_format == 3
    assert_same_values(values(tmp_path / "v3.zarr"), values(source))


def test_v3_to_v2_keeps_what_maps(tmp_path: Path) -> None:
    source = tmp_path / "v3.zarr"
    a = zarrdask.create_array(source, shape=(9, 7), dtype="i4", chunks=(4, 4), dimension_names=["y", "x"],
                              serializer={"name": "bytes", "configuration": {"endian": "big"}},
                              compressors=[{"name": "blosc", "configuration": {"cname": "zstd", "clevel": 4,
                                                                                "shuffle": "shuffle", "blocksize": 0}}],
                              attributes={"title": "t"}, fill_value=5)
    a[...] = np.arange(63).reshape(9, 7)
    v2 = zarrdask.copy(source, tmp_path / "v2.zarr", zarr_format=2)
    zarray = json.loads((tmp_path / "v2.zarr" / ".zarray").read_text())
    assert zarray["dtype"] == ">i4" and zarray["chunks"] == [4, 4] and zarray["fill_value"] == 5
    assert zarray["compressor"] == {"id": "blosc", "cname": "zstd", "clevel": 4, "shuffle": 1, "blocksize": 0}
    assert v2.attrs == {"title": "t", "_ARRAY_DIMENSIONS": ["y", "x"]} and v2.dimension_names == ("y", "x")
    np.testing.assert_array_equal(v2[...], a[...])


def test_group_copy_with_new_chunks_keeps_consolidated_metadata_true(tmp_path: Path) -> None:
    source = corpus_dir() / "cases/v3-group-consolidated-zp/data.zarr"
    zarrdask.copy(source, tmp_path / "out.zarr", chunks=(1,), shards=None)
    assert zarrdask.verify(tmp_path / "out.zarr").ok
    assert zarrdask.open_group(tmp_path / "out.zarr").attrs == zarrdask.open_group(source).attrs
    assert_same_values(values(tmp_path / "out.zarr"), values(source))


# -- every option applies or is an error ----------------------------------------------------

BAD = [  # (arguments, error class, what the message says)
    (["--chunks", "16,16,16"], ShapeMismatchError, "3 sizes for array '/' of 2 dimension(s)"),
    (["--chunks", "lat=10"], ShapeMismatchError, "no dimension 'lat' (its dimension names are ['time', 'x'])"),
    (["--chunks", "16,16", "--shards", "20,20"], ShapeMismatchError,
     "shards 20,20 are not multiples of chunks 16,16: use 16,16 or 32,32"),
    (["--chunks", "3,20"], ShapeMismatchError, "chunks 3,20 do not divide its shards 4,20: pass shards too"),
    (["--shards", "5,20"], ShapeMismatchError, "shards 5,20 are not multiples of chunks 2,20 (the source's)"),
    (["--zarr-format", "2"], ShapeMismatchError, "Zarr v2 has no shards and this array is sharded"),
    (["--zarr-format", "2", "--shards", "4,20"], ShapeMismatchError, "Zarr v2 has no shards"),
    (["--zarr-format", "2", "--chunks", "2,20"], InvalidModeError, "Zarr v2 keeps one compressor"),
    (["--codecs", "bytes"], MetadataError, "not a compressor"),
    (["--codecs", "zstdd"], MetadataError, "did you mean 'zstd'"),
    (["--chunks", "0,5"], ShapeMismatchError, "sizes must be positive integers or -1"),
]


@pytest.mark.parametrize("args, error, message", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_options_are_errors_that_write_nothing(args: list[str], error: type, message: str, sharded: Path,
                                                   tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "out.zarr"
    code, out, err = run(capsys, "copy", sharded, target, "--no-progress", *args)
    assert code == 2 and message in err and "Traceback" not in err, err
    assert not target.exists()
    from zarrdask.cli.copy import _codecs, _shape, _shards

    kwargs = {}
    for flag, name, parse in (("--chunks", "chunks", _shape), ("--shards", "shards", _shards),
                              ("--codecs", "compressors", _codecs), ("--zarr-format", "zarr_format", int)):
        if flag in args:
            kwargs[name] = parse(args[args.index(flag) + 1])
    with pytest.raises(error, match=re.escape(message)):
        zarrdask.copy(sharded, target, **kwargs)
    assert not target.exists()


def test_spec_that_fits_no_array_of_a_group(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = corpus_dir() / "cases/xarray-climate-v2/data.zarr"
    code, _, err = run(capsys, "copy", source, tmp_path / "o.zarr", "--chunks", "depth=3")
    assert code == 2 and "no array has a dimension named 'depth'; the dimension names are [" in err
    code, _, err = run(capsys, "copy", source, tmp_path / "o.zarr", "--chunks", "1,2,3,4,5")
    assert code == 2 and "5 sizes, but the arrays have" in err
    assert not (tmp_path / "o.zarr").exists()


def test_bad_argument_syntax_is_an_argparse_error(sharded: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    code, _, err = run(capsys, "copy", sharded, tmp_path / "o.zarr", "--chunks", "a,b")
    assert code == 2 and "argument --chunks: expected sizes" in err


# -- dry run and overwrite ------------------------------------------------------------------

def test_dry_run_writes_nothing(sharded: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "out.zarr"
    code, out, _ = run(capsys, "copy", sharded, target, "--dry-run", "--json", "--chunks", "4,40", "--shards", "none")
    assert code == 0 and not target.exists()
    plan = json.loads(out)
    jsonschema.validate(plan, schema("zarrdask copy --dry-run --json"))
    [array] = plan["arrays"]
    assert array["action"] == "rewrite"
    assert (array["before"]["units_stored"], array["before"]["units_total"], array["before"]["shards"]) == \
        (130, 130, [4, 20])
    assert (array["after"]["units_total"], array["after"]["chunks"], array["after"]["shards"]) == (65, [4, 40], None)
    assert array["before"]["bytes_stored"] == sum(len(b) for k, b in files(sharded).items() if k.startswith("c"))
    code, out, _ = run(capsys, "copy", sharded, target, "--dry-run")
    assert code == 0 and "copy bytes" in out and "dry run: nothing written" in out and not target.exists()
    plan = zarrdask.copy(sharded, target, dry_run=True)
    assert plan.unchanged and not target.exists()


def test_overwrite(sharded: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "out.zarr"
    target.mkdir()
    (target / "old.txt").write_text("old")
    code, _, err = run(capsys, "copy", sharded, target, "--no-progress")
    assert code == 2 and "is not empty: pass overwrite=True (--overwrite)" in err
    assert files(target) == {"old.txt": b"old"}
    with pytest.raises(ContainsNodeError):
        zarrdask.copy(sharded, target, dry_run=True)  # the plan says so too
    assert zarrdask.copy(sharded, target, dry_run=True, overwrite=True).unchanged
    assert files(target) == {"old.txt": b"old"}
    assert run(capsys, "copy", sharded, target, "--no-progress", "--overwrite")[0] == 0
    assert files(target) == files(sharded)


# -- the command line -----------------------------------------------------------------------

def test_version(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"zarrdask {zarrdask.__version__}"
    result = subprocess.run([sys.executable, "-m", "zarrdask", "--version"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == f"zarrdask {zarrdask.__version__}"


def test_exit_codes(sharded: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    missing = tmp_path / "missing.zarr"
    for command in ("info", "tree", "verify", "migrate"):
        code, _, err = run(capsys, command, missing)
        assert code == 2 and "error: no array or group" in err and "Traceback" not in err, (command, err)
    code, _, err = run(capsys, "copy", missing, tmp_path / "o.zarr")
    assert code == 2 and "no array or group" in err
    code, _, err = run(capsys, "verify", sharded, "--sample", "-1")
    assert code == 2 and "argument --sample: expected 0 or more, got -1" in err and "Traceback" not in err
    code, _, err = run(capsys, "verfy", sharded)
    assert code == 2 and "(did you mean 'verify'?)" in err
    assert run(capsys, "verify", sharded, "--no-progress")[0] == 0
    shard = sharded / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    data[10] ^= 0x01
    shard.write_bytes(bytes(data))
    code, out, _ = run(capsys, "verify", sharded, "--no-progress")
    assert code == 1 and "c/0/0: chunk:" in out


def test_info_json_follows_the_documented_schema(sharded: Path, capsys: pytest.CaptureFixture) -> None:
    doc_schema = schema("zarrdask info --json")
    for path in (sharded, corpus_dir() / "cases/v2-group-hierarchy-zp/data.zarr",
                 corpus_dir() / "cases/v3-group-consolidated-zp/data.zarr"):
        code, out, _ = run(capsys, "info", path, "--json")
        assert code == 0
        jsonschema.validate(json.loads(out), doc_schema)
    doc = json.loads(run(capsys, "info", sharded, "--json")[1])["/"]
    a = zarrdask.open_array(sharded)
    assert doc["bytes"] == a.nbytes == 260 * 40 * 4
    assert (doc["chunks_stored"], doc["chunks_total"], doc["shards_stored"], doc["shards_total"]) == (260, 260, 130, 130)
    assert doc["bytes_stored"] == sum(len(b) for k, b in files(sharded).items() if k.startswith("c"))
    assert doc["fill_value"] == -1 and doc["attributes"] == {"units": "K"} and doc["shard_shape"] == [4, 20]
    assert doc["compression_ratio"] == round(a.nbytes / doc["bytes_stored"], 4)
    zarrdask.create_array(sharded.parent / "empty.zarr", shape=(10,), dtype="u1", chunks=(1,))
    doc = json.loads(run(capsys, "info", sharded.parent / "empty.zarr", "--json")[1])["/"]
    assert (doc["bytes"], doc["chunks_stored"], doc["chunks_total"], doc["compression_ratio"]) == (10, 0, 10, None)


def test_verify_says_what_it_cannot_check(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "g.zarr"
    root = zarrdask.create_group(path)
    raw = root.create_array("raw", shape=(8,), dtype="uint8", chunks=(8,), compressors=None)
    raw[...] = np.arange(8)
    checked = root.create_array("checked", shape=(8,), dtype="uint8", chunks=(8,), compressors=["crc32c"])
    checked[...] = np.arange(8)
    (path / "raw" / "c" / "0").write_bytes(bytes([9] * 8))  # a change that still decodes
    code, out, _ = run(capsys, "verify", path, "--no-progress")
    assert code == 0 and out.startswith("OK")
    assert "not verifiable beyond decoding: 1 array(s) whose chunks carry no checksum" in out and out.rstrip().endswith(
        ": raw")
    code, out, _ = run(capsys, "verify", path, "--json")
    report = json.loads(out)
    jsonschema.validate(report, schema("zarrdask verify --json"))
    assert report["ok"] and report["not_verifiable_beyond_decoding"] == ["raw"]
    blob = bytearray((path / "checked" / "c" / "0").read_bytes())
    blob[0] ^= 0x01
    (path / "checked" / "c" / "0").write_bytes(bytes(blob))
    code, out, _ = run(capsys, "verify", path, "--no-progress")
    assert code == 1 and "checked/c/0: chunk:" in out
