"""Records of write calls in progress, so that one that never finished stays visible.

A write call (``zarrdask.to_zarr``, ``Dataset.zarrdask.to_zarr``, ``zarrdask.copy``)
writes a small JSON document at ``<node>/.zarrdask-writes/<id>.json`` before its first
data byte and deletes it after its last: a call killed, interrupted or failed in
between leaves it, and ``verify`` reports it, ``open`` warns of it. The directory is
hidden below the node it is about, so other readers (zarr-python, TensorStore) see no
node and no chunk there, and zarrdask's own listings skip it as they skip
``.zarrdask-staging``.

The id is a digest of the call, the node and the region written (never the time), so
running the same call again writes and then deletes the same key; a finished array
write also deletes older records of its node whose regions it covers. The document holds
the call, the ISO time it started (UTC), host and pid, the region, the planned units
and bytes, and the zarrdask version.

Finding records costs a request or a listing, so ``open`` looks only where it is free
(``Store.holds_under``): a stat on a local disk, the directory index of a ``MemoryStore``;
a remote open costs no request more, and an open of a mapping (a ``dict``, a ``dbm``) no
scan of all its keys: ``verify`` is the check there.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import json
import os
import socket
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..errors import InterruptedWriteWarning, warn
from .base import Store, join_path
from .transactional import in_session

__all__ = ["RECORDS_DIR", "WriteRecord", "clear_record", "is_record", "keeps_records", "read_records",
           "region_bounds", "warn_interrupted", "write_record"]

RECORDS_DIR = ".zarrdask-writes"  # below a node's path: the records of write calls not yet finished

_shown: set[tuple[str, str, str]] = set()  # (store url, record key, started): warned of in this process


@dataclass(frozen=True)
class WriteRecord:
    """One write call: what it is (``call``, ``node``, ``region``: JSON, e.g. ``[[start,
    stop], ...]`` of an array), what it planned (``units``: storage units, None when not
    counted; ``nbytes``: uncompressed bytes), and who ran it when (set by :meth:`stamped`)."""

    call: str
    node: str
    region: Any
    units: int | None
    nbytes: int
    started: str = ""
    host: str = ""
    pid: int = 0
    version: str = ""

    @property
    def id(self) -> str:
        """The same for the same call, node and region, so a rerun finds its record."""
        what = json.dumps([self.call, self.node, self.region], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(what.encode()).hexdigest()[:20]

    @property
    def key(self) -> str:
        return join_path(self.node, RECORDS_DIR, f"{self.id}.json")

    def stamped(self) -> WriteRecord:
        """This record as it starts now, here."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        return replace(self, started=now, host=socket.gethostname(), pid=os.getpid(), version=_version())

    def running_here(self) -> bool:
        """Whether another process of this machine made the record and still runs (its
        write may be under way; a pid taken again by another process also counts)."""
        if self.host != socket.gethostname() or self.pid in (0, os.getpid()):
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except OSError:  # (it exists, run by another user)
            return True
        return True

    def describe(self) -> str:
        """One line: which call, when, where, what region, how much was planned, and what
        to do (wait for it when its process still runs here, else run it again)."""
        planned = f"{self.units} storage units, " if self.units is not None else ""
        if self.running_here():
            state, fix = ("is still running (its process is alive on this host)",
                          "Let it finish: it removes this record when it does")
        else:
            state, fix = ("did not finish (or is still running)",
                          "Run the same call again to complete it (that removes this record)")
        return (f"{self.call} started {self.started} on {self.host} (pid {self.pid}, zarrdask {self.version}) "
                f"{state}: region {_region_text(self.region)}, {planned}{self.nbytes:,} bytes planned. {fix}")


def _region_text(region: Any) -> str:
    if isinstance(region, list) and all(isinstance(r, list) and len(r) == 2 for r in region):
        return "[" + ", ".join(f"{a}:{b}" for a, b in region) + "]"
    return json.dumps(region, sort_keys=True)


def _version() -> str:
    try:
        return importlib.metadata.version("zarrdask")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def is_record(key: str) -> bool:
    """Whether ``key`` lies inside a ``.zarrdask-writes`` directory."""
    return RECORDS_DIR in key.split("/")


