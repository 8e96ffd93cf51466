"""The arrays reads write their results into.

Scratch memory a read decodes into before placing it (a shard's chunks side by side)
comes from :func:`scratch`, a small pool of reused buffers: fresh memory is paid for in
page faults on every use, a reused buffer's pages are already mapped.

A result under 32 MiB is an ordinary ``np.empty``. A larger one is an anonymous private
mapping, for three reasons:

* numpy advises ``MADV_HUGEPAGE`` on large arrays, and on kernels with transparent huge
  pages in ``madvise`` mode their page faults sometimes wait for memory compaction.
  Above glibc's 32 MiB mmap threshold malloc would hand out fresh pages anyway.
* A new mapping's pages are prefaulted by a helper thread (Linux ``MADV_POPULATE_WRITE``)
  while the read decodes into it, instead of being faulted page by page by the decoding
  threads. Populating only maps zeroed pages where none is mapped yet, so it never
  touches values a decoder has already written.
* Once the last array over a mapping is gone, the mapping is kept for the next result: a
  Dask graph's blocks, a notebook's successive slabs and a loop of large reads then reuse
  pages already mapped, where fresh ones cost their page faults again on every result.
  Up to :data:`RESULT_IDLE_BYTES` stay until reused; one more beyond that (at most
  :data:`RESULT_IDLE_MAX_BYTES` in all) is unmapped :data:`RESULT_DECAY_SECONDS` after it
  went idle, as allocators decay their unused pages. (Measurements: benchmarks/README.md.)
"""

from __future__ import annotations

import ctypes
import errno
import math
import mmap
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from ..errors import TooLargeError

__all__ = ["FRESH_PAGES_BYTES", "HUGEPAGE_HINT_BYTES", "MEMORY_BYTES", "RESULT_DECAY_SECONDS", "RESULT_IDLE_BYTES",
           "RESULT_IDLE_MAX_BYTES", "SCRATCH_IDLE_BYTES",
           "format_bytes", "held_array", "output_array", "scratch", "set_spare_room", "spare_bytes", "trim_spares"]

#: glibc's largest dynamic mmap threshold (64-bit): a malloc this big always gets fresh pages.
FRESH_PAGES_BYTES = 32 << 20
_MADV_POPULATE_WRITE = 23  # Linux 5.14+
_POPULATE_STEP = 8 << 20  # prefault in steps, so decoders and the helper interleave


