"""``FileLock``: a lock shared by processes on one machine, for writers outside Dask.

Two processes writing parts of the same shard (or chunk) each read it, change their
part and write it back: without a lock one of them loses its part. An array opened with
``lock=`` holds the lock around every write call (``Array.with_options(lock=...)``);
any object with ``acquire()`` / ``release()`` works (``distributed.Lock`` across a
cluster), and ``FileLock(path)`` across the processes of one machine (``fcntl.flock``
on ``path``, which must be on a local filesystem, POSIX only).
"""

from __future__ import annotations

import os
import threading

__all__ = ["FileLock"]


class FileLock:
    """An exclusive lock on the file ``path`` (created if missing), between processes and
    threads alike; picklable (by path), not reentrant."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import fcntl  # noqa: F401  (POSIX only: fail here, not on first use)

        self.path = os.path.abspath(os.fspath(path))
        self._held = threading.local()

    def acquire(self) -> bool:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # each acquire has its own open file: threads exclude each other too
        except BaseException:
            os.close(fd)
            raise
        self._held.fd = fd
        return True

    def release(self) -> None:
        import fcntl

        fd = self._held.__dict__.pop("fd")
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __reduce__(self) -> tuple[type[FileLock], tuple[str]]:
        return (FileLock, (self.path,))

    def __repr__(self) -> str:
        return f"FileLock({self.path!r})"
