"""Computing write graphs with a progress bar, drawn by ``runtime.progress`` (a widget in
Jupyter, text on a terminal's stderr, nothing in a file or pipe) and counted by Dask: on
the local schedulers by tqdm's Dask callback (tasks done), with a distributed client by
distributed's progress feed from the scheduler (tasks remaining), whose own text bar
(stdout, drawn even into files) is not used."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..runtime.progress import new_bar

__all__ = ["compute"]


def compute(graphs: Sequence[Any], progress: bool = False, client: Any = None) -> list[Any]:
    """Compute ``graphs`` (Dask collections) together, returning their results; ``progress``
    draws a bar ("write", counting tasks)."""
    import dask

    if client is None and progress:
        client = _active_client()
    if client is not None:
        futures = client.compute(list(graphs))
        if progress:
            _follow(futures, client, new_bar(None, "write", "task"))
        return list(client.gather(futures))
    if progress:
        from tqdm.dask import TqdmCallback

        with TqdmCallback(tqdm_class=lambda total: new_bar(total, "write", "task")):
            return list(dask.compute(*graphs))
    return list(dask.compute(*graphs))


def _follow(futures: list[Any], client: Any, bar: Any) -> None:
    """Draw distributed's progress feed for ``futures`` (and every task they wait on) on
    ``bar``, until they are done or one fails; nothing when the bar is disabled."""
    if bar.disable:
        return
    from distributed.diagnostics.progressbar import TextProgressBar

    class Feed(TextProgressBar):  # type: ignore[misc]
        """The feed with tqdm's drawing in place of distributed's text."""

        def _draw_bar(self, remaining: int, all: int, **kwargs: Any) -> None:  # (distributed's keywords)
            bar.total = all
            bar.n = all - remaining
            bar.refresh()

        def _draw_stop(self, **kwargs: Any) -> None:
            bar.close()

    Feed(futures, scheduler=client.scheduler.address)


def _active_client() -> Any:
    """The distributed client Dask would use, if any (its scheduler ignores dask's callbacks)."""
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None
