"""A user's type checker sees zarrdask: the editable install the README makes (a path, which
mypy and pyright follow) and the public signatures, so ``mypy --strict`` passes a correct
script and flags each mistake of a wrong one where it is made."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

GOOD = '''
from typing import Any

import dask.array as da
import numpy as np
import numpy.typing as npt

import zarrdask

a = zarrdask.create_array({}, shape=(10, 10), dtype="f4", chunks=(5, 5))
values: npt.NDArray[Any] = a[...]
column: npt.NDArray[Any] = a.oindex[:, [1, 3]]
a[0:2] = np.ones((2, 10), dtype="f4")
shape: tuple[int, ...] = a.shape
a.resize((20, 10))
a.resize(20, 10)
x: da.Array = zarrdask.from_zarr(a)
y: da.Array = x + 1
g: zarrdask.Group = zarrdask.open_group({}, mode="w")
b: zarrdask.Array = zarrdask.open_array({}, mode="w", shape=(3,), dtype="i4")
node = zarrdask.open({}, mode="a", shape=5, dtype=np.int16)
'''

BAD = '''
import zarrdask

a = zarrdask.create_array({}, shape="x", dtype=3)  # E: shape, dtype
a.resize("ten")  # E
zarrdask.open_array({}, mode="rw")  # E
count: int = a[...]  # E
name: str = zarrdask.from_zarr(a)  # E
v4 = zarrdask.create_array({}, shape=(3,), dtype="i4", zarr_format=4)  # E
'''


def _mypy(tmp_path: Path, name: str, text: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / name
    script.write_text(text)
    return subprocess.run(  # from a directory outside the repository: zarrdask is found through the install
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
         "--python-executable", sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
        timeout=600)


def test_a_correct_script_passes_mypy_strict(tmp_path: Path) -> None:
    result = _mypy(tmp_path, "good.py", GOOD)
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_mistake_is_flagged_where_it_is_made(tmp_path: Path) -> None:
    result = _mypy(tmp_path, "bad.py", BAD)
    assert "Cannot find implementation" not in result.stdout, result.stdout
    flagged = {int(m.group(1)) for m in re.finditer(r"bad\.py:(\d+): error", result.stdout)}
    marked = {i for i, line in enumerate(BAD.splitlines(), 1) if "# E" in line}
    assert flagged == marked, result.stdout
    assert len(re.findall(r"bad\.py:4: error", result.stdout)) == 2, result.stdout  # shape and dtype