def keeps_records(store: Store) -> bool:
    """Whether writes into ``store`` are recorded: not into a session (nothing is visible
    before its commit, which the caller makes; a read-only one refuses to list records)
    nor a store that cannot delete keys (a zip archive, never updated in place)."""
    base = _base(store)
    session = getattr(getattr(base, "inner", None), "session", None)  # (Icechunk lists node prefixes only)
    return not in_session(store) and session is None and store.supports_deletes


def write_record(store: Store, record: WriteRecord) -> WriteRecord:
    """Store ``record``, stamped with now, this host and process unless it is already;
    the stamped record."""
    record = record if record.started else record.stamped()
    store.set(record.key, json.dumps(asdict(record), sort_keys=True, indent=1).encode())
    return record


def clear_record(store: Store, record: WriteRecord) -> None:
    """Delete ``record`` (its write finished) and, for an array's region, the node's older
    records of regions inside it (those writes are complete now)."""
    keys = [record.key]
    if region_bounds(record.region) is not None:
        keys += [r.key for r in read_records(store, record.node) if _covers(record.region, r.region)]
    store.delete_many(keys)


def region_bounds(region: Any) -> list[tuple[int, int]] | None:
    """An array's region as recorded (``[[start, stop], ...]``), as pairs; None for any other."""
    if isinstance(region, list) and all(isinstance(r, list) and len(r) == 2 for r in region):
        return [(int(a), int(b)) for a, b in region]
    return None


def _covers(outer: Any, inner: Any) -> bool:
    a, b = region_bounds(outer), region_bounds(inner)
    return a is not None and b is not None and len(a) == len(b) and all(
        lo <= ilo and ihi <= hi for (lo, hi), (ilo, ihi) in zip(a, b))


def read_records(store: Store, node: str) -> list[WriteRecord]:
    """The records of the node at ``node`` (one listing), sorted by key; a record that
    does not parse is read as one of an unknown call, so it is still reported. None in a
    store that keeps no records (a session would refuse the listing)."""
    if not keeps_records(store):
        return []
    prefix = join_path(node, RECORDS_DIR)
    keys = [join_path(prefix, name) for name in store.list_dir(prefix)[0] if name.endswith(".json")]
    return [_parse(node, key, blob) for key, blob in zip(keys, store.get_many(keys)) if blob is not None]


def _parse(node: str, key: str, blob: bytes) -> WriteRecord:
    try:
        doc = json.loads(blob)
        return WriteRecord(**{k: doc[k] for k in WriteRecord.__dataclass_fields__ if k in doc})
    except (ValueError, TypeError, KeyError):
        return WriteRecord(f"an unreadable record ({key})", node, None, None, 0)


def _base(store: Store) -> Store:
    while isinstance(getattr(store, "inner", None), Store):
        store = store.inner  # type: ignore[attr-defined]
    return store


def warn_interrupted(store: Store, node: str) -> None:
    """Warn (:class:`~zarrdask.errors.InterruptedWriteWarning`, once per record and
    process) of the write calls at ``node`` that did not finish (not of those whose process
    still runs on this machine: another job writing, whose record is no news until it
    ends), where looking is free
    (``Store.holds_under``: a stat on a local disk, a ``MemoryStore``'s index): elsewhere an
    open costs no request and no scan more, and ``verify`` is the check there."""
    if not store.holds_under(join_path(node, RECORDS_DIR)) or not keeps_records(store):  # (the stat first)
        return
    new = [r for r in read_records(store, node)
           if (store.url, r.key, r.started) not in _shown and not r.running_here()]
    if not new:
        return
    _shown.update((store.url, r.key, r.started) for r in new)
    lines = "\n".join(f"  {r.key}: {r.describe()}" for r in new)
    warn(f"{store.url}: {len(new)} write call(s) into the node {node or '/'!r} did not finish (or are still "
         f"running, in another job), so its data may be partly written (zarrdask.verify lists every such "
         f"record):\n{lines}", InterruptedWriteWarning)
