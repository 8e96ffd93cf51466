"""Running a store's requests on an event loop: bounded, retried, consumed as they end.

Async backends (fsspec's async filesystems, zarr-python stores) turn every read or write
of a key into a coroutine; :class:`Requests` runs a batch of them on a loop in another
thread with at most ``concurrency`` in flight (per store object, across calls) and
tries each again under a :class:`~zarrdask.storage.retry.RetryPolicy` while it fails
transiently, and the calling thread takes the results as each request ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from .link import Link
from .retry import RetriesExhausted, RetryPolicy, is_transient

__all__ = ["Requests", "background_loop"]

T = TypeVar("T")


class Requests:
    """``stream(loop, requests)``: run request factories concurrently on ``loop``; each
    response of bytes is timed for ``link`` (see ``link.py``), when one is given."""

    def __init__(self, concurrency: int, retry: RetryPolicy | None, link: Link | None = None) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy(attempts=1)
        self.link = link
        self._slots: asyncio.Semaphore | None = None
        self._lock = threading.Lock()

    def _semaphore(self) -> asyncio.Semaphore:
        with self._lock:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.concurrency)
            return self._slots

    async def attempt(self, request: Callable[[], Awaitable[T]]) -> T:
        """One request within the bound, tried again while it fails transiently."""
        slots = self._semaphore()
        failures = 0
        began = time.perf_counter()
        while True:
            try:
                async with slots:
                    start = time.perf_counter()
                    result = await request()
                    if self.link is not None and isinstance(result, (bytes, bytearray, memoryview)):
                        self.link.observe(len(result), time.perf_counter() - start)
                    return result
            except Exception as exc:
                failures += 1
                if not is_transient(exc):
                    raise
                if failures >= self.retry.attempts:
                    raise RetriesExhausted(exc, self.retry, time.perf_counter() - began) from exc
            await asyncio.sleep(self.retry.delay(failures))

    def stream(self, loop: asyncio.AbstractEventLoop,
               requests: list[Callable[[], Awaitable[T]]]) -> Iterator[tuple[int, T | Exception]]:
        """Yield ``(position, result or exception)`` as each request ends."""
        futures = {asyncio.run_coroutine_threadsafe(self.attempt(r), loop): i for i, r in enumerate(requests)}
        try:
            for future in concurrent.futures.as_completed(futures):
                error = future.exception()
                yield futures[future], error if error is not None else future.result()
        finally:
            for future in futures:
                future.cancel()

    def run(self, loop: asyncio.AbstractEventLoop, request: Callable[[], Awaitable[T]]) -> T:
        """One request, its result or its exception raised."""
        return asyncio.run_coroutine_threadsafe(self.attempt(request), loop).result()


_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """zarrdask's event loop, running in a daemon thread (started on first use)."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="zarrdask-io", daemon=True).start()
            _LOOP = loop
        return _LOOP
