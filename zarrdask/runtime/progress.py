"""Progress bars that fit where the code runs, drawn by tqdm: the one place zarrdask makes
them (core writes and ``verify`` here; dask and distributed computations in
``dask_io.progress`` with the same bars).

Inside a Jupyter kernel with ipywidgets: tqdm's notebook widget. Elsewhere: tqdm's text
bar on stderr when stderr is a terminal, and nothing when it is a file or a pipe (no
carriage returns in logs; a kernel's stderr is no terminal, so a kernel without
ipywidgets shows nothing rather than red stderr text).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any, TypeVar

__all__ = ["ProgressBar", "counted", "in_notebook", "new_bar"]

T = TypeVar("T")
R = TypeVar("R")


def in_notebook() -> bool:
    """Whether this runs inside a Jupyter kernel that can show widgets (tqdm's own test
    for a kernel, and ipywidgets installed)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and "IPKernelApp" in shell.config and find_spec("ipywidgets") is not None


def new_bar(total: int | None, label: str, unit: str) -> Any:
    """A tqdm bar of ``total`` steps (``unit``, such as chunks or tasks) named ``label``: a
    widget in a notebook, else text on stderr that tqdm disables (``disable=None``) when
    stderr is not a terminal."""
    if in_notebook():
        from tqdm.notebook import tqdm as notebook_bar

        return notebook_bar(total=total, desc=label, unit=unit)
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit=unit, file=sys.stderr, disable=None)


class ProgressBar:
    """``with ProgressBar(total, "verify", "key") as bar: ... bar.advance()``, counting
    ``total`` of what a call works through (``unit``: chunks, shards, keys); thread-safe
    (the executor's threads advance it)."""

    def __init__(self, total: int, label: str, unit: str) -> None:
        self.total, self.label, self.unit = total, label, unit
        self._lock = threading.Lock()
        self._bar: Any = None

    def __enter__(self) -> ProgressBar:
        self._bar = new_bar(self.total, self.label, self.unit)
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.close()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self._bar.update(n)


def counted(fn: Callable[[T], R], bar: ProgressBar) -> Callable[[T], R]:
    """``fn`` that advances ``bar`` after each call."""

    def run(item: T) -> R:
        result = fn(item)
        bar.advance()
        return result

    return run
