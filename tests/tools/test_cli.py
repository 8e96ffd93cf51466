"""The ``zarrdask`` command line, run outside the test process: help everywhere, info and tree
(text and JSON), copy (v2 -> v3 sharded of the xarray corpus cases round-trips under
xarray; on a distributed cluster with --scheduler); the console script is installed.
The console script, ``python -m zarrdask --help`` and the copy on a cluster run as processes
of their own; the other calls go to one process for the module that runs ``zarrdask.cli.main``
(tests/_cli.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import distributed
import numpy as np
import pytest
import xarray as xr

import zarrdask

from _cli import CliProcess
from _util import corpus_dir

COMMANDS = ["info", "tree", "verify", "migrate", "copy"]
XARRAY_V2 = ["xarray-climate-v2", "v2-netcdf-c-zp-float32", "v2-group-hierarchy-zp", "v2-group-consolidated-zp"]


def python_m(*args: str) -> subprocess.CompletedProcess:
    """``python -m zarrdask *args``, a process of its own."""
    return subprocess.run([sys.executable, "-m", "zarrdask", *args], capture_output=True, text=True, timeout=300)


#: every other call: the command line in one process for the module (tests/_cli.py)
cli = CliProcess()


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help(command: str | None) -> None:
    result = (cli if command else python_m)(*([command] if command else []), "--help")
    assert result.returncode == 0 and "usage: zarrdask" in result.stdout
    if command is None:
        assert all(c in result.stdout for c in COMMANDS)


def test_console_script() -> None:
    script = Path(sys.executable).with_name("zarrdask")
    result = subprocess.run([str(script), "tree", str(corpus_dir() / "cases/v2-group-hierarchy-zp/data.zarr")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["/", "├── c (3, 3) uint8", "└── sub", "    ├── b (7,) float64",
                                          "    └── inner", "        └── a (5, 6) int32"]


@pytest.fixture
def sharded(tmp_path: Path) -> Path:
    path = tmp_path / "s.zarr"
    a = zarrdask.create_array(path, shape=(40, 30), dtype="float32", chunks=(10, 10), shards=(20, 30),
                              dimension_names=["y", "x"], fill_value=float("nan"))
    a[:20] = 1.5
    return path


def test_info(sharded: Path) -> None:
    result = cli("info", str(sharded))
    assert result.returncode == 0
    text = result.stdout
    for line in ("Shape             : [40, 30]", "Chunk shape       : [10, 10]", "Shard shape       : [20, 30]",
                 "Chunks stored     : 6 of 12", "Shards stored     : 1 of 2", "Dimension names   : [\"y\", \"x\"]",
                 "Fill value        : NaN"):
        assert line in text, text
    assert "sharding_indexed[bytes > zstd; index: bytes > crc32c]" in text
    doc = json.loads(cli("info", str(sharded), "--json").stdout)["/"]
    assert doc["data_type"] == "float32" and doc["unit_grid"] == [2, 1]
    assert doc["compression_ratio"] > 1


def test_info_group_and_errors(tmp_path: Path) -> None:
    doc = json.loads(cli("info", str(corpus_dir() / "cases/v2-group-hierarchy-zp/data.zarr"), "--json").stdout)
    assert list(doc) == ["/", "/c", "/sub/b", "/sub/inner/a"]
    assert doc["/"]["arrays"] == 1 and doc["/sub/inner/a"]["chunks_total"] == 6
    missing = cli("info", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "error: no array or group" in missing.stderr


def test_tree_json() -> None:
    doc = json.loads(cli("tree", str(corpus_dir() / "cases/v2-group-hierarchy-zp/data.zarr"), "--json").stdout)
    assert doc["members"][0] == {"name": "c", "node_type": "array", "shape": [3, 3], "dtype": "uint8"}
    assert doc["members"][1]["members"][1]["members"][0]["name"] == "a"


def _open(path: Path, engine: str) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (unconsolidated sources)
        return xr.open_dataset(path, engine=engine).load()


@pytest.mark.parametrize("case", XARRAY_V2)
def test_copy_v2_to_v3_sharded_round_trips_under_xarray(case: str, tmp_path: Path) -> None:
    source = corpus_dir() / "cases" / case / "data.zarr"
    target = tmp_path / "out.zarr"
    result = cli("copy", str(source), str(target), "--zarr-format", "3", "--shards=-1", "--chunks=2",
                 "--codecs", "zstd,crc32c")
    assert result.returncode == 0, result.stderr
    original = _open(source, "zarr")
    for engine in ("zarrdask", "zarr"):
        xr.testing.assert_identical(_open(target, engine), original)
    arrays = {name: a for name, a in zarrdask.open_group(target).arrays()}
    assert all(a.zarr_format == 3 for a in arrays.values())
    # --shards=-1: each dimension whole, rounded up to a multiple of the chunks asked for
    assert arrays and all(a.shards == tuple(-(-n // 2) * 2 for n in a.shape) and a.chunks == (2,) * a.ndim
                          for a in arrays.values() if a.ndim)
    assert zarrdask.verify(target).ok


def test_copy_rechunk_by_name_on_a_cluster(tmp_path: Path) -> None:
    source = corpus_dir() / "cases/xarray-climate-v2/data.zarr"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        result = python_m("copy", str(source), str(tmp_path / "out.zarr"), "--shards", "time=10,lat=6,lon=8",
                     "--chunks", "time=5", "--zarr-format", "3", "--scheduler", cluster.scheduler_address)
    assert result.returncode == 0, result.stderr
    temperature = zarrdask.open_array(tmp_path / "out.zarr", path="temperature")
    assert temperature.shards == (10, 6, 8)
    assert temperature.chunks == (5, 3, 8)
    np.testing.assert_array_equal(temperature[...], zarrdask.open_array(source, path="temperature")[...])


def test_copy_refuses_shards_in_v2(tmp_path: Path) -> None:
    source = corpus_dir() / "cases/xarray-climate-v2/data.zarr"
    result = cli("copy", str(source), str(tmp_path / "o.zarr"), "--shards", "10,6,8", "--no-progress")
    assert result.returncode == 2 and "no shards" in result.stderr


def test_copy_v3_to_v2_round_trips(tmp_path: Path) -> None:
    source = corpus_dir() / "cases/xarray-climate-v3/data.zarr"
    assert cli("copy", str(source), str(tmp_path / "v2.zarr"), "--zarr-format", "2").returncode == 0
    xr.testing.assert_identical(_open(tmp_path / "v2.zarr", "zarr"), _open(source, "zarr"))


@pytest.mark.s3
def test_copy_and_migrate_take_storage_options_of_source_and_target(s3_endpoint, tmp_path, capsys):
    """A target (or source) on an object store of its own endpoint, from the command line:
    --storage-option applies to SRC, --target-storage-option to DST / --target."""
    import json as _json
    import uuid

    from _s3 import BUCKET, s3_storage_options

    from zarrdask.cli import main

    options = s3_storage_options(s3_endpoint)
    flags = [f"key={options['key']}", f"secret={options['secret']}",
             "client_kwargs=" + _json.dumps(options["client_kwargs"])]
    data = np.arange(60, dtype="i4").reshape(6, 10)
    zarrdask.create_array(tmp_path / "a.zarr", shape=data.shape, dtype="i4", chunks=(3, 5))[...] = data
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/a.zarr"
    assert main(["copy", str(tmp_path / "a.zarr"), url, *(a for f in flags for a in ("--target-storage-option", f)),
                 "--no-progress"]) == 0
    np.testing.assert_array_equal(zarrdask.open_array(url, storage_options=options)[...], data)
    assert main(["copy", url, str(tmp_path / "back.zarr"), *(a for f in flags for a in ("--storage-option", f)),
                 "--no-progress"]) == 0
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "back.zarr")[...], data)
    n5 = tmp_path / "c.n5"
    zarrdask.create_array(n5, shape=data.shape, dtype="i4", chunks=(3, 5))[...] = data
    target = f"s3://{BUCKET}/{uuid.uuid4().hex}/c.zarr"
    assert main(["migrate", str(n5), "--target", target,
                 *(a for f in flags for a in ("--target-storage-option", f))]) == 0
    np.testing.assert_array_equal(zarrdask.open_array(target, storage_options=options)[...], data)
    capsys.readouterr()
