"""Progress fits where it runs (issue 26): the command line draws no carriage-return bars
into files, draws tqdm's bar on stderr in a terminal, and a Jupyter kernel shows a widget
(not stderr text) for core writes, ``verify``, dask's ``to_zarr`` and ``copy``."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

import zarrdask

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("progress") / "a.zarr"
    a = zarrdask.create_array(path, shape=(40, 40), dtype="i4", chunks=(10, 10), shards=(20, 20))
    a[...] = np.arange(1600, dtype="i4").reshape(40, 40)
    return path


def _commands(store: Path, tmp_path: Path) -> list[list[str]]:
    return [["verify", str(store)], ["copy", str(store), str(tmp_path / "copy.zarr"), "--shards", "40,40"]]


def test_cli_into_files_holds_no_bars(store: Path, tmp_path: Path) -> None:
    for i, args in enumerate(_commands(store, tmp_path)):
        out, err = tmp_path / f"{i}.out", tmp_path / f"{i}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            code = subprocess.run([sys.executable, "-m", "zarrdask", *args], stdout=stdout, stderr=stderr).returncode
        assert code == 0, err.read_text()
        assert b"\r" not in out.read_bytes() and err.read_bytes() == b"", (args, err.read_bytes())
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "copy.zarr")[...], zarrdask.open_array(store)[...])


def _in_terminal(args: list[str]) -> tuple[bytes, bytes]:
    """stdout (a pipe) and what a terminal on stderr received (80 columns)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "zarrdask", *args], stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            block = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not block:
            break
        seen += block
    out = proc.communicate()[0]
    os.close(leader)
    assert proc.returncode == 0, seen
    return out, seen


def test_cli_in_a_terminal_draws_the_bar_on_stderr(store: Path, tmp_path: Path) -> None:
    (verify, copy) = _commands(store, tmp_path)
    out, terminal = _in_terminal(verify)
    assert out.startswith(b"OK") and b"\r" not in out
    assert b"verify: 100%" in terminal and b"4/4" in terminal  # tqdm's bar: the 4 shards read
    out, terminal = _in_terminal(copy)
    assert b"\r" not in out and b"write: 100%" in terminal  # the copy's dask tasks
    out, terminal = _in_terminal([*verify, "--no-progress"])
    assert terminal == b""


CELLS = {
    "core write": "a = zarrdask.create_array(w / 'c.zarr', shape=(40, 40), dtype='i4', chunks=(10, 10), progress=True)\n"
                  "a[...] = np.ones((40, 40), dtype='i4')",
    "verify": "assert zarrdask.verify(w / 'c.zarr', progress=True).ok",
    "to_zarr": "zarrdask.to_zarr(da.ones((40, 40), chunks=(7, 9)), w / 'd.zarr', chunks=(10, 10), progress=True)",
    "copy": "zarrdask.copy(w / 'd.zarr', w / 'e.zarr', shards=(20, 20), progress=True)",
    "no ipywidgets": "sys.modules['ipywidgets'] = None  # as if not installed\n"
                     "zarrdask.verify(w / 'e.zarr', progress=True)",
}


def test_a_kernel_shows_widgets_not_stderr(tmp_path: Path) -> None:
    setup = "import sys, pathlib, numpy as np, dask.array as da, zarrdask\nw = pathlib.Path.cwd()"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(setup)]
                                        + [nbformat.v4.new_code_cell(source) for source in CELLS.values()])
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = {name: cell.outputs for name, cell in zip(CELLS, notebook.cells[1:])}
    assert not notebook.cells[0].outputs
    for name, cell_outputs in outputs.items():
        assert not [o for o in cell_outputs if o.output_type in ("error", "stream")], (name, cell_outputs)
        widgets = [o for o in cell_outputs if WIDGET in o.get("data", {})]
        # without ipywidgets a kernel shows nothing: its stderr is no terminal
        assert len(widgets) == (0 if name == "no ipywidgets" else 1), (name, cell_outputs)
    assert zarrdask.open_array(tmp_path / "e.zarr").shards == (20, 20)


class _Terminal:
    """A stand-in for a terminal's stderr (tqdm asks ``isatty``)."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_in_process_bars_count_what_they_work_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dask.array as da

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    a = zarrdask.create_array(tmp_path / "w.zarr", shape=(100, 100), dtype="f4", chunks=(10, 10), progress=True)
    a[...] = np.ones((100, 100), dtype="f4")  # 100 chunks encoded on the executor's threads
    assert "write /: 100%" in terminal.text and "100/100" in terminal.text and "chunk/s]" in terminal.text
    terminal.text = ""
    sharded = zarrdask.create_array(tmp_path / "s.zarr", shape=(100, 100), dtype="f4", chunks=(10, 10),
                                    shards=(50, 50), progress=True)
    sharded[...] = np.ones((100, 100), dtype="f4")  # 4 shards, each one unit of work: the bar counts them
    assert "4/4" in terminal.text and "shard/s]" in terminal.text and "chunk" not in terminal.text
    terminal.text = ""
    zarrdask.verify(tmp_path / "s.zarr", progress=True)  # the stored keys it checks, shards here
    assert "verify: 100%" in terminal.text and "4/4" in terminal.text and "key/s]" in terminal.text
    terminal.text = ""
    x = da.ones((60, 60), chunks=(7, 9))
    zarrdask.to_zarr(x, tmp_path / "d.zarr", chunks=(10, 10), shards=(30, 30), progress=True)
    assert "write: 100%" in terminal.text and "task/s]" in terminal.text
    monkeypatch.setattr(terminal, "isatty", lambda: False)  # a file: tqdm stays quiet
    terminal.text = ""
    zarrdask.to_zarr(x, tmp_path / "d.zarr", mode="w", chunks=(10, 10), progress=True)
    a[...] = np.zeros((100, 100), dtype="f4")
    assert terminal.text == ""


def test_a_distributed_client_draws_the_schedulers_feed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture) -> None:
    import dask.array as da
    import distributed

    terminal = _Terminal()
    x = da.ones((60, 60), chunks=(7, 9))
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None):
        monkeypatch.setattr(sys, "stderr", terminal)
        zarrdask.to_zarr(x, tmp_path / "d.zarr", chunks=(10, 10), shards=(30, 30), progress=True)
        monkeypatch.setattr(terminal, "isatty", lambda: False)
        drawn, terminal.text = terminal.text, ""
        zarrdask.to_zarr(x, tmp_path / "e.zarr", chunks=(10, 10), progress=True)
        assert terminal.text == ""  # a file: neither a bar nor distributed's text
    assert "write: 100%" in drawn and "\x1b[2K" not in drawn
    assert "Completed" not in capsys.readouterr().out  # distributed's own text bar is not drawn
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "e.zarr")[...], np.ones((60, 60)))
