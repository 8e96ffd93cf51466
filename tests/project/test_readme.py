"""The README's examples run as written: each Python block on its own in a fresh process
(as a reader pastes it into a new session), and the command lines after them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
CLI_LINES = [line.split(" #")[0].strip() for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
             for line in block.splitlines() if line.startswith("zarrdask ")]


def _run_block(code: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
                            env=env)
    assert result.returncode == 0, f"{code}\n--- stderr ---\n{result.stderr}"


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example(code: str, tmp_path: Path) -> None:
    """Each block alone, in an empty directory and a fresh interpreter."""
    _run_block(code, tmp_path)


def test_readme_command_lines(tmp_path: Path) -> None:
    """The command-line examples run as written, after the Python examples made their stores."""
    assert {line.split()[1] for line in CLI_LINES} >= {"info", "tree", "verify", "migrate", "copy"}
    for code in BLOCKS:
        _run_block(code, tmp_path)
    script = Path(sys.executable).with_name("zarrdask")
    for line in CLI_LINES:
        result = subprocess.run([str(script), *line.split()[1:]], cwd=tmp_path, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
