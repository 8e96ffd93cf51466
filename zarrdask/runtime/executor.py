"""Where a read or write call's per-chunk work runs: the one threading policy.

The calling thread always works on its own call. Idle cores help it: a call splits its
items into batches (16 per thread), takes them one after another itself, and hands the
same queue to helpers from zarrdask's pool (one thread per core), as many as there are
cores no other zarrdask call or helper is using. So a Dask worker thread reading a shard
while the other workers are busy decodes alone (no oversubscription), and the last task
of a graph, a scheduler with fewer threads than cores, or a call on the main thread gets
every idle core. A helper stops taking batches once more threads are at work than there
are cores. ``threads`` (an array option) fixes the count instead (1: serial). A pool
thread never spreads its own work (it is already a helper).

The caller waits only for batches a helper has started, so a helper that never gets a
thread can not hold a call up.

``run_waiting`` is for work that mostly waits on a remote store, one step per item
(opening the nodes of a tree, say): up to :data:`WAITING_THREADS` threads of a pool of
its own, whose calls then follow the policy above like any other thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["MIN_PARALLEL_ITEM_BYTES", "MIN_PARALLEL_WRITE_ITEM_BYTES", "WAITING_THREADS", "run_all", "run_split",
           "run_waiting", "thread_count"]

T = TypeVar("T")
R = TypeVar("R")

_CPUS = os.cpu_count() or 1
_MIN_PARALLEL = 8  # fewer items than this run serially: handing work over costs more
#: items of fewer bytes each (decoded) run serially: such an item is mostly Python steps,
#: which threads cannot share (the GIL), and every GIL-free call of one thread (a file
#: read, a decode) then waits to take the GIL back from the other. Reading whole shards,
#: 1 vs 2 threads: 16 KiB 100 vs 185 us each, 128 KiB 240 vs 275, 256 KiB 505 vs 390
#: (benchmarks/README.md)
MIN_PARALLEL_ITEM_BYTES = 256 << 10
#: the same for writes, whose items (encoding a chunk, and putting a shard when it is the
#: last of it) hold more GIL-free work per byte (compressing costs several times what
#: decompressing does): 16 KiB shards of 4 KiB inner chunks written in one call, 1 vs 2
#: threads, 96-98 vs 100-170 us per shard into memory, 125-139 vs 135-276 into files; on
#: a cluster of 2 single-thread workers on 2 cores, 65,536 such shards took 14.9-16.1 s of
#: the workers' CPU serially against 16.3-17.6 s; 8 KiB items 1.00-1.27x, 16 KiB 0.60-1.19x
#: (benchmarks/README.md, issue 28)
MIN_PARALLEL_WRITE_ITEM_BYTES = 16 << 10
_BATCHES_PER_THREAD = 16  # (why 16: benchmarks/README.md, issue 25)
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_IN_POOL = threading.local()
WAITING_THREADS = 32
_WAITING_POOL: ThreadPoolExecutor | None = None

#: threads at work on zarrdask calls: callers spreading their items, and helpers
_active = 0
_active_lock = threading.Lock()


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
    """The most threads a call made on the current thread may use (the policy above)."""
    if getattr(_IN_POOL, "flag", False):
        return 1
    return requested if requested is not None else _CPUS


def _claim(n: int) -> int:
    """Count ``n`` more threads at work; the count before."""
    global _active
    with _active_lock:
        before = _active
        _active += n
        return before


class _Call(Generic[T, R]):
    """One call's batches, taken in turn by its caller and its helpers. Every batch runs
    (an error is kept and the earliest batch's raised at the end, as a serial run would)."""

    def __init__(self, fn: Callable[[T], R], batches: list[Sequence[T]]) -> None:
        self.fn, self.batches = fn, batches
        self.results: list[list[R]] = [[] for _ in batches]
        self.errors: dict[int, BaseException] = {}
        self.next = 0
        self.running = 0
        self.cond = threading.Condition()

    def _take(self) -> int | None:
        with self.cond:
            if self.next == len(self.batches):
                return None
            self.next += 1
            self.running += 1
            return self.next - 1

    def _run(self, i: int) -> None:
        try:
            self.results[i] = [self.fn(item) for item in self.batches[i]]
        except BaseException as exc:  # kept for the caller, which raises it
            self.errors[i] = exc
        with self.cond:
            self.running -= 1
            if self.running == 0:
                self.cond.notify_all()

    def work(self) -> None:
        """The caller's part: take batches until none is left, then wait for the helpers'."""
        while (i := self._take()) is not None:
            self._run(i)
        with self.cond:
            self.cond.wait_for(lambda: self.running == 0)

    def help(self, limit: int) -> None:
        """A helper's part: take batches while at most ``limit`` threads are at work."""
        _claim(1)
        try:
            while _active <= limit and (i := self._take()) is not None:
                self._run(i)
        finally:
            _claim(-1)

    def result(self) -> list[R]:
        if self.errors:
            raise self.errors[min(self.errors)]
        return [r for part in self.results for r in part]


def run_all(fn: Callable[[T], R], items: Sequence[T], threads: int | None,
            min_parallel: int = _MIN_PARALLEL, item_bytes: int | None = None,
            min_item_bytes: int = MIN_PARALLEL_ITEM_BYTES) -> list[R]:
    """Apply ``fn`` to every item, in order, on the calling thread and up to
    ``thread_count(threads) - 1`` helpers (idle cores only, unless ``threads`` is given).
    Items go in batches, 16 per thread: fine enough that the threads finish together
    (a batch of 4 MiB chunks takes a few ms), coarse enough that taking one costs nothing
    next to its items; fewer than ``min_parallel`` items, or items of fewer than
    ``min_item_bytes`` each (``item_bytes``, when the caller knows it; reads
    :data:`MIN_PARALLEL_ITEM_BYTES`, writes :data:`MIN_PARALLEL_WRITE_ITEM_BYTES`), run
    serially."""
    n_threads = thread_count(threads)
    if (n_threads == 1 or len(items) < min_parallel
            or (item_bytes is not None and item_bytes < min_item_bytes)):
        return [fn(item) for item in items]
    return _spread(fn, lambda _: items, n_threads, threads)


def run_split(fn: Callable[[T], R], split: Callable[[int], Sequence[T]], threads: int | None) -> list[R]:
    """:func:`run_all` over ``split(n)``: the items cut for the ``n`` threads the call gets
    now (1 when it runs alone), for work that is cheaper in fewer, larger items when no
    other thread can take a share."""
    n_threads = thread_count(threads)
    if n_threads == 1:
        return [fn(item) for item in split(1)]
    return _spread(fn, split, n_threads, threads)


def _spread(fn: Callable[[T], R], split: Callable[[int], Sequence[T]], n_threads: int,
            threads: int | None) -> list[R]:
    limit = _CPUS if threads is None else n_threads
    before = _claim(1)
    try:
        helpers = min(n_threads, limit - before) - 1
        items = split(max(helpers, 0) + 1)
        if helpers <= 0 or len(items) < 2:
            return [fn(item) for item in items]
        n_batches = min(len(items), _BATCHES_PER_THREAD * (helpers + 1))
        bounds = [len(items) * i // n_batches for i in range(n_batches + 1)]
        call = _Call(fn, [items[bounds[i]: bounds[i + 1]] for i in range(n_batches)])
        pool = _pool()
        for _ in range(helpers):
            pool.submit(call.help, limit)
        call.work()
        return call.result()
    finally:
        _claim(-1)


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
