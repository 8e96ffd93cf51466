"""Fetching the bytes of shards' inner chunks: each shard's index (checked, kept in an
:class:`IndexCache`, the missing ones fetched with one batched ranged request, which on a
remote store also brings small shards whole), then every other needed chunk's byte range,
neighbours coalesced, all shards in one batch; or whole shards, one GET each. The one
place that reads a shard's bytes; decoding them is ``shards.py``'s."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    """One shard's part of a batched ranged read: its present inner chunks' byte ranges,
    those ranges coalesced into requests, and the jobs that receive them (in range order)."""

    ranges: list[tuple[int, int]]
    merged: list[Merged]
    pending: list[InnerJob]


class ShardFetch:
    """The shard reads of one open array: ``codec_at(coords)`` is the sharding codec of the
    shard at ``coords``, ``shard_bytes`` undoes the bytes->bytes codecs after it (whole
    shards only); ``pool_key`` names the array among the process's writers (see
    :meth:`indexes`)."""

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
        return self._indexes(units, 0)[0]

    def _indexes(self, units: Sequence[UnitRead], reach: int) -> tuple[list[ShardIndex | None], dict[int, Buffer]]:
        """:meth:`indexes`, each request asking for up to ``reach`` bytes in all beside the
        indexes (shared among them); the shards that came whole with their index, by position."""
        stamp = last_write(self._pool_key)
        if stamp != self._stamp:
            self.cache.clear()
            self._stamp = stamp
        indexes = [self.cache.get(u.key) for u in units]
        todo = [i for i, idx in enumerate(indexes) if idx is None]
        codecs = {i: self._codec_at(units[i].coords) for i in todo}
        each = reach // max(len(todo), 1)
        requests = [(units[i].key, codecs[i].index_request(each)) for i in todo]
        wholes: dict[int, Buffer] = {}
        for i, raw in zip(todo, self.store.get_ranges(requests)):
            if raw is None:
                continue
            key = units[i].key
            try:
                index, whole = codecs[i].index_from(raw, key, each)
            except CodecError as exc:
                raise with_key(exc, key) from exc
            indexes[i] = index
            if whole is not None:
                wholes[i] = whole
            if last_write(self._pool_key) == stamp:
                self.cache.put(key, index)
        return indexes, wholes

    def ranges(self, units: list[UnitRead], targets: list[np.ndarray]) -> list[InnerJob]:
        """The inner chunks of partly read shards, with their bytes: the indexes (cached, or
        one batched request that brings small shards whole: ``Store.reach``), then every
        needed range of the others, neighbours coalesced, in one batch."""
        jobs: list[InnerJob] = []
        requests: list[tuple[str, ByteRange]] = []
        shards: list[_ShardRanges] = []
        indexes, wholes = self._indexes(units, self.store.reach())
        for i, (unit, target, index) in enumerate(zip(units, targets, indexes)):
            key = unit.key
            inner = [InnerJob(key, placement, target) for placement in unit.chunks]
            jobs.extend(inner)
            if index is None:
                continue
            whole = memoryview(wholes[i]) if i in wholes else None
            ranges, pending = [], []
            for job in inner:
                where = index.locate(job.placement.position)
                if where is None:
                    continue
                if whole is not None:
                    job.data = whole[where[0]: where[1]]
                else:
                    ranges.append(where)
                    pending.append(job)
            if not pending:
                continue
            merged = coalesce_ranges(ranges, self._options.coalesce_gap, self._options.coalesce_max)
            requests.extend((key, ByteRange(s, e - s)) for s, e, _ in merged)
            shards.append(_ShardRanges(ranges, merged, pending))
        fetched = self.store.get_ranges(requests)
        pos = 0
        for shard in shards:
            pieces = split_coalesced(shard.ranges, shard.merged, fetched[pos: pos + len(shard.merged)])
            pos += len(shard.merged)
            for (start, end), piece, job in zip(shard.ranges, pieces, shard.pending):
                if piece is None or len(piece) != end - start:
                    got = "nothing" if piece is None else f"{len(piece)} bytes"
                    raise CorruptChunkError(
                        f"shard {job.key}, inner chunk {job.placement.coords}: expected {end - start} bytes at offset "
                        f"{start}, got {got} (truncated shard)")
                job.data = piece
        return jobs

    def whole(self, units: list[UnitRead], targets: list[np.ndarray]) -> list[InnerJob]:
        """The inner chunks of ``units`` with their bytes, from whole shards (one GET each)."""
        jobs = []
        for unit, target, blob in zip(units, targets, self.store.get_many([u.key for u in units])):
            inner = [InnerJob(unit.key, placement, target) for placement in unit.chunks]
            jobs.extend(inner)
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
        return jobs
