"""``verify`` (the fsck): every valid corpus case is clean, every error case and every
corruption of a good store is reported with its key; ``--fix`` repairs what it may.
The corpus sweep calls the library function; corruptions go through the CLI (``zarrdask.cli.main``
in a process of its own, tests/_cli.py; one check runs ``python -m zarrdask``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.tools.verify import verify

from _cli import CliProcess
from _util import corpus_dir, load_manifest

MANIFEST = load_manifest()
CASES = MANIFEST["cases"] if MANIFEST else []
ERROR_KEY = {  # where each must-fail case's problem lies
    "v3-err-crc32c-mismatch-zp": "c/1/0",
}


#: the command line, in one process for the module (tests/_cli.py); the first call of
#: test_clean_store_exits_zero is ``python -m zarrdask`` itself, into a pipe
cli = CliProcess()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_corpus_case(case: dict) -> None:
    report = verify(corpus_dir() / case["path"])
    if "error" in case["expect"]:
        assert not report.ok
        keys = {f.key for f in report.findings}
        assert keys == {ERROR_KEY.get(case["id"], "zarr.json")}, report.findings
        assert all(f.problem for f in report.findings)
    else:
        assert report.ok, [str(f) for f in report.findings]
        assert report.units_checked == report.units_stored and report.arrays >= 1


def test_corpus_counts() -> None:
    assert len(CASES) == 183 and sum("error" in c["expect"] for c in CASES) == 9


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A consolidated v3 group: a sharded array with crc32c-checked inner chunks, a plain one."""
    path = tmp_path / "good.zarr"
    root = zarrdask.create_group(path)
    a = root.create_array("sharded", shape=(40, 30), dtype="float32", chunks=(10, 10), shards=(20, 30),
                          compressors=[{"name": "zstd"}, {"name": "crc32c"}])
    a[...] = np.arange(1200, dtype="float32").reshape(40, 30)
    b = root.create_array("plain", shape=(10,), dtype="int16", chunks=(5,), compressors=[{"name": "crc32c"}])
    b[...] = np.arange(10)
    zarrdask.consolidate_metadata(path)
    return path


def _report(result: subprocess.CompletedProcess) -> dict:
    return json.loads(result.stdout)


def test_clean_store_exits_zero(store: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "zarrdask", "verify", str(store)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("OK") and result.stderr == ""  # no bar into a pipe
    doc = _report(cli("verify", str(store), "--json"))
    assert doc["ok"] and doc["arrays"] == 2 and doc["units_checked"] == doc["units_stored"] == 4


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["inner chunk", "index"])
def test_flipped_byte(store: Path, where: str) -> None:
    shard = store / "sharded" / "c" / "1" / "0"
    _flip(shard, 3 if where == "inner chunk" else os.path.getsize(shard) - 5)
    result = cli("verify", str(store))
    assert result.returncode == 1
    assert "sharded/c/1/0: chunk:" in result.stdout and "crc32c" in result.stdout


def test_flipped_byte_plain_chunk(store: Path) -> None:
    _flip(store / "plain" / "c" / "1", 0)
    result = cli("verify", str(store), "--json")
    assert result.returncode == 1
    (finding,) = _report(result)["findings"]
    assert finding["key"] == "plain/c/1" and "checksum" in finding["problem"]


def test_truncated_shard(store: Path) -> None:
    shard = store / "sharded" / "c" / "0" / "0"
    shard.write_bytes(shard.read_bytes()[:-30])
    result = cli("verify", str(store))
    assert result.returncode == 1 and "sharded/c/0/0: chunk:" in result.stdout


def test_deleted_index(store: Path) -> None:
    shard = store / "sharded" / "c" / "0" / "0"
    index_size = 2 * 16 * 3 + 4  # (2 x 3 inner chunks) x (offset, nbytes) uint64 + crc32c
    shard.write_bytes(shard.read_bytes()[:-index_size])
    (finding,) = _report(cli("verify", str(store), "--json"))["findings"]
    assert finding["key"] == "sharded/c/0/0" and finding["kind"] == "chunk"


def test_index_out_of_bounds(tmp_path: Path) -> None:
    """An index with a valid checksum that points outside the shard; chunks sharing bytes are no finding."""
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=(4,), dtype="uint8", chunks=(2,), shards=(4,),
                              compressors=None)
    a[...] = [1, 2, 3, 4]
    codec = a.units.pipeline.array_bytes
    blob = (tmp_path / "a.zarr" / "c" / "0").read_bytes()
    table = np.array(codec.index_of(blob, "c/0").table())
    for name, change in [("outside", (1, 0, 99)), ("shared", (1, 0, 0))]:
        bad = table.copy()
        bad[change[:2]] = change[2]
        (tmp_path / "a.zarr" / "c" / "0").write_bytes(blob[:4] + codec.index_pipeline.encode(bad))
        findings = verify(tmp_path / "a.zarr").findings
        if name == "shared":
            assert findings == []
            continue
        (finding,) = findings
        assert finding.key == "c/0" and "outside" in finding.problem


