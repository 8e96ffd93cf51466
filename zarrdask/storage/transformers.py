"""Storage transformers: named wrappers that a v3 array's metadata can put around its store.

A transformer is registered as ``factory(configuration, store) -> Store``.
Third-party packages register through the entry-point group
``zarrdask.storage_transformers`` (loaded on the first lookup of an unknown
name). ``WrapperStore`` delegates every backend hook to an inner store, so a
transformer overrides only what it changes; ``PrefixedStore`` and ``ReadOnlyStore``
are the simplest ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any

from .base import (Buffer, ByteRequest, Store, Then, ThenRead, Update, Value, VersionedRanges, join_path,
                   normalize_key)

__all__ = [
    "StorageTransformerFactory",
    "register_storage_transformer",
    "get_storage_transformer",
    "WrapperStore",
    "InnerUpdate",
    "PrefixedStore",
    "ReadOnlyStore",
]

StorageTransformerFactory = Callable[[dict[str, Any], Store], Store]

ENTRY_POINT_GROUP = "zarrdask.storage_transformers"

_REGISTRY: dict[str, StorageTransformerFactory] = {}
_entry_points_loaded = False


def register_storage_transformer(name: str, factory: StorageTransformerFactory) -> None:
    """Register ``factory`` under ``name`` (replacing an earlier registration)."""
    _REGISTRY[name] = factory


def get_storage_transformer(name: str) -> StorageTransformerFactory | None:
    """The factory registered as ``name`` (looking in entry points once), or ``None``."""
    global _entry_points_loaded
    if name not in _REGISTRY and not _entry_points_loaded:
        _entry_points_loaded = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            _REGISTRY.setdefault(ep.name, ep.load())
    return _REGISTRY.get(name)


class WrapperStore(Store):
    """A store that forwards every operation to ``inner``; subclass and override to transform.

    Every key goes through :meth:`_inner_key` on its way in and every listed key through
    :meth:`_outer_key` on its way out, so a wrapper that maps keys (``PrefixedStore``)
    overrides those two and cannot miss a method. It is read-only when the inner store
    is. Pickles by its attributes (the inner store and any configuration a subclass keeps).
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.read_only = inner.read_only
        self.writes_parts = inner.writes_parts
        self.is_local = inner.is_local
        self.guard = inner.guard
        self.held_in = inner.held_in
        self.supports_deletes = inner.supports_deletes
        self.supports_writes = inner.supports_writes

    def _update(self, keys: list[str]) -> Update:
        return InnerUpdate(self, keys)

    def identity(self) -> object | None:
        return self.inner.identity()

    def file_of(self, key: str) -> str | None:
        return self.inner.file_of(self._inner_key(key))

    def holds_under(self, prefix: str) -> bool | None:
        return self.inner.holds_under(self._inner_key(prefix))

    def _inner_key(self, key: str) -> str:
        return key

    def _outer_key(self, key: str) -> str:
        return key

    def _get(self, key: str) -> bytes | None:
        return self.inner._get(self._inner_key(key))

    def _get_ranges(self, requests: list[tuple[str, ByteRequest]]) -> list[bytes | None]:
        return self.inner._get_ranges([(self._inner_key(k), r) for k, r in requests])

    def _get_ranges_versioned(self, requests: list[tuple[str, ByteRequest]]) -> VersionedRanges:
        if type(self)._get_ranges is not WrapperStore._get_ranges:  # (a subclass's reads: no versions vouched for)
            return super()._get_ranges_versioned(requests)
        return self.inner._get_ranges_versioned([(self._inner_key(k), r) for k, r in requests])

    def _get_then(self, requests: list[tuple[str, ByteRequest | None]], then: Then) -> list[ThenRead]:
        if type(self)._get_ranges is not WrapperStore._get_ranges:  # (a subclass's reads: in two of its calls)
            return super()._get_then(requests, then)
        return self.inner._get_then([(self._inner_key(k), r) for k, r in requests], then)

    def _iter_ranges(self, requests: list[tuple[str, ByteRequest]]) -> Iterator[tuple[int, bytes | None]]:
        return self.inner._iter_ranges([(self._inner_key(k), r) for k, r in requests])

    def reach(self) -> int:
        return self.inner.reach()

    def _set(self, key: str, value: Buffer) -> None:
        self.inner._set(self._inner_key(key), value)

    def _set_many(self, items: dict[str, Buffer]) -> None:
        self.inner._set_many({self._inner_key(k): v for k, v in items.items()})

    def _delete(self, key: str) -> None:
        self.inner._delete(self._inner_key(key))

    def _delete_many(self, keys: list[str]) -> None:
        self.inner._delete_many([self._inner_key(k) for k in keys])

    def _exists(self, key: str) -> bool:
        return self.inner._exists(self._inner_key(key))

    def _size(self, key: str) -> int | None:
        return self.inner._size(self._inner_key(key))

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        return (self._outer_key(k) for k in self.inner._list_prefix(self._inner_key(prefix)))

    def _list_sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        if type(self)._list_prefix is not WrapperStore._list_prefix or type(self)._size is not WrapperStore._size:
            return super()._list_sizes(prefix)  # (a subclass's listing or sizes: asked key by key through them)
        return ((self._outer_key(k), n) for k, n in self.inner._list_sizes(self._inner_key(prefix)))

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return self.inner._list_dir(self._inner_key(prefix))

    @property
    def url(self) -> str:
        return self.inner.url

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.url, self.read_only))


class InnerUpdate(Update):
    """An update of a wrapper's keys: the inner store's update of the keys they map to."""

    store: WrapperStore

    def begin(self) -> None:
        inner_keys = [self.store._inner_key(k) for k in self.keys]
        self._inner = self.store.inner._update(inner_keys)
        self._inner.begin()
        self.values = dict(zip(self.keys, (self._inner.values[k] for k in inner_keys)))

    def commit(self, values: Mapping[str, Value | None]) -> set[str]:
        changed = self._inner.commit({self.store._inner_key(k): v for k, v in values.items()})
        return {self.store._outer_key(k) for k in changed}

    def close(self) -> None:
        if hasattr(self, "_inner"):
            self._inner.close()


class PrefixedStore(WrapperStore):
    """The part of ``inner`` below ``prefix``: key ``k`` here is ``prefix/k`` there."""

    def __init__(self, inner: Store, prefix: str) -> None:
        super().__init__(inner)
        self.prefix = normalize_key(prefix.strip("/"))

    def _inner_key(self, key: str) -> str:
        return join_path(self.prefix, key)

    def _outer_key(self, key: str) -> str:
        return key[len(self.prefix) + 1:] if self.prefix else key

    @property
    def url(self) -> str:
        return f"{self.inner.url.rstrip('/')}/{self.prefix}" if self.prefix else self.inner.url

    def identity(self) -> object | None:
        inner = self.inner.identity()
        return None if inner is None else (inner, self.prefix)  # (its keys are the inner's below the prefix)


class ReadOnlyStore(WrapperStore):
    """A read-only view of ``inner`` (used by ``open_store(store, mode="r")``)."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.read_only = True
