"""A store that keeps writes until ``flush()``, so a many-node write costs a few round trips.

Writing a Dataset or a DataTree creates groups and arrays one after another, and each
creation reads before it writes (is there a node already? which parents exist? which
ancestors hold consolidated metadata?). On an object store every such step is a round
trip. :class:`WriteBehindStore` answers reads from the writes it holds and, below a
prefix it has surveyed (listed once: ``survey``, or on the way to deleting it), from that
listing for keys it does not hold, so those steps cost nothing until ``flush()`` sends
everything in three concurrent batches: the deletes, the metadata documents, every other key (metadata before chunks,
as everywhere). After a flush it forwards every call to the inner store.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import StoreError
from .base import Buffer, ByteRequest, StreamedReads, SuffixRange, Update, split_listing
from .transformers import InnerUpdate, WrapperStore

__all__ = ["WriteBehindStore"]

_METADATA_NAMES = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")


def _below(key: str, prefix: str) -> bool:
    return not prefix or key == prefix or key.startswith(prefix + "/")


def _slice(value: bytes, request: ByteRequest) -> bytes:
    if isinstance(request, SuffixRange):
        return value[len(value) - min(request.length, len(value)):]
    return value[request.start:] if request.length is None else value[request.start: request.start + request.length]


class WriteBehindStore(StreamedReads, WrapperStore):
    """Holds sets and deletes of ``inner`` until :meth:`flush`, reads seeing them; from
    then on a plain pass-through."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.writes_parts = False  # values arrive joined
        self._pending: dict[str, bytes | None] = {}  # None: deleted
        self._known: dict[str, set[str]] = {}  # surveyed prefix -> the inner store's keys below it
        self._holding = True  # until flush()

    def survey(self, prefix: str) -> None:
        """List the inner store below ``prefix`` once; reads there then need no request for
        keys it does not have."""
        prefix = prefix.strip("/")
        if self._holding and self._surveyed(prefix) is None:
            self._known[prefix] = set(self.inner._list_prefix(prefix))

    def _surveyed(self, key: str) -> set[str] | None:
        """The inner keys of a surveyed prefix covering ``key`` (None: not surveyed)."""
        for prefix, keys in self._known.items():
            if _below(key, prefix):
                return keys
        return None

    def _absent(self, key: str) -> bool:
        """Known not to be in the inner store (and not held)."""
        keys = self._surveyed(key)
        return keys is not None and key not in keys

    # -- reads -------------------------------------------------------------------------
    def _iter_ranges(self, requests: list[tuple[str, ByteRequest]]) -> Iterator[tuple[int, bytes | None]]:
        remote = []
        for i, (key, request) in enumerate(requests):
            if key in self._pending:
                value = self._pending[key]
                yield i, None if value is None else _slice(value, request)
            elif self._absent(key):
                yield i, None
            else:
                remote.append(i)
        if remote:
            for j, value in self.inner._iter_ranges([requests[i] for i in remote]):
                yield remote[j], value

    def _exists(self, key: str) -> bool:
        if key in self._pending:
            return self._pending[key] is not None
        return not self._absent(key) and self.inner._exists(key)

    def _size(self, key: str) -> int | None:
        value = self._get(key)
        return None if value is None else len(value)

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        known = self._surveyed(prefix)
        keys = set(self.inner._list_prefix(prefix)) if known is None else {k for k in known if _below(k, prefix)}
        keys.discard(prefix)
        for key, value in self._pending.items():
            if _below(key, prefix) and key != prefix:
                (keys.add if value is not None else keys.discard)(key)
        return iter(sorted(keys))

    def holds_under(self, prefix: str) -> bool | None:
        """The inner store's answer once nothing is held (the held writes would need a scan)."""
        return None if self._pending else self.inner.holds_under(prefix)

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return split_listing(prefix, self._list_prefix(prefix))

    # -- writes ------------------------------------------------------------------------
    def _set(self, key: str, value: Buffer) -> None:
        self._set_many({key: value})

    def _set_many(self, items: dict[str, Buffer]) -> None:
        if not self._holding:
            self.inner._set_many(items)
            return
        self._pending.update((k, bytes(v)) for k, v in items.items())

    def _delete(self, key: str) -> None:
        self._delete_many([key])

    def _delete_many(self, keys: list[str]) -> None:
        if not self._holding:
            self.inner._delete_many(keys)
            return
        self._pending.update(dict.fromkeys(keys))

    def _update(self, keys: list[str]) -> Update:
        """Keys this writer holds, or knows the inner store lacks (new nodes), are updated here
        and sent with the rest; any other key is updated in the inner store at once, guarded
        there, since another writer may be changing it."""
        if self._holding and (any(k in self._pending for k in keys) or all(self._absent(k) for k in keys)):
            return Update(self, keys)
        return InnerUpdate(self, keys)

    def identity(self) -> None:
        """Held writes: what the URL names is not yet what it holds (never cached)."""
        return None

    def delete_prefix(self, prefix: str) -> None:
        self.survey(prefix)
        super().delete_prefix(prefix)

    # -- sending -----------------------------------------------------------------------
    def flush(self) -> None:
        """Send what is held: the deletes, then the metadata documents, then the other keys."""
        pending, self._pending, self._known, self._holding = self._pending, {}, {}, False
        deletes = [k for k, v in pending.items() if v is None]
        metadata = {k: v for k, v in pending.items() if v is not None and k.rsplit("/", 1)[-1] in _METADATA_NAMES}
        chunks = {k: v for k, v in pending.items() if v is not None and k not in metadata}
        if deletes:
            self.inner._delete_many(deletes)
        for batch in (metadata, chunks):
            if batch:
                self.inner._set_many(batch)

    def __reduce__(self) -> tuple:
        if self._pending:
            raise StoreError(f"{len(self._pending)} writes to {self.url} are held: flush() before pickling")
        return (_same, (self.inner,))

    def __eq__(self, other: object) -> bool:
        return other is self or (not self._pending and other == self.inner)

    def __hash__(self) -> int:
        return hash(self.inner)


def _same(store: Any) -> Any:
    return store
