"""One lock file per key on local disk: the file a write of the key is written into.

A writer of ``dir/name`` opens ``dir/.name.zarrdask-lock.tmp`` (creating it), takes an
exclusive ``flock`` on it and checks that the file it locked is still the one at that
path; it then writes the new value into it and renames it onto the key. The rename both
publishes the value (a reader sees the old or the new value) and ends the lock: a writer
that was waiting finds the path gone or a new file there, and starts again. A
read-modify-write holds the lock from before its read to the rename, so no other writer
of the key (in this process or another, on this machine) commits in between.

``flock`` belongs to the open file, not the process: threads exclude each other as
processes do. (On NFS, Linux emulates it with POSIX locks, which do not exclude threads
of one process.) The name is the key's own, so a writer killed midway leaves a file the
next write of that key takes over, and listings hide it (``is_lock_name``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["LOCK_SUFFIX", "SUPPORTED", "KeyLock", "is_lock_name", "lock_path"]

LOCK_SUFFIX = ".zarrdask-lock.tmp"
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None  # type: ignore[assignment]

#: whether this platform can lock keys (POSIX)
SUPPORTED = fcntl is not None


def lock_path(path: str) -> str:
    """The lock file of the key file ``path``."""
    directory, sep, name = path.rpartition(os.sep)
    return f"{directory}{sep}.{name}{LOCK_SUFFIX}"


def is_lock_name(name: str) -> bool:
    """Whether a file name is a key's lock file (a write in progress, or a killed one's)."""
    return name[:1] == "." and name.endswith(LOCK_SUFFIX)


class KeyLock:
    """The lock of one key file, held from ``acquire`` until the value is published
    (``publish``) or the lock given up (``release``)."""

    __slots__ = ("path", "lock", "fd")

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = lock_path(path)
        self.fd = -1

    def acquire(self) -> KeyLock:
        lock = self.lock
        for _ in range(1000):
            try:
                fd = os.open(lock, _OPEN_FLAGS, 0o666)
            except FileNotFoundError:  # no directory yet, or a delete pruned it just now
                try:
                    os.makedirs(os.path.dirname(self.path), exist_ok=True)
                except FileNotFoundError:
                    pass  # (a delete pruned a parent while they were made: again)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                held = os.fstat(fd)
                now = os.stat(lock)
                if held.st_ino == now.st_ino and held.st_dev == now.st_dev:
                    if held.st_size:
                        os.ftruncate(fd, 0)  # what a killed writer left half written
                    self.fd = fd
                    return self
            except FileNotFoundError:
                pass  # the holder published or gave up: try the new lock file
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        raise OSError(f"could not lock {self.path!r}: its lock file {self.lock!r} kept changing")

    def publish(self, write: Callable[[int], None]) -> None:
        """Write the value (``write(fd)``) into the lock file and rename it onto the key."""
        try:
            write(self.fd)
            os.replace(self.lock, self.path)
        except BaseException:
            self.release()
            raise
        os.close(self.fd)
        self.fd = -1

    def remove(self) -> None:
        """Delete the key (missing is fine), then give the lock up."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            self.release()

    def release(self) -> None:
        """Give the lock up without publishing: the lock file is removed (a waiter then
        creates its own)."""
        if self.fd < 0:
            return
        try:
            os.unlink(self.lock)
        except FileNotFoundError:
            pass
        finally:
            os.close(self.fd)
            self.fd = -1
