"""Where a read or write call's per-chunk work runs: the one threading policy.

``threads`` (an array option) fixes the count; 1 is serial. Left as None, a call made on
the main thread spreads its chunks over zarrdask's pool (one thread per core), and a call
made on any other thread runs serially. Another thread is a Dask or distributed worker
thread, a caller's own pool, or zarrdask's pool itself: each already runs beside others,
so handing its chunks to the pool as well only adds hand-offs. A pool thread never waits
on the pool (that could deadlock), whatever ``threads`` says.

``run_waiting`` is for work that mostly waits on a remote store, one step per item
(opening the nodes of a tree, say): up to :data:`WAITING_THREADS` threads of a pool of
its own, whose calls then follow the policy above like any other non-main thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WAITING_THREADS", "run_all", "run_waiting", "thread_count"]

T = TypeVar("T")
R = TypeVar("R")

_CPUS = os.cpu_count() or 1
_MIN_PARALLEL = 8  # fewer items than this run serially: handing work to the pool costs more
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_IN_POOL = threading.local()
WAITING_THREADS = 32
_WAITING_POOL: ThreadPoolExecutor | None = None


def _mark_pool_thread() -> None:
    _IN_POOL.flag = True


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=_CPUS, thread_name_prefix="zarrdask",
                                       initializer=_mark_pool_thread)
        return _POOL


def thread_count(requested: int | None) -> int:
    """How many threads a call made on the current thread may use (the policy above)."""
    if getattr(_IN_POOL, "flag", False):
        return 1
    if requested is not None:
        return requested
    return _CPUS if threading.current_thread() is threading.main_thread() else 1


def run_all(fn: Callable[[T], R], items: Sequence[T], threads: int | None,
            min_parallel: int = _MIN_PARALLEL) -> list[R]:
    """Apply ``fn`` to every item, in order, on ``thread_count(threads)`` threads. Items go
    to the pool in a few batches per thread (a future per item costs about as much as
    decoding a small chunk); fewer than ``min_parallel`` items run serially."""
    n_threads = thread_count(threads)
    if n_threads == 1 or len(items) < min_parallel:
        return [fn(item) for item in items]
    n_batches = min(len(items), 4 * n_threads)
    bounds = [len(items) * i // n_batches for i in range(n_batches + 1)]
    batches = [items[bounds[i]: bounds[i + 1]] for i in range(n_batches)]
    return [r for part in _pool().map(lambda batch: [fn(item) for item in batch], batches) for r in part]


def run_waiting(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """Apply ``fn`` to every item, in order, on up to ``WAITING_THREADS`` threads at once
    (serially for one item)."""
    global _WAITING_POOL
    if len(items) < 2:
        return [fn(item) for item in items]
    with _POOL_LOCK:
        if _WAITING_POOL is None:
            _WAITING_POOL = ThreadPoolExecutor(max_workers=WAITING_THREADS, thread_name_prefix="zarrdask-wait")
    return list(_WAITING_POOL.map(fn, items))