def _madvise() -> Callable[[int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise  # a ctypes call releases the GIL while the kernel works


_MADVISE = _madvise()


def _physical_memory() -> int:
    """This machine's physical memory in bytes (``sys.maxsize`` where it cannot be asked)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return sys.maxsize


#: a result larger than physical memory is refused before anything is allocated
MEMORY_BYTES = _physical_memory()


def output_array(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised array for a read's result (see the module docstring); a
    TooLargeError naming the size when it cannot fit in memory."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > MEMORY_BYTES:
        raise TooLargeError(f"the result of shape {shape} ({dtype}) needs {format_bytes(nbytes)}, more than this "
                            f"machine's memory ({format_bytes(MEMORY_BYTES)}); read a smaller selection")
    try:
        if not _mapped(nbytes, dtype, FRESH_PAGES_BYTES):
            return np.empty(shape, dtype=dtype)
        _start_releaser()
        mapping = _take_idle(nbytes)
        fresh = mapping is None
        if mapping is None:
            mapping = _mapping(nbytes)
    except (MemoryError, OverflowError, OSError, ValueError) as exc:  # (numpy: "array is too big")
        raise TooLargeError(f"the result of shape {shape} ({dtype}) needs {format_bytes(nbytes)}, "
                            f"which cannot be allocated: {exc}") from None
    array = np.asarray(_Lease(mapping, nbytes, _give_back)).view(dtype).reshape(shape)
    if fresh and _MADVISE is not None:
        threading.Thread(target=prefault, args=(array,), name="zarrdask-prefault", daemon=True).start()
    return array


#: idle mappings of results no array uses any more are kept for the next ones: this many
#: bytes of them until they are reused ...
RESULT_IDLE_BYTES = 128 << 20
#: ... and one more mapping beyond that (a loop of large reads reuses it, a Dask graph's many
#: blocks do not pile up), for this many seconds after its last array went (jemalloc's
#: default decay of unused pages: a pause gives them back) ...
RESULT_DECAY_SECONDS = 10.0
#: ... with at most this many idle bytes in all (a sixteenth of the machine's memory)
RESULT_IDLE_MAX_BYTES = max(RESULT_IDLE_BYTES, MEMORY_BYTES // 16)


class _Idle(NamedTuple):
    """An idle result mapping (a uint8 array over its mmap object) and when it went idle
    (``time.monotonic()``)."""

    mapping: np.ndarray
    since: float


_idle_results: list[_Idle] = []
_idle_results_lock = threading.RLock()  # (a result freed by the garbage collector inside a locked step)
_idle_changed = threading.Condition(_idle_results_lock)
_releaser: threading.Thread | None = None  # (unmaps what has decayed; started by output_array)


def _take_idle(nbytes: int) -> np.ndarray | None:
    """The smallest idle mapping of ``nbytes`` to twice that, taken out of the pool."""
    with _idle_results_lock:
        fits = [i for i, m in enumerate(_idle_results) if nbytes <= m.mapping.nbytes <= 2 * nbytes]
        return _idle_results.pop(min(fits, key=lambda i: _idle_results[i].mapping.nbytes)).mapping if fits else None


def _give_back(mapping: np.ndarray) -> None:
    """Keep a mapping whose last array is gone while the idle ones are within
    :data:`RESULT_IDLE_BYTES` and all stay within :data:`RESULT_IDLE_MAX_BYTES` (else, or
    once the interpreter is shutting down, it is unmapped); what lies beyond
    :data:`RESULT_IDLE_BYTES` the releaser unmaps after :data:`RESULT_DECAY_SECONDS`.
    (Called from ``__del__``: starts no thread.)"""
    if sys.is_finalizing():
        return
    with _idle_results_lock:
        held = sum(m.mapping.nbytes for m in _idle_results)
        total = held + mapping.nbytes
        if held > RESULT_IDLE_BYTES or total > RESULT_IDLE_MAX_BYTES:
            return
        _idle_results.append(_Idle(mapping, time.monotonic()))
        if total > RESULT_IDLE_BYTES:
            _idle_changed.notify()


def _start_releaser() -> None:
    """Start the daemon thread that unmaps decayed mappings, unless it runs."""
    global _releaser
    with _idle_results_lock:
        if _releaser is None or not _releaser.is_alive():
            _releaser = threading.Thread(target=_release_decayed, name="zarrdask-release", daemon=True)
            _releaser.start()


def _release_decayed() -> None:
    """The releaser: unmap idle mappings beyond :data:`RESULT_IDLE_BYTES`, oldest first,
    once idle for :data:`RESULT_DECAY_SECONDS`; sleep until the next one is due, or until
    a mapping is given back."""
    while True:
        dropped = []
        with _idle_changed:
            now = time.monotonic()
            _idle_results.sort(key=lambda m: m.since)
            total = sum(m.mapping.nbytes for m in _idle_results)
            while total > RESULT_IDLE_BYTES and now - _idle_results[0].since >= RESULT_DECAY_SECONDS:
                dropped.append(_idle_results.pop(0))
                total -= dropped[-1].mapping.nbytes
            if not dropped:
                _idle_changed.wait(RESULT_DECAY_SECONDS - (now - _idle_results[0].since)
                                   if total > RESULT_IDLE_BYTES else None)
        del dropped  # (unmapped here, outside the lock: a read taking a mapping does not wait for it)


def _forget_in_child() -> None:
    """In a forked child: no idle mappings and no spare buffers (the parent's are the
    parent's), no releaser, fresh locks."""
    global _idle_results_lock, _idle_changed, _releaser, _spare_lock, _spare_bytes
    _idle_results_lock = threading.RLock()
    _idle_changed = threading.Condition(_idle_results_lock)
    _releaser = None
    _idle_results.clear()
    _spare_lock = threading.RLock()
    _spare.clear()
    _spare_bytes = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


class _Lease:
    """The owner numpy sees under an array over a buffer of ours (every view of the array
    holds it, however derived): when the last one goes, ``back`` takes the buffer (an idle
    result mapping, a held array's spare buffer)."""

    __slots__ = ("_buffer", "_back", "__array_interface__")

    def __init__(self, buffer: np.ndarray, nbytes: int, back: Callable[[np.ndarray], None]) -> None:
        self._buffer, self._back = buffer, back
        self.__array_interface__ = {"version": 3, "shape": (nbytes,), "typestr": "|u1",
                                    "data": (buffer.ctypes.data, False)}

    def __del__(self) -> None:
        self._back(self._buffer)


#: numpy advises huge pages for arrays from this size on
HUGEPAGE_HINT_BYTES = 4 << 20


def held_array(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised array to be held for long (a decoded-chunk cache entry), over a
    buffer of its size that an entry gone before left (:func:`_keep_spare`), else a new
    one: from :data:`HUGEPAGE_HINT_BYTES` on a mapping of its own without numpy's huge-page
    advice (its page faults may wait for compaction), its pages mapped as they are first
    written (a held shard filled chunk by chunk maps only what it holds). So a cache
    emptied and filled again writes into pages already mapped (object arrays: ``np.empty``)."""
    nbytes = math.prod(shape) * dtype.itemsize
    if dtype.hasobject or nbytes == 0:
        return np.empty(shape, dtype=dtype)
    buffer = _spare_buffer(nbytes)
    if buffer is None:
        buffer = _mapping(nbytes) if _mapped(nbytes, dtype, HUGEPAGE_HINT_BYTES) else np.empty(nbytes, np.uint8)
    return np.asarray(_Lease(buffer, nbytes, _keep_spare)).view(dtype).reshape(shape)


#: buffers of held arrays no array uses any more, kept for the next held arrays of their size
#: while they fit in ``_spare_room()`` bytes: what the decoded-chunk pool leaves of its budget
#: (``set_spare_room``), so the pool's entries and these together stay within it. A cache
#: emptied (``cache_clear``) or evicting as it reads then fills pages already mapped, where
#: new memory would cost its page faults again (benchmarks/HISTORY.md, issue 45 sessions 24
#: and 31)
_spare: dict[int, list[np.ndarray]] = {}
_spare_bytes = 0
_spare_lock = threading.RLock()  # (a lease freed by the garbage collector inside a locked step)
_spare_room: Callable[[], int] = lambda: 0


def set_spare_room(room: Callable[[], int]) -> None:
    """Let ``room()`` tell how many bytes the kept buffers may take (the pool sets it)."""
    global _spare_room
    _spare_room = room


def spare_bytes() -> int:
    """The bytes of the buffers kept for reuse."""
    return _spare_bytes


def trim_spares(room: int) -> None:
    """Let go of kept buffers, the largest first, until they take at most ``room`` bytes
    (the pool grew into its budget)."""
    global _spare_bytes
    dropped = []
    with _spare_lock:
        while _spare_bytes > room and _spare:
            size = max(_spare)
            kept = _spare[size]
            dropped.append(kept.pop())
            _spare_bytes -= size
            if not kept:
                del _spare[size]
    del dropped  # (unmapped after the lock is let go)


def _spare_buffer(nbytes: int) -> np.ndarray | None:
    """A buffer of ``nbytes`` (uint8) a held array left, or None."""
    global _spare_bytes
    with _spare_lock:
        kept = _spare.get(nbytes)
        if not kept:
            return None
        _spare_bytes -= nbytes
        buffer = kept.pop()
        if not kept:
            del _spare[nbytes]
        return buffer


def _keep_spare(buffer: np.ndarray) -> None:
    """Keep a held array's buffer whose last array is gone for the next held array of its
    size, while the kept ones fit in ``_spare_room()``. (Called from ``__del__``: the lock
    is reentrant, and no caller holds it while arrays are freed.)"""
    global _spare_bytes
    if sys.is_finalizing():
        return
    with _spare_lock:
        if _spare_bytes + buffer.nbytes <= _spare_room():
            _spare.setdefault(buffer.nbytes, []).append(buffer)
            _spare_bytes += buffer.nbytes


def _mapped(nbytes: int, dtype: np.dtype, threshold: int) -> bool:
    """Whether an array of ``nbytes`` gets a mapping of its own: from ``threshold`` bytes
    on, never for references (object arrays), where the platform has private mappings."""
    return nbytes >= threshold and not dtype.hasobject and hasattr(mmap, "MAP_PRIVATE")


def _mapping(nbytes: int) -> np.ndarray:
    """A new anonymous private mapping of ``nbytes``, as a uint8 array over it."""
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS), np.uint8)


def prefault(array: np.ndarray) -> None:
    """Map writable pages under ``array`` (C-contiguous) where none are mapped yet,
    keeping the values of pages that are. Stops quietly where the kernel refuses."""
    global _MADVISE
    start, nbytes = array.ctypes.data, array.nbytes
    for offset in range(0, nbytes, _POPULATE_STEP):
        if _MADVISE is None:
            return
        if _MADVISE(start + offset, min(_POPULATE_STEP, nbytes - offset), _MADV_POPULATE_WRITE) != 0:
            if ctypes.get_errno() == errno.EINVAL:  # a kernel without MADV_POPULATE_WRITE
                _MADVISE = None
            return


#: scratch buffers kept for reuse between reads, at most this many bytes in all
SCRATCH_IDLE_BYTES = 64 << 20
_idle: list[np.ndarray] = []
_idle_lock = threading.Lock()


@contextmanager
def scratch(shape: tuple[int, ...], dtype: np.dtype) -> Iterator[np.ndarray]:
    """An uninitialised C-contiguous array for the duration of the ``with`` block, from a
    buffer reused between calls (the smallest idle one big enough) or a new one; given back
    afterwards while the idle buffers stay under :data:`SCRATCH_IDLE_BYTES`. Object arrays
    are always new."""
    if dtype.hasobject:  # (references: never reused)
        yield np.empty(shape, dtype=dtype)
        return
    nbytes = math.prod(shape) * dtype.itemsize
    with _idle_lock:
        fits = [i for i, b in enumerate(_idle) if b.nbytes >= nbytes]
        buffer = _idle.pop(min(fits, key=lambda i: _idle[i].nbytes)) if fits else None
    if buffer is None:
        buffer = np.empty(max(nbytes, 1), dtype=np.uint8)
    try:
        yield buffer[:nbytes].view(dtype).reshape(shape)
    finally:
        with _idle_lock:
            if sum(b.nbytes for b in _idle) + buffer.nbytes <= SCRATCH_IDLE_BYTES:
                _idle.append(buffer)


def format_bytes(n: int) -> str:
    """``n`` bytes for a message: exact, with a binary-unit figure when large."""
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n} bytes ({n / (1 << shift):.1f} {unit})"
    return f"{n} bytes"