def test_index_entry_beyond_the_array_edge(tmp_path: Path) -> None:
    """A clipped shard's entry for an inner chunk past the array's edge is looked up by no
    read, but a resize would expose it: verify checks it too, and reads of the array stay."""
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=(3,), dtype="uint8", chunks=(1,), shards=(4,),
                              compressors=None, fill_value=0)
    a[...] = [1, 2, 3]
    codec = a.units.pipeline.array_bytes
    blob = (tmp_path / "a.zarr" / "c" / "0").read_bytes()
    table = np.array(codec.index_of(blob, "c/0").table())
    table[3] = (0, 99)  # (inner chunk 3 lies past the edge of an array of 3)
    (tmp_path / "a.zarr" / "c" / "0").write_bytes(blob[:3] + codec.index_pipeline.encode(table))
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "a.zarr")[1:], [2, 3])
    (finding,) = verify(tmp_path / "a.zarr").findings
    assert finding.key == "c/0" and "inner chunk (3,)" in finding.problem and "outside" in finding.problem


def test_orphans(store: Path) -> None:
    (store / "sharded" / "c" / "9").mkdir()
    (store / "sharded" / "c" / "9" / "9").write_bytes(b"x")
    (store / "notes.txt").write_text("hello")
    (store / "empty-dir-with-file").mkdir()
    (store / "empty-dir-with-file" / "x").write_bytes(b"")
    result = cli("verify", str(store), "--json")
    assert result.returncode == 1
    found = {f["key"]: f["kind"] for f in _report(result)["findings"]}
    assert found == {"sharded/c/9/9": "orphan", "notes.txt": "orphan", "empty-dir-with-file/x": "orphan"}


def test_temporary_file_and_fix(store: Path) -> None:
    tmp = store / "plain" / "c" / f".1.{'ab' * 16}.tmp"
    tmp.write_bytes(b"partial")
    result = cli("verify", str(store))
    assert result.returncode == 1 and f"plain/c/{tmp.name}: temporary:" in result.stdout
    fixed = cli("verify", str(store), "--fix")
    assert fixed.returncode == 0 and f"fixed: plain/c/{tmp.name}" in fixed.stdout
    assert not tmp.exists() and cli("verify", str(store)).returncode == 0


def test_remove_temporary_files(store: Path) -> None:
    names = [store / f".zarr.json.{'0' * 32}.tmp", store / "sharded" / "c" / "0" / f".0.{'f' * 32}.tmp"]
    for name in names:
        name.write_bytes(b"")
    (store / ".not-ours.tmp").write_bytes(b"")  # not the pattern atomic writes use: left alone
    assert zarrdask.remove_temporary_files(store) == sorted(
        str(n.relative_to(store)).replace(os.sep, "/") for n in names)
    assert not any(n.exists() for n in names) and (store / ".not-ours.tmp").exists()
    assert zarrdask.remove_temporary_files(zarrdask.open_store(store, mode="a")) == []


@pytest.mark.parametrize("change", ["array removed", "array added", "attribute changed"])
def test_stale_consolidated_metadata(store: Path, tmp_path: Path, change: str) -> None:
    if change == "array removed":
        shutil.rmtree(store / "plain")
    elif change == "array added":
        zarrdask.create_array(tmp_path / "other.zarr", shape=(3,), dtype="i1", chunks=(3,))
        shutil.copytree(tmp_path / "other.zarr", store / "extra")
    else:
        doc = json.loads((store / "plain" / "zarr.json").read_text())
        doc["attributes"]["units"] = "m"
        (store / "plain" / "zarr.json").write_text(json.dumps(doc))
    result = cli("verify", str(store), "--json")
    assert result.returncode == 1
    (finding,) = _report(result)["findings"]
    assert finding["key"] == "zarr.json" and finding["kind"] == "consolidated" and "stale" in finding["problem"]
    assert cli("verify", str(store), "--fix").returncode == 0
    assert cli("verify", str(store)).returncode == 0


