"""LocalStore writes on a bare descriptor: every byte of every part lands, in order, whatever
the gathered write does (short writes, the parts-per-call limit), and a failed write
leaves the old value and no temporary file."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.errors import StoreError
from zarrdask.storage import local
from zarrdask.storage.local import LocalStore, is_temporary_name

parts_strategy = st.lists(st.binary(max_size=300), max_size=40)


def _leftovers(root: Path) -> list[str]:
    return [p.name for p in root.rglob("*") if is_temporary_name(p.name)]


def _as_kind(part: bytes, kind: int) -> object:
    """The same bytes as one of the buffer kinds a write may be handed."""
    return [part, bytearray(part), memoryview(part), np.frombuffer(part, dtype=np.uint8)][kind % 4]


@settings(max_examples=60, deadline=None)
@given(parts=parts_strategy, kinds=st.lists(st.integers(0, 3), min_size=40, max_size=40),
       limit=st.integers(1, 5), step=st.integers(1, 64))
def test_parts_land_whole_and_in_order(tmp_path_factory: pytest.TempPathFactory, parts: list[bytes],
                                       kinds: list[int], limit: int, step: int) -> None:
    """Parts of every buffer kind, through gathered writes of at most ``limit`` parts that
    each write at most ``step`` bytes (short writes), store exactly their concatenation."""
    root = tmp_path_factory.mktemp("w")
    store = LocalStore(root)
    calls: list[int] = []

    def short_writev(fd: int, buffers: list[memoryview]) -> int:
        assert 0 < len(buffers) <= limit
        calls.append(len(buffers))
        return os.write(fd, b"".join(bytes(b) for b in buffers)[:step])

    with mock.patch.object(local, "_IOV_MAX", limit), mock.patch.object(local, "_writev", short_writev):
        store.set("c/0/1", [_as_kind(p, k) for p, k in zip(parts, kinds)])  # type: ignore[misc]
    expected = b"".join(parts)
    assert (root / "c" / "0" / "1").read_bytes() == expected
    assert len(calls) >= -(-len(expected) // step)  # no write took more than it was allowed
    assert _leftovers(root) == []


@settings(max_examples=30, deadline=None)
@given(value=st.binary(max_size=70_000))
def test_one_buffer_through_the_real_call(tmp_path_factory: pytest.TempPathFactory, value: bytes) -> None:
    root = tmp_path_factory.mktemp("w")
    store = LocalStore(root)
    store.set("k", value)
    store.set("k", [value[:7], value[7:]])  # replaced, as parts
    assert store.get("k") == value and (root / "k").read_bytes() == value
    assert _leftovers(root) == []


def test_more_parts_than_one_call_takes(tmp_path: Path) -> None:
    """A shard of more inner chunks than the system's per-call limit (1,024 on Linux)."""
    store = LocalStore(tmp_path)
    parts = [bytes([i % 256]) * (1 + i % 5) for i in range(3 * local._IOV_MAX + 7)]
    store.set("s", parts)
    assert (tmp_path / "s").read_bytes() == b"".join(parts)


def test_failed_write_keeps_the_old_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path)
    store.set("a/b", b"old")

    def full_disk(fd: int, buffers: list[memoryview]) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(local, "_writev", full_disk)
    with pytest.raises(StoreError, match=r"cannot write key 'a/b'.*No space left"):
        store.set("a/b", [b"new", b"er"])
    assert store.get("a/b") == b"old"
    assert _leftovers(tmp_path) == []


def test_created_files_are_plain_and_private_to_the_write(tmp_path: Path) -> None:
    """The temporary file is created new (a stale one of the same name is never reused) and
    the stored file gets the usual permissions (0o666 less the umask)."""
    store = LocalStore(tmp_path)
    store.set("x/y", b"1")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "x" / "y").stat().st_mode & 0o777 == 0o666 & ~mask
    assert local._CREATE_FLAGS & os.O_EXCL and local._CREATE_FLAGS & os.O_CREAT


def test_one_buffer_per_write_where_there_is_no_gathered_write(tmp_path: Path) -> None:
    """The fallback of systems without ``writev`` (Windows) stores the same bytes."""
    store = LocalStore(tmp_path)
    parts = [b"", b"ab", bytearray(b"cde"), memoryview(b"f" * 5000), b"g"]
    with mock.patch.object(local, "_writev", local._write_first):
        store.set("w", parts)  # type: ignore[arg-type]
    assert (tmp_path / "w").read_bytes() == b"ab" + b"cde" + b"f" * 5000 + b"g"


def test_temporary_names_unique_across_threads_and_a_fork() -> None:
    """Temporary names are a token of the process and a count: recognised as temporary,
    never repeated by threads of one process, and a forked child draws a new token."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        names = list(pool.map(lambda _: local.temporary_name("c.0"), range(4000)))
    assert len(set(names)) == len(names)
    assert all(is_temporary_name(n) for n in names)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send one name, then leave without running the parent's cleanup
        os.write(write, local.temporary_name("c.0").encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 200).decode()
    os.close(read)
    assert is_temporary_name(child)
    assert child[len(".c.0."):][:16] != names[0][len(".c.0."):][:16]


@pytest.mark.parametrize("locked", [True, False])
def test_writes_beside_deletes_that_prune_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      locked: bool) -> None:
    """A delete prunes the directories it leaves empty while another thread makes them again
    for a key of its own (deep keys: a parent may go between two of its ``mkdir``s)."""
    if not locked:
        monkeypatch.setattr(LocalStore, "_set", LocalStore._set_unlocked)
    store = LocalStore(tmp_path)
    errors: list[BaseException] = []

    def churn(name: str) -> None:
        try:
            for i in range(300):
                key = f"a/b/c/{name}/{i % 3}/k"
                store.set(key, b"v")
                store.delete(key)
        except BaseException as e:  # (reported below)
            errors.append(e)

    threads = [threading.Thread(target=churn, args=(n,)) for n in "xyz"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
