"""mypy --strict (pyproject's ``[tool.mypy]``) is clean on metadata/, codecs/, plan/, display/, door/, runtime/, nodes/ and api/."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["zarrdask/metadata", "zarrdask/codecs", "zarrdask/plan", "zarrdask/display", "zarrdask/door",
            "zarrdask/runtime", "zarrdask/nodes", "zarrdask/api"]


@pytest.mark.slow
def test_mypy_strict_is_clean(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy_cache"), *PACKAGES],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, f"mypy reports errors:\n{result.stdout}{result.stderr}"
