"""The one threading policy (``zarrdask.runtime.executor``): the caller works on its own
call, idle cores help, nothing oversubscribes the cores, results keep their order and
a failure is the one a serial run raises."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.runtime import executor


def _threads_used(items: int, threads: int | None, on_worker: bool = True) -> set[str]:
    """The threads that ran a call's items (each item sleeps 2 ms, releasing the GIL)."""
    seen: set[str] = set()

    def fn(_: int) -> None:
        seen.add(threading.current_thread().name)
        time.sleep(0.002)

    if on_worker:
        with ThreadPoolExecutor(1, thread_name_prefix="worker") as pool:
            pool.submit(executor.run_all, fn, list(range(items)), threads).result()
    else:
        executor.run_all(fn, list(range(items)), threads)
    return seen


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(executor, "_CPUS", 2)


def test_a_worker_thread_with_an_idle_core_gets_a_helper(two_cores):
    used = _threads_used(64, None)
    assert any(n.startswith("worker") for n in used) and any(n.startswith("zarrdask") for n in used), used


def test_the_main_thread_works_beside_its_helpers(two_cores):
    used = _threads_used(64, None, on_worker=False)
    assert threading.main_thread().name in used and any(n.startswith("zarrdask") for n in used), used


def test_busy_cores_mean_a_serial_call(two_cores):
    """Two callers at work on two cores: the third decodes alone, no helper joins."""
    release = threading.Event()
    started = threading.Barrier(3)

    def hold(_: int) -> None:
        started.wait()
        release.wait()

    callers = ThreadPoolExecutor(2)
    # two calls (one item each, spread from one item on) hold both cores until released
    futures = [callers.submit(executor.run_all, hold, [0], None, 1) for _ in range(2)]
    started.wait()
    try:
        used = _threads_used(64, None)
        assert all(n.startswith("worker") for n in used), used
    finally:
        release.set()
        for f in futures:
            f.result()
        callers.shutdown()


def test_an_explicit_thread_count_is_honoured_and_one_is_serial(two_cores):
    assert all(n.startswith("worker") for n in _threads_used(64, 1))
    assert any(n.startswith("zarrdask") for n in _threads_used(64, 2))


def test_split_work_is_cut_for_the_threads_the_call_gets(two_cores):
    """``run_split`` asks for the items of as many threads as will work on them: both
    cores when one is idle, one when the other is busy or the count is fixed at 1."""
    asked: list[int] = []

    def split(n: int) -> list[int]:
        asked.append(n)
        return list(range(8 * n))

    def fn(i: int) -> int:
        time.sleep(0.001)
        return i

    with ThreadPoolExecutor(1, thread_name_prefix="worker") as pool:
        assert pool.submit(executor.run_split, fn, split, None).result() == list(range(16))
        assert pool.submit(executor.run_split, fn, split, 1).result() == list(range(8))
    release = threading.Event()
    started = threading.Barrier(2)

    def hold(_: int) -> None:
        started.wait()
        release.wait()

    with ThreadPoolExecutor(1) as other:
        held = other.submit(executor.run_all, hold, [0], None, 1)  # (the other core, busy)
        started.wait()
        try:
            assert executor.run_split(fn, split, None) == list(range(8))
        finally:
            release.set()
            held.result()
    assert asked == [2, 1, 1]


def test_a_pool_thread_never_spreads(two_cores):
    """A helper's own calls run serially on it: it never waits on the pool."""
    inner: list[set[str]] = []

    def fn(i: int) -> int:
        if threading.current_thread().name.startswith("zarrdask"):
            seen: set[str] = set()
            executor.run_all(lambda _: seen.add(threading.current_thread().name), list(range(16)), 4)
            inner.append(seen)
        time.sleep(0.001)
        return i

    assert executor.run_all(fn, list(range(64)), None) == list(range(64))
    assert inner and all(len(s) == 1 for s in inner), inner


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 200), fail=st.sets(st.integers(0, 199), max_size=3), threads=st.sampled_from([None, 1, 2, 3]))
def test_results_in_order_and_the_first_failure_raised(n, fail, threads):
    def fn(i: int) -> int:
        if i in fail:
            raise ValueError(i)
        return i * i

    failing = sorted(i for i in fail if i < n)
    if failing:
        with pytest.raises(ValueError) as info:
            executor.run_all(fn, list(range(n)), threads)
        assert info.value.args == (failing[0],)
    else:
        assert executor.run_all(fn, list(range(n)), threads) == [i * i for i in range(n)]
    # a helper the pool starts after the caller took the last batch counts itself for a
    # moment and finds nothing to do: the count must come back to 0, not be 0 at once
    deadline = time.monotonic() + 5
    while executor._active and time.monotonic() < deadline:
        time.sleep(0.001)
    assert executor._active == 0
