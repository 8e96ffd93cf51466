"""Write graphs whose results must come back: writes into a transactional store (an
Icechunk session) and stores that cannot travel to worker processes.

On worker processes a session store travels as a fork (see
:mod:`zarrdask.storage.transactional`); each write task returns its fork's changes and
the graph's tree merges them, so a :class:`Writes` computes to the merged changes, or
None when nothing came back (an ordinary store, or the threaded scheduler, which writes
into the caller's session itself). :func:`run_writes` computes writes and merges what
came back into the caller's session, so ``session.commit()`` afterwards holds every
byte. Computing a ``Writes`` yourself (``to_zarr(..., compute=False)``), pass what it
computes to ``session.merge(...)`` when it is not None (:func:`merge_written` does both).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import dask
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph
from dask.task_spec import List, Task, TaskRef

from ..errors import InvalidModeError, StoreError
from ..storage.base import Store
from ..storage.transactional import holds_chunks, in_session, merge_changes, merge_into
from .progress import compute

__all__ = ["Writes", "check_forkable", "check_read_after_write", "check_shared", "check_travels", "combined", "merge_written",
           "run_writes"]


class Writes(Delayed):
    """A write graph's ``Delayed``; ``into``: the store its computed changes merge into."""

    __slots__ = ("into",)

    def __init__(self, key: str, graph: Any, into: Any) -> None:
        super().__init__(key, graph)
        self.into = into


def merge_written(graph: Any, result: Any) -> None:
    """Merge what ``graph`` computed to (``result``) into the caller's session, if anything
    came back from worker processes."""
    if isinstance(graph, Writes) and result is not None:
        merge_into(graph.into, result)


def run_writes(graphs: Sequence[Any], progress: bool = False, client: Any = None, **compute_kwargs: Any) -> None:
    """Compute ``graphs`` together (``compute_kwargs`` go to ``dask.compute``, else see
    :func:`.progress.compute`) and merge each write's changes into its caller's session."""
    results = dask.compute(*graphs, **compute_kwargs) if compute_kwargs else compute(graphs, progress, client)
    for graph, result in zip(graphs, results):
        merge_written(graph, result)


def combined(graphs: Sequence[Delayed]) -> Delayed:
    """One ``Delayed`` of several writes into one store: their changes merged, in one task
    over the writes' own graphs, which stay as they are (lazy layers are not built on the
    client: ``dask.delayed`` would optimise and materialise every task of them)."""
    name = "zarrdask-merge-" + tokenize(*(g.key for g in graphs))
    layer = {name: Task(name, merge_changes, List(*(TaskRef(g.key) for g in graphs)))}
    return Delayed(name, HighLevelGraph.from_collections(name, layer, dependencies=list(graphs)))


def check_travels(function: str, store: Store, *, client: Any = None) -> None:
    """Refuse, before anything is written, a store that cannot be sent to the worker
    processes of the scheduler in use: ``client`` when given, else dask's (a default
    distributed client, or dask's processes)."""
    if not _ships_tasks(client):
        return
    while isinstance(getattr(store, "inner", None), Store):  # zarrdask's wrappers travel as their base
        store = store.inner
    try:
        pickle.dumps(store)
    except Exception as exc:
        raise StoreError(
            f"{function}(): the store {store!r} cannot be sent to Dask's worker processes, which read and "
            f"write the chunks ({type(exc).__name__}: {exc}). Pass a store they can open (a path, a URL, an "
            "Icechunk session's store), or write on the threaded scheduler: with "
            "dask.config.set(scheduler='threads')"
        ) from exc
    check_shared(function, store, client=client)


def check_shared(function: str, store: Store, *, client: Any = None) -> None:
    """Refuse a store held in memory that the tasks would not share: zarr-python's
    MemoryStore whenever tasks are pickled (each task gets a copy of its contents), zarrdask's
    memory stores when tasks run in other processes. Reads would see only the fill value
    and writes would be lost."""
    kind = store.held_in
    if kind == "copied" and _ships_tasks(client):
        where = "every task receives a copy of its contents"
    elif kind == "process" and _other_processes(client):
        where = "Dask's worker processes would each read and write a copy of their own"
    else:
        return
    raise StoreError(
        f"{function}(): the store {store!r} is held in this process's memory, and {where}: reads would see "
        "only the fill value and writes would be lost. Use a store the workers share (a local directory or "
        "a URL), or the threaded scheduler: with dask.config.set(scheduler='threads')")




def check_forkable(target: Any) -> None:
    """Refuse a write that worker processes would make through forks of a session holding
    uncommitted chunks of ``target`` (merging the forks would restore those over the
    workers' writes)."""
    if _ships_tasks() and holds_chunks(target.store, target.path):
        raise StoreError(
            f"the session of {target.store.url} holds uncommitted chunks of the array {target.path!r}: worker "
            "processes write through forks of the session, which would carry those chunks back over theirs. "
            "Commit the session first (session.commit(...)) and write through a new writable session")


def check_read_after_write(function: str, store: Any) -> None:
    """Refuse, before anything is written, reads to run after deferred writes
    (``return_stored=True`` with ``compute=False``) into a session on worker processes:
    the read tasks would receive forks of the session taken before the workers write, and
    read none of it."""
    if _ships_tasks() and in_session(store):
        raise InvalidModeError(
            f"{function}(): return_stored=True with compute=False into a session's store on worker "
            "processes would read forks of the session taken before the workers write. Write first "
            "(compute=True, or compute the Delayed and pass what it computes to session.merge(...)), then "
            "read the stored data with zarrdask.from_zarr(...)")


def _ships_tasks(client: Any = None) -> bool:
    """Whether tasks are pickled to run (``client`` when given, else the scheduler dask
    would use: dask's processes or a distributed client, whose tasks are pickled even for
    workers in this process)."""
    if client is not None:
        return True
    get = dask.base.get_scheduler()
    if get is None:
        return False
    return getattr(get, "__module__", "") == "dask.multiprocessing" or (
        "Client" in type(getattr(get, "__self__", None)).__name__)


def _other_processes(client: Any = None) -> bool:
    """Whether tasks run in processes other than this one (not so for the workers of a
    ``LocalCluster(processes=False)``, which run in this process)."""
    if not _ships_tasks(client):
        return False
    if client is None:
        get = dask.base.get_scheduler()
        client = getattr(get, "__self__", None)
        if "Client" not in type(client).__name__:
            return True  # dask's processes
    try:
        workers = client.scheduler_info()["workers"]
    except Exception:  # noqa: BLE001 - a client that cannot say: assume other processes
        return True
    return not (workers and all(str(address).startswith("inproc://") for address in workers))
