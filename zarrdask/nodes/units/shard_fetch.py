"""Fetching the bytes of shards' inner chunks: each shard's index (checked, kept in an
:class:`IndexCache`; a missing one read first, in the same store call as the chunks it
points to, ``Store.get_then``; on a remote store its request also brings a small shard
whole), then every needed chunk's byte range, neighbours coalesced, all shards in one
call; or whole shards, one GET each. The one place that reads a shard's bytes; decoding
them is ``shards.py``'s."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple

import numpy as np

from ...codecs.sharding import ShardIndex, ShardingCodec
from ...errors import CodecError, CorruptChunkError
from ...plan.fetch_plan import ChunkPlacement, UnitRead
from ...storage.base import Buffer, ByteRange, ByteRequest, Store
from ...storage.coalesce import Merged, coalesce_ranges, split_coalesced
from ...runtime.cache import ArrayKey, last_write
from .base import with_key
from .options import ArrayOptions
from .shard_indexes import IndexCache

__all__ = ["InnerJob", "ShardFetch", "merge_gap"]

#: the gap between two needed ranges of a shard worth reading to save a request: on local
#: disk a request costs about what copying 16 KiB does (benchmarks/HISTORY.md, session 40),
#: elsewhere a round trip, which brings far more
_LOCAL_GAP = 16 << 10
_REMOTE_GAP = 64 << 10


def merge_gap(store: Store, gap: int | None) -> int:
    """How far apart two ranges of one key may be and still be read in one request:
    ``gap`` (``ArrayOptions.coalesce_gap``), or when None what ``store`` makes it pay."""
    if gap is not None:
        return gap
    return _LOCAL_GAP if store.is_local else _REMOTE_GAP


class InnerJob:
    """One inner chunk of a read: its placement, the unit's target, and its bytes once
    fetched (None: absent from the shard)."""

    __slots__ = ("key", "placement", "target", "data")

    def __init__(self, key: str, placement: ChunkPlacement, target: np.ndarray) -> None:
        self.key, self.placement, self.target = key, placement, target
        self.data: memoryview | bytes | None = None


class _ShardRanges(NamedTuple):
    """One shard's part of a ranged read: its present inner chunks' byte ranges, those
    ranges coalesced into requests, and the jobs that receive them (in range order)."""

    ranges: list[tuple[int, int]]
    merged: list[Merged]
    pending: list[InnerJob]


class ShardFetch:
    """The shard reads of one open array: ``codec_at(coords)`` is the sharding codec of the
    shard at ``coords``, ``shard_bytes`` undoes the bytes->bytes codecs after it (whole
    shards only); ``pool_key`` names the array among the process's writers (see
    :meth:`indexes`).

    A shard's chunks are read after its index (``Store.get_then``: on one descriptor on
    local disk, in a second request elsewhere), or long after, the index cached. Where the
    store tells versions (local files, S3), a shard that changed in between (another
    process wrote it) is read again with a new index, or whole if it changed again, so a
    read never puts one version's chunk offsets on another's bytes."""

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
        stamp = self._fresh()
        held = [self.cache.get(u.key) for u in units]
        found = [None if h is None else h[0] for h in held]
        todo = [i for i, h in enumerate(held) if h is None]
        if todo:
            fetched = self.store.get_ranges_versioned(
                [(units[i].key, self._codec_at(units[i].coords).index_request()) for i in todo])
            for i, raw, version in zip(todo, fetched.values, fetched.versions):
                if raw is not None:
                    found[i] = self._parsed(units[i], raw, version, 0, stamp)[0]
        return found

    def _fresh(self) -> object:
        """The process's last write to this array, the cache emptied when it is new."""
        stamp = last_write(self._pool_key)
        if stamp != self._stamp:
            self.cache.clear()
            self._stamp = stamp
        return stamp

    def _parsed(self, unit: UnitRead, raw: Buffer, version: Hashable | None, reach: int,
                stamp: object) -> tuple[ShardIndex, Buffer | None]:
        """The index of ``unit``'s shard from the answer to its index request (asking for
        ``reach`` more bytes), and the whole shard when the answer holds it; the index kept
        where it may serve later reads (:meth:`_keeps`, and no write by this process since
        ``stamp``)."""
        try:
            index, whole = self._codec_at(unit.coords).index_from(raw, unit.key, reach)
        except CodecError as exc:
            raise with_key(exc, unit.key) from exc
        if self._keeps(version) and last_write(self._pool_key) == stamp:
            self.cache.put(unit.key, index, version)
        return index, whole

    def _keeps(self, version: Hashable | None) -> bool:
        """Whether an index read from a shard of ``version`` may serve later reads: where
        the store tells versions (a later read sees the shard changed), or where only this
        process writes the store and its writes are tracked (``pool_key``). Elsewhere (a
        zarr-python store, a mapping) another writer's shard would be read at this index's
        offsets, so the index is read with every read, as zarr-python does."""
        return version is not None or (self._pool_key is not None and self.store.held_in == "process")

    def ranges(self, units: list[UnitRead], targets: list[np.ndarray]) -> list[InnerJob]:
        """The inner chunks of partly read shards, with their bytes: each shard's index
        (cached, or read first; a remote store's index request also brings a small shard
        whole: ``Store.reach``), then the ranges of its needed chunks, neighbours coalesced,
        all shards in one store call. A shard that changed after its index was read is read
        again (see the class)."""
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
        stamp = self._fresh()
        held = [self.cache.get(u.key) for u in units]
        todo = sum(h is None for h in held)
        each = self.store.reach() // todo if todo else 0
        per_unit = [[InnerJob(unit.key, placement, target) for placement in unit.chunks]
                    for unit, target in zip(units, targets)]
        shards: dict[int, _ShardRanges] = {}
        gap, most = merge_gap(self.store, self._options.coalesce_gap), self._options.coalesce_max

        def then(i: int, raw: bytes | None, version: Hashable | None) -> list[ByteRequest]:
            """The ranges of unit ``i``'s needed chunks, from its index (cached, or ``raw``)."""
            inner, cached = per_unit[i], held[i]
            if cached is None:
                assert raw is not None
                index, whole = self._parsed(units[i], raw, version, each, stamp)
            else:
                index, whole = cached[0], None
            ranges, pending = [], []
            for job, where in zip(inner, index.lookup([job.placement.position for job in inner])):
                if where is None:
                    continue
                if whole is not None:
                    job.data = memoryview(whole)[where[0]: where[1]]
                else:
                    ranges.append(where)
                    pending.append(job)
            if not pending:  # (a cached index's shard may have changed: an empty range tells its version)
                return [ByteRange(0, 0)] if cached is not None and cached[1] is not None else []
            merged = coalesce_ranges(ranges, gap, most)
            shards[i] = _ShardRanges(ranges, merged, pending)
            return [ByteRange(s, e - s) for s, e, _ in merged]

        reads = self.store.get_then([(u.key, None if h is not None else self._codec_at(u.coords).index_request(each))
                                     for u, h in zip(units, held)], then)
        changed: list[int] = []
        for i, (read, cached) in enumerate(zip(reads, held)):
            if read.changed or (cached is not None and cached[1] is not None and read.version != cached[1]):
                changed.append(i)
                for job in per_unit[i]:
                    job.data = None
                continue
            shard = shards.get(i)
            if shard is None:
                continue
            for (start, end), piece, job in zip(shard.ranges, split_coalesced(shard.ranges, shard.merged, read.values),
                                                shard.pending):
                if piece is None or len(piece) != end - start:
                    found = "nothing" if piece is None else f"{len(piece)} bytes"
                    raise CorruptChunkError(
                        f"shard {job.key}, inner chunk {job.placement.coords}: expected {end - start} bytes at offset "
                        f"{start}, got {found} (truncated shard)")
                job.data = piece
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
