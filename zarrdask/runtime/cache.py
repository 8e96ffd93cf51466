"""The decoded-chunk cache: one LRU pool per process of decoded chunks, bounded in bytes
and shared by every open of an array. A shard small beside the budget is held as one array
its chunks are decoded into (``held_shard.py``), larger ones chunk by chunk.

An entry is keyed by the array (its store's identity and chunk path), a token of its
metadata document, the stored key and the chunk's position inside the stored value, so
another array, another version of the metadata or another chunk can never hit it. A
write through zarrdask invalidates every entry of the keys it replaces (whatever their
metadata token) and refuses entries decoded from bytes fetched before it. A change made
by another process is not seen: ``zarrdask.cache_clear()`` (or ``Array.cache_clear()``)
forgets what was cached.

The pool is module-level and never pickled: an array that travels to another process
finds that process's pool. Its limit is the largest budget any open in the process has
asked for; arrays whose budget is 0 read straight into their output, as without a cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np

from ..errors import InvalidModeError, warn
from ..indexing import OrthogonalSelection, Selection
from ..display.kit import Fact, document, fact_table, format_bytes
from ..plan.fetch_plan import ReadPlan
from ..storage.base import Store
from .held_shard import HeldShard
from .output import set_spare_room, spare_bytes, trim_spares

__all__ = ["ArrayCache", "ArrayKey", "CacheInfo", "CONFIG_KEY", "array_cache", "array_statistics", "cache_clear",
           "check_budget", "forget", "forget_below", "last_write", "pool_info", "pool_key"]

#: the dask config key of the process-wide default budget (read when an array is opened)
CONFIG_KEY = "zarrdask.cache-bytes"

#: an array in the pool: (store identity, chunk path)
ArrayKey = tuple[object, str]
#: one entry: (store identity, chunk path, stored key, metadata token, position in the stored value)
EntryKey = tuple[object, str, str, str, int]
#: the position of a held shard's entry (a HeldShard: its inner chunks side by side;
#: inner chunks' own entries keep the sharding codec's axis order)
WHOLE = -1
#: what an entry holds: a decoded chunk, or a shard its chunks are decoded into
Entry = np.ndarray | HeldShard


class CacheInfo(NamedTuple):
    """One array's cache statistics (counted over every open of it in this process) and
    the process pool's. Hits and misses count inner chunks (or chunks); ``entries`` counts
    what the pool holds: chunks, and shards held as one array. ``budget``: what this open
    asked for (0: it reads uncached)."""

    hits: int
    misses: int
    evictions: int
    entries: int
    bytes: int
    budget: int
    pool_bytes: int
    pool_limit: int

    def __repr__(self) -> str:
        looked = self.hits + self.misses
        rate = f" ({self.hits / looked:.0%})" if looked else ""
        return (f"CacheInfo(hits={self.hits}{rate}, misses={self.misses}, evictions={self.evictions}, "
                f"entries={self.entries}, bytes={format_bytes(self.bytes)}, budget={format_bytes(self.budget)}, "
                f"pool={format_bytes(self.pool_bytes)} of {format_bytes(self.pool_limit)})")

    def _repr_html_(self) -> str:
        looked = self.hits + self.misses
        facts = fact_table((
            Fact("Hits", f"{self.hits}" + (f" ({self.hits / looked:.1%} of lookups)" if looked else "")),
            Fact("Misses", str(self.misses)),
            Fact("Evictions", str(self.evictions)),
            Fact("Entries held (chunks, shards)", str(self.entries)),
            Fact("Bytes held", format_bytes(self.bytes)),
            Fact("Budget of this open", format_bytes(self.budget) if self.budget else "off"),
            Fact("Process pool", f"{format_bytes(self.pool_bytes)} of {format_bytes(self.pool_limit)}"),
        ))
        return document("zarrdask CacheInfo", "decoded-chunk cache", repr(self), facts)


def check_budget(value: object) -> int | None:
    """A ``cache_bytes`` value as bytes: an int, a string dask reads (``"512 MiB"``), or
    None (not given: the config default applies); anything else is an InvalidModeError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, str)):
        raise InvalidModeError(f"cache_bytes={value!r}: pass a number of bytes (int) or a string such as "
                               "'512 MiB' (0: no cache)")
    if isinstance(value, str):
        from dask.utils import parse_bytes

        try:
            value = parse_bytes(value)
        except ValueError as exc:
            raise InvalidModeError(f"cache_bytes={value!r} is not a size ({exc}): pass a number of bytes (int) or "
                                   "a string such as '512 MiB' (0: no cache)") from None
    if int(value) < 0:
        raise InvalidModeError(f"cache_bytes={value!r}: pass a size >= 0 (0: no cache)")
    return int(value)


