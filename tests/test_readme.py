"""The README's Python examples run as written (in a temporary directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})


CLI_LINES = [line.split(" #")[0].strip() for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
             for line in block.splitlines() if line.startswith("zarrdask ")]


def test_readme_command_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command-line examples run as written, after the Python examples made their stores."""
    import subprocess
    import sys

    assert {line.split()[1] for line in CLI_LINES} == {"info", "tree", "verify", "migrate", "copy"}
    monkeypatch.chdir(tmp_path)
    for code in BLOCKS:
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    script = Path(sys.executable).with_name("zarrdask")
    for line in CLI_LINES:
        result = subprocess.run([str(script), *line.split()[1:]], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
