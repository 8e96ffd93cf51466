"""benchmarks/README.md and the scripts agree: every script it links to or names as
``benchmarks/...py`` exists, and every script in benchmarks/ and benchmarks/probes/ is
linked from it (a new script gets its line, a moved one its new path)."""

from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
README = (BENCH / "README.md").read_text()


def _linked() -> set[str]:
    """The ``.py`` targets of the README's markdown links, relative to benchmarks/."""
    return {target for target in re.findall(r"\]\(([^)#\s]+\.py)\)", README)}


def _named() -> set[str]:
    """Paths written out as ``benchmarks/<path>.py`` (commands, prose), relative to benchmarks/."""
    return set(re.findall(r"benchmarks/((?:[\w-]+/)*[\w-]+\.py)", README))


def _scripts() -> set[str]:
    return {p.relative_to(BENCH).as_posix() for folder in (BENCH, BENCH / "probes") for p in folder.glob("*.py")}


def test_every_script_the_readme_names_exists() -> None:
    missing = sorted(p for p in _linked() | _named() if not (BENCH / p).is_file())
    assert not missing, f"benchmarks/README.md names scripts that are not there: {missing}"


def test_every_script_is_in_the_readme() -> None:
    assert {"run.py", "harness.py", "probes/zstd_runs.py"} <= _scripts()  # the folders this test reads
    unlisted = sorted(_scripts() - _linked())
    assert not unlisted, f"scripts without a line in benchmarks/README.md: {unlisted}"


def test_the_readme_points_to_the_history() -> None:
    assert "](HISTORY.md)" in README
    assert (BENCH / "HISTORY.md").is_file()
