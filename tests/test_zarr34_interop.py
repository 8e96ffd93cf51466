"""Interop with zarr-python >= 3.4 for the 2026 extensions (the rectilinear chunk grid).

zarr-python 3.2+ needs Python 3.12, so the suite builds a small Python 3.12 environment
with it once (``.venv-py312`` in the repository, ignored by git) and runs the peer in a
subprocess. Without a Python 3.12 interpreter on the machine these tests skip, saying so.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import zarrdask

ROOT = Path(__file__).resolve().parents[1]
ENV = ROOT / ".venv-py312"
ZARR_PEER = "zarr==3.4.2"


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
    check = [str(python), "-c", "import zarr, sys; sys.exit(zarr.__version__ < '3.4')"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(python)
    base = _python312()
    if base is None:
        pytest.skip("no Python 3.12 interpreter on this machine: zarr-python >= 3.4 needs one")
    subprocess.run([base, "-m", "venv", "--clear", str(ENV)], check=True, timeout=300)
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", ZARR_PEER],
                             capture_output=True, text=True, timeout=900)
    if install.returncode != 0:  # the package registry is out of reach: nothing to test against
        pytest.skip(f"could not install {ZARR_PEER} for Python 3.12: {install.stderr.strip()[-300:]}")
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
