"""Sharded reads through the decoded-chunk cache (``runtime/cache.py``).

A shard small beside the budget is held as one array of its inner chunks side by side
(``runtime/held_shard.py``) once a read wants a quarter of its chunks or more, or once it is
held; other shards are held chunk by chunk. What is missing is fetched as the read's plan
says and decoded by the source's codecs; what is held is copied out (``copies.py``). The
uncached reads, and the fetching and decoding both share, are ``shards.py``'s."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from ...codecs.pipeline import CodecPipeline
from ...codecs.sharding import ShardingCodec
from ...errors import CodecError
from ...plan.fetch_plan import ChunkPlacement, UnitRead, shard_placements
from ...runtime.cache import ArrayCache
from ...runtime.executor import run_all
from ...runtime.held_shard import HeldShard
from ...runtime.output import held_array
from .base import with_key
from .copies import Hits, held_copies, place_copies
from .options import ArrayOptions
from .shard_fetch import InnerJob, ShardFetch

__all__ = ["CachedShardReads", "ShardAccess"]

#: a shard is held as one array once a read wants 1 / _HELD_FROM of its inner chunks
_HELD_FROM = 4


class ShardAccess(NamedTuple):
    """What the cached reads use of a sharded source, which hands it over
    (``shards.ShardedChunkSource``): its fetching, its inner chunks' codecs and layout,
    and the decode and fill steps it shares with its uncached reads."""

    fetch: ShardFetch
    #: the inner chunks' codecs (their spec's shape is the codec's axis order)
    inner: CodecPipeline
    dtype: np.dtype
    options: ArrayOptions
    #: an inner chunk's shape in the array's axis order
    inner_shape: tuple[int, ...]
    #: the axis order that turns an inner chunk as decoded into the array's
    inverse: tuple[int, ...]
    #: inner chunks per decode call
    decode_batch: int
    #: the sharding codec of the shard at some coordinates
    codec_at: Callable[[tuple[int, ...]], ShardingCodec]
    #: the shard index's strides of the shard at some coordinates (``plan.index_strides``)
    strides_at: Callable[[tuple[int, ...]], tuple[int, ...]]
    #: ``missing(what, target, index)``: fill ``target[index]`` for an absent chunk, or raise
    missing: Callable[[str, np.ndarray, Any], None]
    #: ``decode_into(jobs, out, slots)``: decode fetched inner chunks (all present) into
    #: ``out`` at ``slots`` with one call, an error naming the shard and chunk
    decode_into: Callable[[list[InnerJob], np.ndarray, Sequence[int]], None]
    #: the bytes some units place into a read's output
    placed_bytes: Callable[[Sequence[UnitRead]], int]


class CachedShardReads:
    """The reads of one sharded source through its array's decoded-chunk cache."""

    def __init__(self, source: ShardAccess) -> None:
        self._source = source
        self._held_placements: dict[tuple[tuple[int, ...], tuple[int, ...]], dict[int, ChunkPlacement]] = {}

    def read(self, units: Sequence[UnitRead], targets: Sequence[np.ndarray], cache: ArrayCache) -> None:
        """Read through the decoded-chunk cache. A shard small beside the budget is held as one
        array (``_read_held``) once a read wants a quarter of its chunks or more, or once it
        is held: holding a whole shard for the few chunks of a time series at a point would
        map (and count) all of it. Other shards are held chunk by chunk
        (``_read_chunks_cached``); a shard held both ways decodes a chunk twice at most."""
        ticket = cache.ticket()
        itemsize = self._source.dtype.itemsize
        small = [i for i, u in enumerate(units) if cache.holds_shard(math.prod(u.extent) * itemsize)]
        held: dict[int, HeldShard | None] = {}
        for i, shard in zip(small, cache.get_shards([units[i].key for i in small])):
            unit = units[i]
            inside = len(self._placements_at(unit.coords, unit.extent))
            if shard is not None or unit.block or _HELD_FROM * len(unit.chunks) >= inside:
                held[i] = shard
        if len(held) < len(units):
            rest = [i for i in range(len(units)) if i not in held]
            self._read_chunks_cached([units[i] for i in rest], [targets[i] for i in rest], cache)
        if held:
            self._read_held([units[i] for i in held], [targets[i] for i in held], list(held.values()), cache, ticket)

    def _read_held(self, units: Sequence[UnitRead], targets: Sequence[np.ndarray], found: list[HeldShard | None],
                   cache: ArrayCache, ticket: int) -> None:
        """Read through held shards (``runtime/held_shard.py``; ``found``: those held, None for
        the rest, made here): the inner chunks missing from them are claimed, decoded into
        their slots (``_fill_held``) and settled, then each unit's part is copied out of its
        held shard (``copies.held_copies``). ``ticket``: the pool's clock before ``found`` was
        looked up."""
        new = [i for i, shard in enumerate(found) if shard is None]
        if new:  # (their memory is mapped in one call each, on both threads: faults would contend)
            for i, shard in zip(new, run_all(self._new_held, [units[i] for i in new], self._source.options.threads,
                                             min_parallel=2)):
                cache.put_shard(units[i].key, shard, ticket)
                found[i] = shard
        shards = cast("list[HeldShard]", found)
        waiting = list(range(len(units)))
        misses = 0
        while waiting:  # (chunks another read was decoding and gave up are claimed again)
            fills: list[tuple[UnitRead, HeldShard, list[int]]] = []
            claimed: list[tuple[HeldShard, list[int]]] = []
            busy: list[tuple[int, list[int]]] = []
            for i in waiting:
                mine, others = shards[i].claim(units[i].chunks)
                if mine:
                    fills.append((units[i], shards[i], mine))
                    claimed.append((shards[i], mine))
                    misses += len(mine)
                if others:
                    busy.append((i, others))
            try:
                if fills:
                    misses -= self._fill_held(fills, cache)
            except BaseException:
                for shard, mine in claimed:
                    shard.settle(mine, False)
                raise
            kept = cache.current(ticket)
            for shard, mine in claimed:
                shard.settle(mine, kept)
            waiting = [i for i, others in busy if shards[i].wait(others)]
        cache.tally(sum(len(u.chunks) for u in units) - misses, misses)
        copies = [c for u, t, shard in zip(units, targets, shards) for c in held_copies(u, t, shard.data,
                                                                                       self._source.inverse)]
        place_copies(copies, self._source.options.threads, self._source.placed_bytes(units))

    def _new_held(self, unit: UnitRead) -> HeldShard:
        """An empty held shard for ``unit``'s shard."""
        grid = tuple(-(-e // c) for e, c in zip(unit.extent, self._source.inner_shape))
        return HeldShard(grid, self._source.inner.spec.shape, self._source.dtype,
                         math.prod(self._source.codec_at(unit.coords).grid_shape), math.prod(grid))

    def _fill_held(self, fills: list[tuple[UnitRead, HeldShard, list[int]]], cache: ArrayCache) -> int:
        """Decode the inner chunks at the claimed positions of each shard straight into its
        held shard's slots: fetched as the unit's plan says (a shard wanted whole, or read
        whole by the plan, with one GET), then decoded in batches on the threads. Chunks the
        cache already holds on their own (read chunk by chunk before their shard was held)
        are copied into their slots instead of being fetched and decoded again; returns how
        many (cache hits)."""
        reads: list[UnitRead] = []
        shards: list[HeldShard] = []
        copied = 0
        for unit, shard, claimed in fills:
            placements = self._placements_at(unit.coords, unit.extent)
            positions = self._copy_held_chunks(unit.key, shard, claimed, placements, cache)
            copied += len(claimed) - len(positions)
            if positions:
                every = len(positions) == len(placements)
                reads.append(UnitRead(unit.key, unit.coords, None, unit.extent, whole=unit.whole or every,
                                      chunks=[placements[p] for p in positions], extent=unit.extent))
                shards.append(shard)
        gets = [i for i, r in enumerate(reads) if r.whole]
        ranged = [i for i, r in enumerate(reads) if not r.whole]
        jobs = self._source.fetch.whole([reads[i] for i in gets], [shards[i].slots for i in gets])
        if ranged:
            jobs += self._source.fetch.ranges([reads[i] for i in ranged], [shards[i].slots for i in ranged])
        batches: list[tuple[HeldShard, list[InnerJob]]] = []
        at, per = 0, self._source.decode_batch
        for i in gets + ranged:  # (jobs come unit by unit, in this order)
            count = len(reads[i].chunks)
            batches.extend((shards[i], jobs[k: min(k + per, at + count)]) for k in range(at, at + count, per))
            at += count
        run_all(self._decode_slots, batches, self._source.options.threads, min_parallel=2)
        return copied

    @staticmethod
    def _copy_held_chunks(key: str, shard: HeldShard, positions: list[int], placements: dict[int, ChunkPlacement],
                          cache: ArrayCache) -> list[int]:
        """Copy the chunks at ``positions`` of the shard stored at ``key`` that the cache holds
        on their own into ``shard``'s slots (both in the sharding codec's axis order), and let
        go of those entries (the held shard serves every later read of them); the positions
        left to decode."""
        rest = []
        copied = []
        for p, chunk in zip(positions, cache.get_many([(key, p) for p in positions], counted=False)):
            if chunk is None:
                rest.append(p)
            else:
                shard.slots[shard.slot(placements[p].coords)] = chunk
                copied.append((key, p))
        if copied:
            cache.discard(copied)
        return rest

    def _decode_slots(self, batch: tuple[HeldShard, list[InnerJob]]) -> None:
        """Decode fetched inner chunks of one shard into their slots of its held shard (fill
        values, or an error, for those absent from the shard)."""
        shard, jobs = batch
        slots = [shard.slot(job.placement.coords) for job in jobs]
        present = [k for k, job in enumerate(jobs) if job.data is not None]
        for k, job in enumerate(jobs):
            if job.data is None:
                self._source.missing(f"shard {job.key}, inner chunk {job.placement.coords}", shard.slots, slots[k])
        self._source.decode_into([jobs[k] for k in present], shard.slots, [slots[k] for k in present])

    def _placements_at(self, coords: tuple[int, ...], extent: tuple[int, ...]) -> dict[int, ChunkPlacement]:
        """Every inner chunk inside the array of the shard at ``coords`` (its extent
        ``extent``), by position: its region of the shard and its part inside the array."""
        strides = self._source.strides_at(coords)
        found = self._held_placements.get((extent, strides))
        if found is None:
            found = self._held_placements[(extent, strides)] = {
                p.position: p for p in shard_placements(extent, self._source.inner_shape, strides)}
        return found

    def _read_chunks_cached(self, units: Sequence[UnitRead], targets: Sequence[np.ndarray],
                            cache: ArrayCache) -> None:
        """Read through the decoded-chunk cache chunk by chunk: inner chunks held are copied
        out, and the rest fetched as the plan says (a shard read whole with one GET, so its
        chunks are of one version of it; else through the shard index, neighbours
        coalesced), each decoded into an array of its own, held (the sharding codec's axis
        order; a hit is transposed back as a view) and copied out."""
        ticket = cache.ticket()
        order = None if self._source.inverse == tuple(range(len(self._source.inverse))) else self._source.inverse
        found = cache.get_many([(u.key, p.position) for u in units for p in u.chunks])
        hits = Hits(self._source.options.threads, self._source.placed_bytes(units))
        pending: list[UnitRead] = []
        pending_targets: list[np.ndarray] = []
        at = 0
        for unit, target in zip(units, targets):
            chunks = found[at: at + len(unit.chunks)]
            at += len(unit.chunks)
            missed = []
            for placement, chunk in zip(unit.chunks, chunks):
                if chunk is None:
                    missed.append(placement)
                else:
                    hits.add(target, placement, chunk if order is None else chunk.transpose(order))
            if missed:
                pending.append(UnitRead(unit.key, unit.coords, unit.out_index, unit.shape, unit.whole, missed))
                pending_targets.append(target)
        hits.finish()
        if not pending:
            return
        gets = [i for i, u in enumerate(pending) if u.whole]
        ranged = [i for i, u in enumerate(pending) if not u.whole]
        jobs = self._source.fetch.whole([pending[i] for i in gets], [pending_targets[i] for i in gets])
        if ranged:
            jobs += self._source.fetch.ranges([pending[i] for i in ranged], [pending_targets[i] for i in ranged])

        def held(job: InnerJob, data: bytes | memoryview) -> np.ndarray:
            chunk = self._decode_fresh(data)
            cache.put(job.key, job.placement.position, chunk, ticket)
            return chunk if order is None else chunk.transpose(order)

        def decode(batch: list[InnerJob]) -> None:
            for job in batch:
                self._decode_job(job, held)

        per = self._source.decode_batch  # (batches, as the other decode paths: a few large chunks spread too)
        run_all(decode, [jobs[k: k + per] for k in range(0, len(jobs), per)], self._source.options.threads,
                min_parallel=2)

    def _decode_fresh(self, data: bytes | memoryview) -> np.ndarray:
        """An inner chunk decoded into an array of its own (the codec's axis order, memory an
        entry dropped earlier may have left: ``held_array``), to be held."""
        inner = self._source.inner
        if not inner.decodes_into:
            return np.array(inner.decode(data), order="C", copy=True)
        fresh = held_array(inner.spec.shape, self._source.dtype)
        inner.decode_into([data], fresh[np.newaxis])
        return fresh

    def _decode_job(self, job: InnerJob, decode: Callable[[InnerJob, bytes | memoryview], np.ndarray]) -> None:
        """Decode one fetched inner chunk with ``decode`` (into an array of its own, in the
        array's axis order: the cache holds it) and copy its part into place."""
        placement = job.placement
        if job.data is None:
            self._source.missing(f"shard {job.key}, inner chunk {placement.coords}", job.target, placement.out_index)
            return
        try:
            chunk = decode(job, job.data)
        except CodecError as exc:
            raise with_key(exc, job.key, placement.coords) from exc
        job.target[placement.out_index] = chunk[placement.chunk_index]
