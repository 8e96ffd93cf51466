"""Every notebook in notebooks/ is committed without outputs and executes top to bottom
without an error (a real kernel) where only what ``zarrdask[notebooks]`` installs can be
imported: modules of any other installed distribution (the test extra's zarr-python
peers, pytest, ...) are refused as if absent. Progress shows as widgets, never as stderr
text, and the climate notebook's plots are rendered as images."""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from packaging.requirements import Requirement

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
EXTRA = "notebooks"
#: notebooks whose executed outputs must hold a rendered image (matplotlib)
PLOTS = {"climate"}
WIDGET = "application/vnd.jupyter.widget-view+json"


def _name(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def _installed_with(root: str, extras: set[str]) -> set[str]:
    """The distributions ``pip install root[extras]`` brings (as installed here), by name."""
    seen: set[str] = set()
    pending = [(root, extras)]
    while pending:
        name, wanted = pending.pop()
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue  # an optional dependency this platform does not install
        seen.add(_name(name))
        for text in requires:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted | {""}):
                if _name(req.name) not in seen:
                    pending.append((req.name, set(req.extras)))
    return seen


def _refused_modules() -> list[str]:
    """Top-level modules that only distributions outside ``zarrdask[notebooks]`` provide."""
    allowed = _installed_with("zarrdask", {EXTRA})
    return sorted(module for module, dists in packages_distributions().items()
                  if module not in sys.stdlib_module_names and not any(_name(d) in allowed for d in dists))


#: run first in each kernel: refused modules and the other distributions' metadata (their
#: entry points) are not found, as if not installed (every finder answers through this one)
BARE_ENVIRONMENT = '''
import importlib.abc, re, sys
class _OnlyTheExtra(importlib.abc.MetaPathFinder):
    refused = frozenset({refused!r})
    installed = frozenset({installed!r})
    def __init__(self, finders):
        self.finders = finders
    def absorb(self):  # finders installed later (importlib_metadata's) answer through this one too
        self.finders += [finder for finder in sys.meta_path if finder is not self]
        sys.meta_path[:] = [self]
    def find_spec(self, name, path=None, target=None):
        self.absorb()
        if name.partition(".")[0] in self.refused:
            return None
        for finder in self.finders:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                return spec
        return None
    def find_distributions(self, *args, **kwargs):
        self.absorb()
        for finder in self.finders:
            if hasattr(finder, "find_distributions"):
                for dist in finder.find_distributions(*args, **kwargs):
                    if re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower() in self.installed:
                        yield dist
    def invalidate_caches(self):
        for finder in self.finders:
            if hasattr(finder, "invalidate_caches"):
                finder.invalidate_caches()
_OnlyTheExtra([]).absorb()
'''


def test_there_are_notebooks() -> None:
    assert {p.stem for p in NOTEBOOKS} >= {"quickstart", "climate", "distributed_writes", "verify_and_migrate"}


def _bare(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``notebook`` with the bare environment's cell first."""
    installed = sorted(_installed_with("zarrdask", {EXTRA}))
    notebook.cells.insert(0, nbformat.v4.new_code_cell(BARE_ENVIRONMENT.format(refused=_refused_modules(),
                                                                               installed=installed)))
    return notebook


#: what distributed logs on stderr when the machine is too busy to keep its event loop or
#: garbage collector on time (a saturated CI machine), or when another cluster on the machine
#: holds the dashboard's port (its warning's four lines), not the notebook's doing
_LOAD_WARNING = re.compile(r"Event loop was unresponsive|full garbage collections took|"
                           r"distributed\.utils_perf - WARNING|distributed\.core - INFO - Event loop|"
                           r"UserWarning: Port \d+ is already in use|Perhaps you already have a cluster running|"
                           r"Hosting the HTTP server on port \d+ instead|^\s*warnings\.warn\($")


def _run(notebook: nbformat.NotebookNode, where: Path) -> list[dict]:
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(where)}}).execute()
    return [o for cell in notebook.cells for o in cell.get("outputs", [])]


def test_the_bare_environment_refuses_what_the_extra_does_not_install(tmp_path: Path) -> None:
    refused = set(_refused_modules())
    assert {"tensorstore", "pytest", "hypothesis", "moto"} <= refused  # the test extra's
    assert not {"matplotlib", "ipywidgets", "zarr", "dask", "distributed", "xarray", "tqdm", "numpy"} & refused
    check = ("import importlib.metadata, importlib.util\n"
             "import matplotlib, ipywidgets, zarr, tqdm, zarrdask\n"
             "assert importlib.util.find_spec('tensorstore') is None\n"
             "assert 'zarrs' not in {d.metadata['Name'] for d in importlib.metadata.distributions()}\n"
             "import pytest")
    with pytest.raises(CellExecutionError) as info:  # the checks before it passed
        _run(_bare(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(check)])), tmp_path)
    assert (info.value.ename, info.value.evalue) == ("ModuleNotFoundError", "No module named 'pytest'")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code), "commit notebooks without outputs"
    outputs = _run(_bare(notebook), tmp_path)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    stderr = [line for o in outputs if o.get("name") == "stderr" for line in o.get("text", "").splitlines()]
    assert not [line for line in stderr if line.strip() and not _LOAD_WARNING.search(line)], \
        f"stderr text (progress must be a widget): {stderr}"
    assert any(WIDGET in o.get("data", {}) for o in outputs), "no progress widget was shown"
    if path.stem in PLOTS:
        assert any("image/png" in o.get("data", {}) for o in outputs), "no plot was rendered"
