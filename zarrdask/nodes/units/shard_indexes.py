"""The shard indexes an open array has read, kept so a partial read of a shard fetches its
index once; each with the version of the shard it was read from (``Store.get_ranges_versioned``),
which a later read of the shard's chunks compares with its own."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable

from ...codecs.sharding import ShardIndex

__all__ = ["IndexCache"]


class IndexCache:
    """A thread-safe LRU of checked shard indexes and their shards' versions, by store key."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, tuple[ShardIndex, Hashable | None]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[ShardIndex, Hashable | None] | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: str, index: ShardIndex, version: Hashable | None) -> None:
        if self.maxsize <= 0:
            return
        with self._lock:
            self._data[key] = (index, version)
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def invalidate(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._data.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