def test_stale_v2_consolidated_metadata(tmp_path: Path) -> None:
    path = tmp_path / "v2.zarr"
    shutil.copytree(corpus_dir() / "cases" / "v2-group-consolidated-zp" / "data.zarr", path)
    assert verify(path).ok
    (path / "c" / ".zattrs").write_text(json.dumps({"_ARRAY_DIMENSIONS": ["c_0", "c_1"], "new": 1}))
    (finding,) = verify(path).findings
    assert finding.key == ".zmetadata" and "'c'" in finding.problem
    report = verify(path, fix=True)
    assert report.ok and report.fixed == [finding] and verify(path).ok


def test_sample(store: Path) -> None:
    _flip(store / "plain" / "c" / "1", 0)
    doc = _report(cli("verify", str(store), "--sample", "1", "--json"))
    assert doc["units_stored"] == 4 and doc["units_checked"] == 2  # one per array


def test_not_a_store(tmp_path: Path) -> None:
    empty = cli("verify", str(tmp_path))  # nothing stored: an error, as for info
    assert empty.returncode == 2 and "no array or group" in empty.stderr
    (tmp_path / "stray.txt").write_text("x")  # keys, but no node: a problem found
    result = cli("verify", str(tmp_path))
    assert result.returncode == 1 and "no Zarr array or group" in result.stdout


@pytest.mark.parametrize("old", ["v1", "draft", "n5"])
def test_an_older_format_is_refused_by_name_not_reported_as_orphans(old, tmp_path):
    """verify checks Zarr v2 and v3; an older format's keys are none of theirs, so it was
    reported as every key an orphan. It is refused, naming the format and migrate."""
    import shutil

    from zarrdask.errors import InvalidModeError

    data = Path(__file__).resolve().parents[1] / "data" / "old_formats"
    if old == "v1":
        store = data / "v1" / "dtype_float32be"
    elif old == "draft":
        store = data / "v3draft" / "store.zr3"
    else:
        store = tmp_path / "c.n5"
        zarrdask.create_array(store, shape=(4, 6), dtype="i2", chunks=(2, 3))[...] = np.arange(24).reshape(4, 6)
    with pytest.raises(InvalidModeError, match=r"(Zarr v1|v3\.0 draft|N5).*which verify does not check.*migrate"):
        zarrdask.verify(store)
    if old == "v1":  # the fix it names works
        shutil.copytree(store, tmp_path / "v1")
        zarrdask.migrate(tmp_path / "v1")
        assert zarrdask.verify(tmp_path / "v1").ok


def _refused_by_strict_json(path: Path) -> set[str]:
    """The metadata documents under ``path`` a strict JSON reader refuses (NaN, Infinity)."""

    def refuse(token: str) -> None:
        raise ValueError(token)

    refused = set()
    for doc in path.rglob("*"):
        if doc.name in ("zarr.json", ".zattrs", ".zarray", ".zgroup", ".zmetadata"):
            try:
                json.loads(doc.read_bytes(), parse_constant=refuse)
            except ValueError:
                refused.add(doc.relative_to(path).as_posix())
    return refused


@settings(derandomize=True, deadline=None, max_examples=40, database=None)
@given(st.recursive(st.one_of(st.floats(), st.integers(-10, 10), st.text(max_size=3), st.none()),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=6),
       st.sampled_from([2, 3]))
def test_attributes_strict_json_readers_refuse_are_listed_not_reported(value, zarr_format) -> None:
    """NaN and ±Infinity in attributes are listed with their node and place, as a note (the
    report stays ok): exactly when a strict JSON reader refuses a document of the node."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.zarr"
        g = zarrdask.create_group(path, zarr_format=zarr_format, attributes={"v": value})
        g.create_array("a", shape=(2,), dtype="f4", chunks=(2,), attributes={"w": [1, value]})
        report = verify(path)
        assert report.ok and report.findings == []
        refused = _refused_by_strict_json(path)
        assert bool(report.not_strict_json) == bool(refused)
        if refused:
            assert any(p.startswith("/: attributes['v']") for p in report.not_strict_json)
            assert any(p.startswith("a: attributes['w'][1]") for p in report.not_strict_json)
            assert "TensorStore" in repr(report) and report.to_json()["not_strict_json"] == report.not_strict_json


def test_nan_attributes_named_by_the_command_line(tmp_path: Path) -> None:
    g = zarrdask.create_group(tmp_path / "g.zarr", attributes={"missing_value": float("nan")})
    g.create_array("t", shape=(2,), dtype="f4", chunks=(2,), attributes={"range": [0.0, float("-inf")]})
    result = cli("verify", str(tmp_path / "g.zarr"))
    assert result.returncode == 0, result.stderr
    assert "/: attributes['missing_value']" in result.stdout and "t: attributes['range'][1]" in result.stdout
    assert "TensorStore" in result.stdout
