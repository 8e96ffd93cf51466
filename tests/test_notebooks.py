"""Every notebook in notebooks/ is committed without outputs and executes top to bottom
without an error (a real kernel); the climate notebook's plots are rendered as images."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
#: notebooks whose executed outputs must hold a rendered image (matplotlib)
PLOTS = {"climate"}


def test_there_are_notebooks() -> None:
    assert {p.stem for p in NOTEBOOKS} >= {"quickstart", "climate", "distributed_writes", "verify_and_migrate"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code), "commit notebooks without outputs"
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    if path.stem in PLOTS:
        assert any("image/png" in o.get("data", {}) for o in outputs), "no plot was rendered"
