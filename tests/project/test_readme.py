"""The README's examples run as written: each Python block on its own in a fresh process
(as a reader pastes it into a new session), and the command lines after them."""

from __future__ import annotations

import json
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


#: run in one fresh interpreter: each README block in a namespace of its own, in order, in
#: the current directory (as a reader pastes them one after another)
_ALL_BLOCKS = """
import json, sys
for code in json.loads(sys.stdin.read()):
    exec(compile(code, "<README block>", "exec"), {"__name__": "__main__"})
"""

#: run in another fresh interpreter: each command line's arguments through the console
#: script's function, zarrdask.cli.main (the script itself: tests/tools/test_cli.py);
#: prints each line's exit code, stdout and stderr
_ALL_LINES = """
import contextlib, io, json, sys
from zarrdask.cli import main
results = []
for argv in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def test_readme_command_lines(tmp_path: Path) -> None:
    """The command-line examples run as written, after the Python examples made their stores
    (the blocks in one interpreter, then the command lines in another: two processes, not
    one per block and per line)."""
    assert {line.split()[1] for line in CLI_LINES} >= {"info", "tree", "verify", "migrate", "copy"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    blocks = subprocess.run([sys.executable, "-c", _ALL_BLOCKS], input=json.dumps(BLOCKS), cwd=tmp_path,
                            capture_output=True, text=True, timeout=600, env=env)
    assert blocks.returncode == 0, f"--- stderr ---\n{blocks.stderr}"
    lines = subprocess.run([sys.executable, "-c", _ALL_LINES], input=json.dumps([line.split()[1:] for line in CLI_LINES]),
                           cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert lines.returncode == 0, lines.stderr
    for line, (code, out, err) in zip(CLI_LINES, json.loads(lines.stdout.splitlines()[-1]), strict=True):
        assert code == 0, f"{line}\n{out}\n{err}"