def _default_budget() -> int:
    """The process-wide default: dask's config key :data:`CONFIG_KEY` (``dask.config.set``,
    dask's YAML files) once dask is imported, else its environment variable
    ``DASK_ZARRDASK__CACHE_BYTES`` (so an open does not import dask); 0 when unset. Never
    inside a dask worker: there only an array's own ``cache_bytes`` turns the cache on."""
    config = sys.modules.get("dask.config")
    value = config.get(CONFIG_KEY, None) if config is not None else os.environ.get(_CONFIG_ENV)
    if not value or _in_worker():
        return 0
    try:
        return check_budget(value) or 0
    except InvalidModeError as exc:
        raise InvalidModeError(f"dask config {CONFIG_KEY!r}: {exc}") from None


_CONFIG_ENV = "DASK_ZARRDASK__CACHE_BYTES"


def _in_worker() -> bool:
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True


def metadata_token(document: dict[str, Any]) -> str:
    """A digest of an array's metadata document: entries of another version never match."""
    return hashlib.sha1(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class _Counts:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    entries: int = 0
    bytes: int = 0


class _Pool:
    """The process's LRU of decoded chunks (thread-safe; every method holds the lock)."""

    def __init__(self) -> None:
        self.limit = 0
        self.bytes = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[EntryKey, Entry] = OrderedDict()
        self._by_key: dict[tuple[object, str, str], set[EntryKey]] = {}
        self._arrays: dict[ArrayKey, _Counts] = {}
        self._clock = 0
        self.generation = 0  # (counts clear(): what per-open state of the cache compares)
        self._written: dict[ArrayKey, int] = {}  # the clock at each array's last invalidation

    def ask(self, budget: int) -> None:
        """Raise the limit to ``budget`` (the largest budget asked in the process)."""
        with self._lock:
            self.limit = max(self.limit, budget)

    def counts(self, array: ArrayKey) -> _Counts:
        counts = self._arrays.get(array)
        if counts is None:
            counts = self._arrays[array] = _Counts()
        return counts

    def ticket(self) -> int:
        """The clock before a fetch: what is decoded from it may enter only if no
        invalidation of its array came after."""
        with self._lock:
            return self._clock

    def get_many(self, array: ArrayKey, keys: list[EntryKey], counted: bool = True) -> list[Entry | None]:
        """The entries of ``keys`` (None: not held), each a chunk lookup when ``counted``
        (held shards count their chunks with :meth:`tally`)."""
        with self._lock:
            found = [self._entries.get(k) for k in keys]
            for k, v in zip(keys, found):
                if v is not None:
                    self._entries.move_to_end(k)
            if counted:
                hits = sum(v is not None for v in found)
                counts = self.counts(array)
                counts.hits += hits
                counts.misses += len(keys) - hits
            return found

    def tally(self, array: ArrayKey, hits: int, misses: int) -> None:
        with self._lock:
            counts = self.counts(array)
            counts.hits += hits
            counts.misses += misses

    def current(self, array: ArrayKey, ticket: int) -> bool:
        """Whether no write of ``array`` came after ``ticket``."""
        return self._written.get(array, -1) <= ticket  # (one dict read: atomic)

    def put(self, array: ArrayKey, key: EntryKey, chunk: Entry, ticket: int) -> None:
        size = chunk.nbytes
        with self._lock:
            if size > self.limit or self._written.get(array, -1) > ticket or key in self._entries:
                return
            while self.bytes + size > self.limit:
                self._evict()
            self._entries[key] = chunk
            self._by_key.setdefault(key[:3], set()).add(key)
            self.bytes += size
            if spare_bytes() > self.limit - self.bytes:  # (the buffers kept for reuse give way)
                trim_spares(self.limit - self.bytes)
            counts = self.counts(array)
            counts.entries += 1
            counts.bytes += size

    def _evict(self) -> None:
        key, chunk = self._entries.popitem(last=False)
        self._drop(key, chunk)
        self.counts(key[:2]).evictions += 1

    def _drop(self, key: EntryKey, chunk: Entry) -> None:
        self.bytes -= chunk.nbytes
        counts = self.counts(key[:2])
        counts.entries -= 1
        counts.bytes -= chunk.nbytes
        siblings = self._by_key.get(key[:3])
        if siblings is not None:
            siblings.discard(key)
            if not siblings:
                del self._by_key[key[:3]]

    def discard(self, keys: Iterable[EntryKey]) -> None:
        """Let go of the entries of ``keys`` that are held (what a held shard now holds too):
        not an invalidation, the values are still current."""
        with self._lock:
            for key in keys:
                chunk = self._entries.pop(key, None)
                if chunk is not None:
                    self._drop(key, chunk)

    def invalidate(self, array: ArrayKey, keys: Iterable[str] | None) -> None:
        """Forget the entries of the stored ``keys`` of ``array`` (None: all of them), and
        refuse entries from fetches that began before."""
        with self._lock:
            self._clock += 1
            self._written[array] = self._clock
            counts = self._arrays.get(array)
            if counts is None or not counts.entries:
                return
            if keys is None:
                doomed = [k for k in self._entries if k[:2] == array]
            else:
                doomed = [e for k in keys for e in self._by_key.get((*array, k), ())]
            for key in doomed:
                self._drop(key, self._entries.pop(key))

    def arrays_below(self, ident: object, path: str) -> list[ArrayKey]:
        """The arrays of store ``ident`` at ``path`` or below that the pool has seen."""
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        with self._lock:
            return [a for a in {*self._arrays, *self._written}
                    if a[0] == ident and (a[1] == path.strip("/") or a[1].startswith(prefix))]

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._clock += 1
            for array in self._arrays:
                self._written[array] = self._clock
            entries, self._entries = self._entries, OrderedDict()
            self._by_key.clear()
            self._arrays.clear()
            self.bytes = 0
        del entries  # (their buffers, kept for reuse within the budget, now that the pool is empty)

    def last_write(self, array: ArrayKey) -> int:
        return self._written.get(array, 0)  # (one dict read: atomic, no lock needed)

    def totals(self) -> CacheInfo:
        with self._lock:
            every = list(self._arrays.values())
            return CacheInfo(sum(c.hits for c in every), sum(c.misses for c in every),
                             sum(c.evictions for c in every), len(self._entries), self.bytes, self.limit,
                             self.bytes, self.limit)

    def info(self, array: ArrayKey | None, budget: int) -> CacheInfo:
        with self._lock:
            c = self._arrays.get(array, _Counts()) if array is not None else _Counts()
            return CacheInfo(c.hits, c.misses, c.evictions, c.entries, c.bytes, budget, self.bytes, self.limit)


_POOL = _Pool()
# (held arrays' buffers are kept for reuse in what the pool leaves of its budget)
set_spare_room(lambda: max(_POOL.limit - _POOL.bytes, 0))


#: the chunk placements of the read plans an open keeps (of basic selections), in all and
#: in one plan: a few MiB of small records at most
PLAN_CHUNKS = 1 << 15
PLAN_CHUNKS_EACH = 4096


class ArrayCache:
    """One open array's view of the pool: its key parts and its budget, and the plans of
    its last basic selections, up to :data:`PLAN_CHUNKS` chunk placements (a revisit then
    plans nothing: with every chunk held, planning is most of a read's time). Plans depend only on the selection
    and the open's layout, so they cannot go stale; :func:`cache_clear` drops them too."""

    __slots__ = ("array", "token", "budget", "_plans", "_plans_lock", "_placements", "_generation")

    def __init__(self, array: ArrayKey, token: str, budget: int) -> None:
        self.array, self.token, self.budget = array, token, budget
        self._plans: OrderedDict[tuple[object, ...], ReadPlan] = OrderedDict()
        self._plans_lock = threading.Lock()
        self._placements = 0
        self._generation = _POOL.generation
        _POOL.ask(budget)

    def plan(self, selection: Selection, make: Callable[[Selection], ReadPlan]) -> ReadPlan:
        """The plan of ``selection``: kept from an earlier read of it, else ``make``'s."""
        if not isinstance(selection, OrthogonalSelection):
            return make(selection)
        dims = selection.dims
        if not all(isinstance(d, slice) for d in dims):
            return make(selection)
        key = tuple((d.start, d.stop, d.step) for d in dims if isinstance(d, slice))
        with self._plans_lock:
            if self._generation != _POOL.generation:
                self._plans.clear()
                self._placements = 0
                self._generation = _POOL.generation
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                return plan
        plan = make(selection)
        placements = _placements(plan)
        if placements <= PLAN_CHUNKS_EACH:
            with self._plans_lock:
                if key not in self._plans:
                    self._plans[key] = plan
                    self._placements += placements
                while self._placements > PLAN_CHUNKS:
                    self._placements -= _placements(self._plans.popitem(last=False)[1])
        return plan

    def ticket(self) -> int:
        return _POOL.ticket()

    def get_many(self, items: Iterable[tuple[str, int]], counted: bool = True) -> list[np.ndarray | None]:
        """The decoded chunks at (stored key, position in it) of ``items`` (None: not held),
        each a chunk lookup in the statistics when ``counted``."""
        ident, path = self.array
        token = self.token
        return cast("list[np.ndarray | None]", _POOL.get_many(self.array, [(ident, path, key, token, p)
                                                                           for key, p in items], counted))

    def put(self, key: str, position: int, chunk: np.ndarray, ticket: int) -> None:
        """Hold ``chunk`` (read-only from now on), unless a write came after ``ticket``."""
        chunk.flags.writeable = False
        ident, path = self.array
        _POOL.put(self.array, (ident, path, key, self.token, position), chunk, ticket)

    def discard(self, items: Iterable[tuple[str, int]]) -> None:
        """Let go of the decoded chunks at (stored key, position in it) of ``items``, which a
        held shard now holds: their budget goes back to the pool."""
        ident, path = self.array
        token = self.token
        _POOL.discard([(ident, path, key, token, p) for key, p in items])

    def get_shards(self, keys: list[str]) -> list[HeldShard | None]:
        """The shards held for the stored ``keys`` (None: not held; lookups counted by
        :meth:`tally`, chunk by chunk)."""
        ident, path = self.array
        token = self.token
        return cast("list[HeldShard | None]", _POOL.get_many(self.array, [(ident, path, key, token, WHOLE)
                                                                          for key in keys], counted=False))

    def put_shard(self, key: str, shard: HeldShard, ticket: int) -> None:
        """Hold ``shard`` for the stored ``key``, unless a write came after ``ticket``."""
        ident, path = self.array
        _POOL.put(self.array, (ident, path, key, self.token, WHOLE), shard, ticket)

    def tally(self, hits: int, misses: int) -> None:
        """Count chunk lookups served by held shards."""
        _POOL.tally(self.array, hits, misses)

    def current(self, ticket: int) -> bool:
        """Whether no write through zarrdask of this array came after ``ticket``."""
        return _POOL.current(self.array, ticket)

    def holds_shard(self, nbytes: int) -> bool:
        """Whether a shard of ``nbytes`` decoded is held as one array: when at most an eighth
        of the budget, so that a few shards never crowd out everything else."""
        return 0 < nbytes <= self.budget // 8


def _placements(plan: ReadPlan) -> int:
    return sum(len(u.chunks) for u in plan.units)


def pool_key(store: Store, path: str) -> ArrayKey | None:
    """How the pool names the array whose chunks are at ``path`` in ``store`` (None: a store
    the pool does not trust, see ``Store.identity``)."""
    ident = store.identity()
    return None if ident is None else (ident, path)


def array_cache(array: ArrayKey | None, document: Callable[[], dict[str, Any]],
                cache_bytes: int | str | None, store: Store) -> ArrayCache | None:
    """The cache of an array opened with ``cache_bytes`` (None: the config default) in
    ``store``, or None when its budget is 0 or its store has no identity the pool can trust
    (then, asked for a budget, it says so). ``document`` gives the metadata's JSON, asked
    only when the array is cached (its token)."""
    asked = check_budget(cache_bytes)
    if array is None:
        if asked:
            warn(f"cache_bytes={cache_bytes!r}: {store!r} may not name one state of its contents (a zarr-python "
                 "store, or one holding writes back), so this array is read without the decoded-chunk cache; to "
                 "cache its chunks, open it by its path or URL (zarrdask.open_array('<path or URL>', "
                 "cache_bytes=...)), or leave cache_bytes out")
        return None
    budget = _default_budget() if asked is None else asked
    return ArrayCache(array, metadata_token(document()), budget) if budget else None


def forget(array: ArrayKey | None, keys: Iterable[str] | None = None) -> None:
    """A write through zarrdask replaced the stored ``keys`` of ``array`` (None: all of its
    keys): forget them, whatever open cached them."""
    if array is not None:
        _POOL.invalidate(array, keys)


def forget_below(store: Store, path: str) -> None:
    """zarrdask deleted the node at ``path`` (and everything below): forget every array there."""
    ident = store.identity()
    if ident is not None:
        for array in _POOL.arrays_below(ident, path):
            _POOL.invalidate(array, None)


def last_write(array: ArrayKey | None) -> int:
    """When zarrdask last changed ``array`` in this process (a clock; 0: never): what other
    per-open caches of it (shard indexes) compare to know they may be stale."""
    return 0 if array is None else _POOL.last_write(array)


def array_statistics(array: ArrayKey | None, budget: int) -> CacheInfo:
    """``array``'s statistics (every open of it in the process) and the pool's."""
    return _POOL.info(array, budget)


def pool_info() -> CacheInfo:
    """The whole pool's figures: every array's counts summed, ``budget`` the pool's limit."""
    return _POOL.totals()


def cache_clear() -> None:
    """Forget every decoded chunk held in this process (after another process changed a
    store this process has cached). Statistics restart; the pool's limit stays, and the
    chunks' memory is kept, within it, for the entries that follow."""
    _POOL.clear()
