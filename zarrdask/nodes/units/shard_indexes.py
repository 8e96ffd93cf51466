"""The shard indexes an open array has read, kept so a partial read of a shard fetches its
index once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from ...codecs.sharding import ShardIndex

__all__ = ["IndexCache"]


class IndexCache:
    """A thread-safe LRU of checked shard indexes, by store key."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, ShardIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> ShardIndex | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: str, index: ShardIndex) -> None:
        if self.maxsize <= 0:
            return
        with self._lock:
            self._data[key] = index
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
