"""A plain text progress bar, for work that runs outside Dask (core writes, ``verify``).

Dask and distributed work shows their own bars (``dask.diagnostics.ProgressBar``,
``distributed.progress``); this one counts items done from any thread and redraws one
line on stderr at most ten times a second.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO, TypeVar

__all__ = ["ProgressBar", "counted"]

T = TypeVar("T")
R = TypeVar("R")


class ProgressBar:
    """``with ProgressBar(total, "verify") as bar: ... bar.advance()``; thread-safe."""

    def __init__(self, total: int, label: str = "", width: int = 30, stream: IO[str] | None = None,
                 interval: float = 0.1) -> None:
        self.total, self.label, self.width, self.interval = total, label, width, interval
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._lock = threading.Lock()
        self._start = self._last = 0.0

    def __enter__(self) -> ProgressBar:
        self._start = time.monotonic()
        self._draw()
        return self

    def __exit__(self, *exc: object) -> None:
        self._draw()
        self.stream.write("\n")
        self.stream.flush()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            now = time.monotonic()
            if now - self._last >= self.interval:
                self._last = now
                self._draw()

    def _draw(self) -> None:
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        elapsed = time.monotonic() - self._start
        self.stream.write(f"\r{self.label} [{'#' * filled}{' ' * (self.width - filled)}] "
                          f"{frac:4.0%} {self.done}/{self.total} | {elapsed:.1f}s")
        self.stream.flush()


def counted(fn: Callable[[T], R], bar: ProgressBar) -> Callable[[T], R]:
    """``fn`` that advances ``bar`` after each call."""

    def run(item: T) -> R:
        result = fn(item)
        bar.advance()
        return result

    return run
