"""Fetching the bytes of shards' inner chunks: each shard's index (checked, kept in an
:class:`IndexCache`, the missing ones fetched with one batched ranged request, which on a
remote store also brings small shards whole), then every other needed chunk's byte range,
neighbours coalesced, all shards in one batch; or whole shards, one GET each. The one
place that reads a shard's bytes; decoding them is ``shards.py``'s."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple

import numpy as np

from ...codecs.sharding import ShardIndex, ShardingCodec
from ...errors import CodecError, CorruptChunkError
from ...plan.fetch_plan import ChunkPlacement, UnitRead
from ...storage.base import Buffer, ByteRange, Store
from ...storage.coalesce import Merged, coalesce_ranges, split_coalesced
from ...runtime.cache import ArrayKey, last_write
from .base import with_key
from .options import ArrayOptions
from .shard_indexes import IndexCache

__all__ = ["InnerJob", "ShardFetch"]


class InnerJob:
    """One inner chunk of a read: its placement, the unit's target, and its bytes once
    fetched (None: absent from the shard)."""

    __slots__ = ("key", "placement", "target", "data")

    def __init__(self, key: str, placement: ChunkPlacement, target: np.ndarray) -> None:
        self.key, self.placement, self.target = key, placement, target
        self.data: memoryview | bytes | None = None


class _ShardRanges(NamedTuple):
    """One shard's part of a batched ranged read: its place among the read's shards, the
    version of the shard its index was read from, its present inner chunks' byte ranges,
    those ranges coalesced into requests, and the jobs that receive them (in range order).
    A shard with no range to read but a cached index has one empty request, which tells
    its version."""

    unit: int
    version: Hashable | None
    ranges: list[tuple[int, int]]
    merged: list[Merged]
    pending: list[InnerJob]

    @property
    def requests(self) -> int:
        return len(self.merged) or 1


class _Indexes(NamedTuple):
    """The indexes of a read's shards (None: the shard is absent), the version of the shard
    each was read from, whether each came from the cache, and the shards that came whole
    with their index (by position)."""

    indexes: list[ShardIndex | None]
    versions: list[Hashable | None]
    cached: list[bool]
    wholes: dict[int, Buffer]


class ShardFetch:
    """The shard reads of one open array: ``codec_at(coords)`` is the sharding codec of the
    shard at ``coords``, ``shard_bytes`` undoes the bytes->bytes codecs after it (whole
    shards only); ``pool_key`` names the array among the process's writers (see
    :meth:`indexes`).

    A shard's chunks are read in a request after its index's (or long after, the index
    cached): where the store tells versions (local files, S3), the two are compared, and a
    shard that changed in between (another process wrote it) is read again with a new
    index, or whole if it changed again, so a read never puts one version's chunk offsets
    on another's bytes."""

    def __init__(self, store: Store, codec_at: Callable[[tuple[int, ...]], ShardingCodec],
                 shard_bytes: Callable[[Buffer], Buffer], options: ArrayOptions, pool_key: ArrayKey | None) -> None:
        self.store = store
        self.cache = IndexCache(options.index_cache_size)
        self._codec_at = codec_at
        self._shard_bytes = shard_bytes
        self._options = options
        self._pool_key = pool_key
        self._stamp = last_write(pool_key)

    def indexes(self, units: Sequence[UnitRead]) -> list[ShardIndex | None]:
        """Shard indexes from the cache, the rest with one batched ranged request. Another
        open of the array writing in this process makes the cached ones stale: the cache is
        emptied then, and an index fetched across such a write is not kept."""
        return self._indexes(units, 0).indexes

    def _indexes(self, units: Sequence[UnitRead], reach: int) -> _Indexes:
        """:meth:`indexes` with their versions, each request asking for up to ``reach`` bytes
        in all beside the indexes (shared among them)."""
        stamp = last_write(self._pool_key)
        if stamp != self._stamp:
            self.cache.clear()
            self._stamp = stamp
        held = [self.cache.get(u.key) for u in units]
        got = _Indexes([None if h is None else h[0] for h in held], [None if h is None else h[1] for h in held],
                       [h is not None for h in held], {})
        todo = [i for i, h in enumerate(held) if h is None]
        if not todo:
            return got
        codecs = {i: self._codec_at(units[i].coords) for i in todo}
        each = reach // len(todo)
        requests = [(units[i].key, codecs[i].index_request(each)) for i in todo]
        fetched = self.store.get_ranges_versioned(requests)
        for i, raw, version in zip(todo, fetched.values, fetched.versions):
            if raw is None:
                continue
            key = units[i].key
            try:
                index, whole = codecs[i].index_from(raw, key, each)
            except CodecError as exc:
                raise with_key(exc, key) from exc
            got.indexes[i], got.versions[i] = index, version
            if whole is not None:
                got.wholes[i] = whole
            if self._keeps(version) and last_write(self._pool_key) == stamp:
                self.cache.put(key, index, version)
        return got

    def _keeps(self, version: Hashable | None) -> bool:
        """Whether an index read from a shard of ``version`` may serve later reads: where
        the store tells versions (a later read sees the shard changed), or where only this
        process writes the store and its writes are tracked (``pool_key``). Elsewhere (a
        zarr-python store, a mapping) another writer's shard would be read at this index's
        offsets, so the index is read with every read, as zarr-python does."""
        return version is not None or (self._pool_key is not None and self.store.held_in == "process")

    def ranges(self, units: list[UnitRead], targets: list[np.ndarray]) -> list[InnerJob]:
        """The inner chunks of partly read shards, with their bytes: the indexes (cached, or
        one batched request that brings small shards whole: ``Store.reach``), then every
        needed range of the others, neighbours coalesced, in one batch. A shard that
        changed after its index was read is read again (see the class)."""
        per_unit, changed = self._ranges(units, targets)
        if changed:
            self.cache.invalidate([units[i].key for i in changed])
            again, still = self._ranges([units[i] for i in changed], [targets[i] for i in changed])
            for i, jobs in zip(changed, again):
                per_unit[i] = jobs
            if still:
                whole = [changed[k] for k in still]
                for i, jobs in zip(whole, self._whole_units([units[i] for i in whole], [targets[i] for i in whole])):
                    per_unit[i] = jobs
        return [job for jobs in per_unit for job in jobs]

    def _ranges(self, units: list[UnitRead], targets: list[np.ndarray]) -> tuple[list[list[InnerJob]], list[int]]:
        """:meth:`ranges` once: each unit's jobs, and the units whose shard's version
        changed after its index was read (their jobs without bytes)."""
        requests: list[tuple[str, ByteRange]] = []
        shards: list[_ShardRanges] = []
        got = self._indexes(units, self.store.reach())
        per_unit = [[InnerJob(unit.key, placement, target) for placement in unit.chunks]
                    for unit, target in zip(units, targets)]
        for i, (unit, inner, index) in enumerate(zip(units, per_unit, got.indexes)):
            if index is None:
                continue
            whole = memoryview(got.wholes[i]) if i in got.wholes else None
            ranges, pending = [], []
            for job, where in zip(inner, index.lookup([job.placement.position for job in inner])):
                if where is None:
                    continue
                if whole is not None:
                    job.data = whole[where[0]: where[1]]
                else:
                    ranges.append(where)
                    pending.append(job)
            version = got.versions[i]
            if not pending:
                if got.cached[i] and version is not None:
                    requests.append((unit.key, ByteRange(0, 0)))
                    shards.append(_ShardRanges(i, version, [], [], []))
                continue
            merged = coalesce_ranges(ranges, self._options.coalesce_gap, self._options.coalesce_max)
            requests.extend((unit.key, ByteRange(s, e - s)) for s, e, _ in merged)
            shards.append(_ShardRanges(i, version, ranges, merged, pending))
        fetched = self.store.get_ranges_versioned(requests)
        changed: list[int] = []
        pos = 0
        for shard in shards:
            n = shard.requests
            values, versions = fetched.values[pos: pos + n], fetched.versions[pos: pos + n]
            pos += n
            if shard.version is not None and any(v != shard.version for v in versions):
                changed.append(shard.unit)
                continue
            for (start, end), piece, job in zip(shard.ranges, split_coalesced(shard.ranges, shard.merged, values),
                                                shard.pending):
                if piece is None or len(piece) != end - start:
                    found = "nothing" if piece is None else f"{len(piece)} bytes"
                    raise CorruptChunkError(
                        f"shard {job.key}, inner chunk {job.placement.coords}: expected {end - start} bytes at offset "
                        f"{start}, got {found} (truncated shard)")
                job.data = piece
        for i in changed:
            for job in per_unit[i]:
                job.data = None
        return per_unit, changed

    def whole(self, units: list[UnitRead], targets: list[np.ndarray]) -> list[InnerJob]:
        """The inner chunks of ``units`` with their bytes, from whole shards (one GET each)."""
        return [job for jobs in self._whole_units(units, targets) for job in jobs]

    def _whole_units(self, units: list[UnitRead], targets: list[np.ndarray]) -> list[list[InnerJob]]:
        """:meth:`whole`, each unit's jobs apart."""
        per_unit = []
        for unit, target, blob in zip(units, targets, self.store.get_many([u.key for u in units])):
            inner = [InnerJob(unit.key, placement, target) for placement in unit.chunks]
            per_unit.append(inner)
            if blob is None:
                continue
            try:
                shard = self._shard_bytes(blob)
                index = self._codec_at(unit.coords).index_of(shard, unit.key)
            except CodecError as exc:
                raise with_key(exc, unit.key) from exc
            view = memoryview(shard)
            for job in inner:
                where = index.locate(job.placement.position)
                if where is not None:
                    job.data = view[where[0]: where[1]]
        return per_unit
