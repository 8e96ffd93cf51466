"""Per-array runtime options: how the stored units are read and written (not stored in metadata)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from numbers import Integral
from typing import Any, Protocol

import numpy as np

from ...errors import InvalidModeError
from ...runtime.cache import check_budget

__all__ = ["ArrayOptions", "WriteLock", "array_options"]


class WriteLock(Protocol):
    """What a write lock needs (a ``threading.Lock``, a ``distributed.Lock``, a ``FileLock``)."""

    def acquire(self) -> Any: ...

    def release(self) -> Any: ...


@dataclass(frozen=True)
class ArrayOptions:
    """Per-array runtime options (not stored in metadata).

    ``write_empty_chunks``: store chunks equal to the fill value (default: delete them).
    ``missing_chunks``: ``"fill"`` reads absent chunks as the fill value, ``"raise"`` raises.
    ``index_cache_size``: shard indexes kept per array (LRU).
    ``threads``: threads for one read/write call (None: one per core; 1: serial, as in Dask tasks).
    ``coalesce_gap`` / ``coalesce_max``: merge inner-chunk ranges at most this far apart / this big
    (``coalesce_gap=None``: as far as the store makes it pay, ``shard_fetch.merge_gap``).
    ``progress``: writes show a progress bar (chunks encoded; see ``runtime.progress``).
    ``lock``: held around every write call (``acquire()``/``release()``: a ``distributed.Lock``, a
    :class:`~zarrdask.runtime.locks.FileLock`), for processes writing parts of the same chunk or shard
    outside Dask. Without it they are still safe where the store guards a read-modify-write of a
    key (``Store.guard``: local files, S3, memory, Icechunk); elsewhere they are refused.
    ``safe_chunks``: False lets a write of part of a chunk or shard go ahead unguarded into a store
    that cannot guard it (HTTP, a zarr-python store on disk): for when no other writer touches
    those chunks at the same time (xarray's keyword of the same name: the same promise).
    ``verify_checksums``: check every crc32c on read (False skips the check, for speed).
    ``cache_bytes``: the budget of the process's decoded-chunk cache this array reads through
    (int bytes or a string such as ``"512 MiB"``; 0: off; None: the ``zarrdask.cache-bytes``
    dask config value when the array is opened outside a dask worker, else off; see
    ``runtime/cache.py``).
    """

    write_empty_chunks: bool = False
    missing_chunks: str = "fill"
    index_cache_size: int = 1024
    threads: int | None = None
    coalesce_gap: int | None = None
    coalesce_max: int = 1 << 26
    progress: bool = False
    lock: WriteLock | None = None
    safe_chunks: bool = True
    verify_checksums: bool = True
    cache_bytes: int | str | None = None

    def __post_init__(self) -> None:
        if self.lock is not None and not (hasattr(self.lock, "acquire") and hasattr(self.lock, "release")):
            raise InvalidModeError(
                f"lock={self.lock!r} is not a lock: pass an object with acquire() and release() "
                "(zarrdask.FileLock(path), distributed.Lock(name), threading.Lock()), or leave lock= out: "
                "zarrdask's own writes need none (one task owns each shard; stores that can guard a partial "
                "write of a key do)")
        if self.missing_chunks not in ("fill", "raise"):
            raise InvalidModeError(f"missing_chunks={self.missing_chunks!r}: pass 'fill' (an absent chunk reads as "
                                   "the fill value) or 'raise' (it is an error)")
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, Integral)
                                         or self.threads < 1):
            raise InvalidModeError(f"threads={self.threads!r}: pass None (one thread per core) or an integer >= 1 "
                                   "(1: no threads of its own, as inside dask tasks)")
        for name in ("write_empty_chunks", "progress", "safe_chunks", "verify_checksums"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InvalidModeError(f"{name}={getattr(self, name)!r}: pass True or False")
            object.__setattr__(self, name, bool(getattr(self, name)))
        for name in ("index_cache_size", "coalesce_gap", "coalesce_max"):
            value = getattr(self, name)
            if name == "coalesce_gap" and value is None:
                continue
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < 0:
                raise InvalidModeError(f"{name}={value!r}: pass an integer >= 0"
                                       + (" (or None: the store's own)" if name == "coalesce_gap" else ""))
        object.__setattr__(self, "cache_bytes", check_budget(self.cache_bytes))


def array_options(function: str, options: Mapping[str, Any], base: ArrayOptions | None = None) -> ArrayOptions:
    """The ArrayOptions a call's keywords give (over ``base``'s), an invalid one named with
    the function the user called."""
    try:
        return replace(base, **options) if base is not None else ArrayOptions(**options)
    except InvalidModeError as exc:
        raise InvalidModeError(f"{function}(): {exc}") from None
