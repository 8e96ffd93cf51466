"""Computing write graphs with a progress bar: distributed's when a client is active (or
given), else dask's own (the local schedulers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["compute"]


def compute(graphs: Sequence[Any], progress: bool = False, client: Any = None) -> list[Any]:
    """Compute ``graphs`` (Dask collections) together, returning their results; ``progress`` draws a bar."""
    import dask

    if client is None and progress:
        client = _active_client()
    if client is not None:
        futures = client.compute(list(graphs))
        if progress:
            from distributed import progress as show

            show(futures, notebook=False)
        return list(client.gather(futures))
    if progress:
        from dask.diagnostics import ProgressBar

        with ProgressBar():
            return list(dask.compute(*graphs))
    return list(dask.compute(*graphs))


def _active_client() -> Any:
    """The distributed client Dask would use, if any (its scheduler ignores dask's bar)."""
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None
