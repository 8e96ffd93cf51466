"""Sharded storage: one stored value per shard, inner chunks addressed through its index.

A partial read takes the inner chunks it needs with their bytes from ``shard_fetch.py``
(the shard index with one ranged request, cached per array; only the needed ranges,
neighbours coalesced, all shards in one store call); a whole shard is one GET. Each chunk
is decoded once and copied straight into the caller's output (reads through the
decoded-chunk cache are ``shard_cache.py``'s). Writes encode inner chunks in parallel
and put each shard once; a partly covered shard is read, modified and written inside the
same call. The index format itself (parse, build, split, assemble) is the sharding
codec's (``codecs/sharding.py``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import NamedTuple, cast

import numpy as np

from ...codecs.base import ChunkSpec, Frames
from ...codecs.pipeline import CodecPipeline
from ...codecs.protocol import ChunkPipeline
from ...codecs.sharding import ShardIndex, ShardingCodec
from ...errors import CodecError
from ...indexing import Nested, Projection, Selection, c_order_stop
from ...metadata.grid import AxisGrid, ChunkKeyEncoding, stored_shape
from ...plan.fetch_plan import ChunkPlacement, StorageLayout, UnitRead, index_strides
from ...storage.base import Buffer, Store, Value
from ...runtime.executor import run_all, run_split
from ...runtime.output import scratch
from ...runtime.cache import ArrayCache, ArrayKey
from .base import ChunkSource, with_key
from .block_placement import Slab, place_block, slabs
from .options import ArrayOptions
from .puts import UnitPuts
from .shard_cache import CachedShardReads, ShardAccess
from .shard_fetch import InnerJob, ShardFetch
from .stored_order import RUN_BYTES, Run, StoredOrder

__all__ = ["ShardedChunkSource"]


#: inner chunks decoded per call, into a held shard or a partial read's stack (a batch is one
#: task for the threads): up to this many, of at most _DECODE_BATCH_BYTES together (one
#: chunk when larger), so small chunks share a call and large ones spread over the threads
_DECODE_BATCH = 8
_DECODE_BATCH_BYTES = 512 << 10
#: a write encodes a shard's inner chunks in runs of about this many decoded bytes (one
#: chunk when larger): a whole small shard is one item, a large one spreads over threads
_WRITE_BATCH_BYTES = 512 << 10


def _sharding_of(pipeline: ChunkPipeline) -> ShardingCodec:
    """The sharding codec a chain of this kind declares (``ChunkPipeline.sharding``, typed
    there as its base class: the sharding module imports the pipeline, not the reverse)."""
    codec = pipeline.sharding
    assert codec is not None
    return cast(ShardingCodec, codec)


class _InnerWrites(NamedTuple):
    """A run of one shard's inner chunks that a write encodes as one item: shard ``shard``
    (its number in the write), the inner chunks' projections, the shard's values and its
    old encoded inner chunks (by encoded coordinates; empty when none)."""

    shard: int
    projections: Sequence[Projection]
    values: np.ndarray
    old: Mapping[tuple[int, ...], bytes | memoryview]


class ShardedChunkSource(ChunkSource):
    """One stored value per shard; inner chunks addressed through the shard index.

    Array->array codecs before the sharding codec must only permute axes (transpose): the
    sharding codec then sees the shard with its axes in ``perm`` order, so an inner chunk
    of the array is the inner chunk at the permuted coordinates, decoded and transposed
    back. Other array->array codecs need the whole shard (``PlainChunkSource``)."""

    def __init__(self, store: Store, path: str, key_encoding: ChunkKeyEncoding,
                 pipelines: Callable[[tuple[int, ...]], ChunkPipeline], spec: ChunkSpec, options: ArrayOptions,
                 grid: tuple[AxisGrid, ...], *, pool_key: ArrayKey | None = None,
                 decoded: ArrayCache | None = None) -> None:
        super().__init__(store, path, key_encoding, pipelines, spec, options, grid, shards=True, pool_key=pool_key,
                         decoded=decoded)
        codec, perm = _sharding_of(self.pipeline), self.pipeline.axis_permutation
        assert codec.inner is not None and perm is not None
        self.inner: CodecPipeline = codec.inner
        self._perm = perm
        self._permuted = perm != tuple(range(len(perm)))  # (a transpose before the sharding codec)
        self._inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))
        self.inner_shape = tuple(codec.chunk_shape[k] for k in self._inverse)
        self.read_shape = self.inner_shape
        self._codecs: dict[tuple[int, ...], ShardingCodec] = {}
        self._strides: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.fetch = ShardFetch(store, self._codec_at, self._shard_bytes, options, pool_key)
        self._cached = CachedShardReads(ShardAccess(
            self.fetch, self.inner, spec.dtype.dtype, options, self.inner_shape, self._inverse, self._decode_batch,
            self._codec_at, self._strides_at, self._missing, self._decode_into, self._placed_bytes))
        # bytes->bytes codecs after the sharding codec hide the layout: only whole-shard reads then
        self.layout = StorageLayout(unit_grid=self.grid, chunk_shape=self.inner_shape, index_strides=self._strides_at,
                                    sharded=True, ranged_reads=not self.pipeline.has_bytes_stage, key=self.key)

    def _codec_at(self, coords: tuple[int, ...]) -> ShardingCodec:
        """The sharding codec of the shard at ``coords`` (its inner grid and index size
        follow the shard's stored shape)."""
        shape = stored_shape(self.grid, coords)
        codec = self._codecs.get(shape)
        if codec is None:
            codec = self._codecs[shape] = _sharding_of(self.pipelines(shape))
        return codec

    def _strides_at(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        shape = stored_shape(self.grid, coords)
        strides = self._strides.get(shape)
        if strides is None:
            strides = self._strides[shape] = index_strides(self._codec_at(coords).grid_shape, self._perm)
        return strides

    # -- the bytes stage (bytes->bytes codecs after the sharding codec), both ways -------
    def _shard_bytes(self, blob: Buffer) -> Buffer:
        """A stored shard with the bytes->bytes codecs after the sharding codec undone."""
        return self.pipeline.decode_bytes_stage(blob)

    def _stored_bytes(self, parts: list[Buffer]) -> Value:
        """An assembled shard's parts as stored: joined and put through the bytes->bytes
        codecs after the sharding codec, when there are any (else the parts, unjoined)."""
        if not self.pipeline.has_bytes_stage:
            return parts
        return self.pipeline.encode_bytes_stage(b"".join(parts))

    # -- reads -----------------------------------------------------------------------
    def _decode_inner(self, data: bytes | memoryview) -> np.ndarray:
        """An inner chunk as the array sees it (a view when transposed back)."""
        return self.inner.decode(data).transpose(self._inverse)

    def _encoded_coords(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        """An inner chunk's coordinates in the sharding codec's (permuted) grid."""
        return tuple([coords[k] for k in self._perm]) if self._permuted else coords

    @property
    def _decode_batch(self) -> int:
        """Inner chunks per decode call (see ``_DECODE_BATCH_BYTES``)."""
        chunk_bytes = math.prod(self.inner.spec.shape) * self.spec.dtype.dtype.itemsize
        return max(1, min(_DECODE_BATCH, _DECODE_BATCH_BYTES // max(chunk_bytes, 1)))

    def _read_units(self, units: Sequence[UnitRead], targets: Sequence[np.ndarray]) -> None:
        """Whole shards fetched and decoded; partly read ones through their indexes."""
        whole = [i for i, u in enumerate(units) if u.whole]
        if len(whole) == len(units):
            self._read_whole(units, targets)
            return
        if whole:
            self._read_whole([units[i] for i in whole], [targets[i] for i in whole])
        ranged = [i for i, u in enumerate(units) if not u.whole]
        jobs = self.fetch.ranges([units[i] for i in ranged], [targets[i] for i in ranged])
        per = self._decode_batch
        run_all(self._decode_placed, [jobs[k: k + per] for k in range(0, len(jobs), per)], self.options.threads,
                min_parallel=2)

    def _decode_placed(self, jobs: list[InnerJob]) -> None:
        """Decode a batch of fetched inner chunks with one call into a reused stack, then
        copy each one's part into its place (fill values, or an error, for chunks absent
        from their shard): the Python steps per chunk are one copy."""
        present = []
        for job in jobs:
            if job.data is None:
                self._missing(f"shard {job.key}, inner chunk {job.placement.coords}", job.target,
                              job.placement.out_index)
            else:
                present.append(job)
        if not present:
            return
        shape = self.inner.spec.shape
        stops = ([c_order_stop(job.placement.chunk_index, shape) for job in present]
                 if self.inner.decodes_prefix and not self._permuted else None)
        with scratch((len(present), *shape), self.spec.dtype.dtype) as stack:
            self._decode_into(present, stack, range(len(present)), stops)
            order = self._inverse
            for job, chunk in zip(present, stack):
                placement = job.placement
                job.target[placement.out_index] = chunk.transpose(order)[placement.chunk_index]

    def _decode_into(self, jobs: list[InnerJob], out: np.ndarray, slots: Sequence[int],
                     stops: Sequence[int | None] | None = None) -> None:
        """Decode fetched inner chunks (all present) with one call into ``out`` at ``slots``
        (see ``CodecPipeline.decode_into``); an error names the shard and chunk that failed."""
        try:
            self.inner.decode_into([cast(Buffer, job.data) for job in jobs], out, slots, stops)
        except CodecError as exc:
            failed = jobs[0] if exc.item is None else jobs[exc.item]
            raise with_key(exc, failed.key, None if exc.item is None else failed.placement.coords) from exc

    def _read_cached(self, units: Sequence[UnitRead], targets: Sequence[np.ndarray], cache: ArrayCache) -> None:
        """Held shards and held inner chunks (``shard_cache.py``)."""
        self._cached.read(units, targets, cache)

    def _decode_unit(self, unit: UnitRead, target: np.ndarray, blob: bytes | None, threads: int | None) -> None:
        """Decode the inner chunks ``unit`` needs from a whole shard held in memory into
        ``target``: a shard read whole slab by slab (``_decode_block``), else each chunk
        sliced out, decoded and placed in one step, so nothing accumulates per inner chunk
        (a shard may hold thousands)."""
        key = unit.key
        if blob is None:
            self._missing(f"shard {key}", target, ...)
            return
        codec = self._codec_at(unit.coords)
        try:
            shard = self._shard_bytes(blob)
            index = codec.index_of(shard, key)
        except CodecError as exc:
            raise with_key(exc, key) from exc
        view = memoryview(shard)
        if unit.block:
            self._decode_block(unit, codec, index, view, target, threads)
            return
        decode = self._decode_inner
        locate = index.locate

        def place(item: ChunkPlacement) -> None:
            where = locate(item.position)
            if where is None:
                self._missing(f"shard {key}, inner chunk {item.coords}", target, item.out_index)
                return
            try:
                chunk = decode(view[where[0]: where[1]])
            except CodecError as exc:
                raise with_key(exc, key, item.coords) from exc
            target[item.out_index] = chunk[item.chunk_index]

        run_all(place, unit.chunks, threads)

    def _decode_block(self, unit: UnitRead, codec: ShardingCodec, index: ShardIndex, view: memoryview,
                      target: np.ndarray, threads: int | None) -> None:
        """Decode the inner chunks of a shard read whole and place them a run at a time with
        one copy each: in the order they lie in the shard when that is another order that
        goes box by box (``_decode_stored``), else in C order a slab at a time, each chunk
        straight into its slot where the codecs allow (``block_placement.py``: C-ordered
        shards, shards clipped at the array's edge or missing chunks, other orders); the runs
        are spread over the threads."""
        key, inner, order = unit.key, self.inner, self._inverse
        needed = {item.position: item for item in unit.chunks}  # (at an edge, not every chunk)
        stored = self._stored_order(codec, index, target) if len(needed) == len(index) else None
        if stored is not None:
            self._decode_stored(unit, stored, codec, index, view, target, threads)
            return

        def run(slab: Slab) -> None:
            region = slab.region(target.shape, order)
            if region is None:
                return
            with scratch(slab.shape, self.spec.dtype.dtype) as stack:
                slots = stack.reshape(slab.count, *codec.chunk_shape)
                starts, ends, at = [], [], []  # (the stored chunks' bytes and their slots)
                for k, span in enumerate(index.spans(slab.start, slab.count)):
                    item = needed.get(slab.start + k)
                    if item is None:
                        continue
                    if span is None:
                        self._missing(f"shard {key}, inner chunk {item.coords}", slots, k)
                        continue
                    starts.append(span[0])
                    ends.append(span[1])
                    at.append(k)
                try:
                    inner.decode_into(Frames(view, starts, ends), slots, at)
                except CodecError as exc:
                    failed = None if exc.item is None else needed[slab.start + at[exc.item]].coords
                    raise with_key(exc, key, failed) from exc
                place_block(stack, target[region or ...], order)  # (``...``: a 0-d target stays a view)

        run_all(run, slabs(codec.grid_shape, codec.chunk_shape, self.spec.dtype.dtype.itemsize), threads,
                min_parallel=2)

    def _stored_order(self, codec: ShardingCodec, index: ShardIndex, target: np.ndarray) -> StoredOrder | None:
        """How a shard's chunks lie in its bytes, when all are stored, ``target`` is the whole
        shard (not clipped at the array's edge) and the order goes box by box but is not C
        order (C-ordered shards go slab by slab: a 4 MiB slab is placed while it is still in
        the cache, where the larger runs that other orders need are not)."""
        order = self._inverse
        extent = tuple(codec.grid_shape[order[d]] * codec.chunk_shape[order[d]] for d in range(len(order)))
        if target.shape != extent:
            return None
        ranks = index.file_order()
        if ranks is None or bool((ranks[1:] > ranks[:-1]).all()):
            return None
        return StoredOrder.of(ranks, codec.grid_shape)

    def _decode_stored(self, unit: UnitRead, stored: StoredOrder, codec: ShardingCodec, index: ShardIndex,
                       view: memoryview, target: np.ndarray, threads: int | None) -> None:
        """Decode a whole shard a run at a time in the order its chunks lie
        (``stored_order.py``): a run's bytes with one call where the codecs allow (zstd
        frames back to back) into a stack, placed with one copy. Runs are as large as
        ``RUN_BYTES`` when the shard is read by one thread, smaller when idle threads can
        share it."""
        inner, order, ranks = self.inner, self._inverse, stored.ranks.tolist()
        spans = cast(list[tuple[int, int]], index.spans(0, len(ranks)))  # (all present: no None)
        dtype = self.spec.dtype.dtype
        chunk = codec.chunk_shape

        def run(part: Run) -> None:
            positions = ranks[part.first: part.first + part.count]
            with scratch((part.count, *chunk), dtype) as stack:
                try:
                    inner.decode_into(Frames(view, [spans[p][0] for p in positions], [spans[p][1] for p in positions]),
                                      stack)
                except CodecError as exc:
                    failed = None if exc.item is None else \
                        next(c.coords for c in unit.chunks if c.position == positions[exc.item])
                    raise with_key(exc, unit.key, failed) from exc
                stored.place(stack, target, part, order)

        chunk_bytes = math.prod(chunk) * dtype.itemsize
        shard_bytes = chunk_bytes * len(ranks)

        def runs(workers: int) -> list[Run]:  # (alone: the largest runs; else at least two per thread)
            return stored.runs(chunk_bytes, min(RUN_BYTES, max(chunk_bytes, shard_bytes // (2 * workers)))
                               if workers > 1 else RUN_BYTES)

        run_split(run, runs, threads)

    # -- writes ----------------------------------------------------------------------
    def write(self, selection: Selection, values: np.ndarray) -> None:
        nested = selection.project_nested(self.grid, self.inner_shape)
        shards = [p for p, _ in nested]
        inside = [f for _, f in nested]
        keys = [self.key(p.coords) for p in shards]
        inner_parts: dict[tuple[object, ...], list[Projection]] = {}  # (shards selected alike share them)

        def write_units(indices: Sequence[int], blobs: Mapping[int, bytes | None], puts: UnitPuts) -> None:
            existing: dict[int, dict[tuple[int, ...], memoryview]] = {}
            for i, blob in blobs.items():
                if blob is not None:
                    try:
                        existing[i] = self._codec_at(shards[i].coords).split(self._shard_bytes(blob), keys[i])
                    except CodecError as exc:
                        raise with_key(exc, keys[i]) from exc
            self._write_shards(shards, inside, keys, indices, existing, values, puts, inner_parts)

        self.fetch.cache.invalidate(keys)
        self._write_units(keys, shards, write_units)
        self.fetch.cache.invalidate(keys)  # (an index a concurrent read cached meanwhile)

    def _write_shards(self, shards: list[Projection], inside: list[Nested],
                      keys: list[str], indices: Sequence[int],
                      existing: dict[int, dict[tuple[int, ...], memoryview]], values: np.ndarray, puts: UnitPuts,
                      inner_parts: dict[tuple[object, ...], list[Projection]]) -> None:
        """Encode the shards ``indices`` of a write (their stored inner chunks ``existing``
        merged where a shard is covered in part) and hand each to ``puts``."""
        per = max(1, _WRITE_BATCH_BYTES // self._write_item_bytes)
        items: list[_InnerWrites] = []
        for i in indices:
            p = shards[i]
            sub_values = values[p.out_index] if values.ndim else values  # (0-d: ``[()]`` would give an item)
            old = existing.get(i, {})
            inner = self._inner_projections(p, inside[i], inner_parts)
            items.extend(_InnerWrites(i, inner[k: k + per], sub_values, old) for k in range(0, len(inner), per))

        # Each shard is assembled and put by the thread that encodes its last run of inner chunks.
        chunks: dict[int, dict[tuple[int, ...], Buffer]] = {i: dict(existing.get(i, {})) for i in indices}
        remaining = dict.fromkeys(indices, 0)
        for item in items:
            remaining[item.shard] += 1
        lock = threading.Lock()

        def encode(item: _InnerWrites) -> None:
            i, sub_values = item.shard, item.values
            kept: list[tuple[int, ...]] = []  # (the run's chunks to store, encoded with one call)
            chunks_kept: list[np.ndarray] = []
            dropped: list[tuple[int, ...]] = []  # (the run's chunks now all fill value)
            for q in item.projections:
                coords = self._encoded_coords(q.coords)
                blob = item.old.get(coords)
                try:
                    old = None if blob is None or self._covers(q.full, q.extent, self.inner_shape) \
                        else partial(self._decode_inner, blob)
                    chunk = self._updated_chunk(self.inner_shape, q, sub_values, old)
                except CodecError as exc:
                    raise with_key(exc, keys[i], q.coords) from exc
                if self._keep(chunk):
                    kept.append(coords)
                    chunks_kept.append(chunk.transpose(self._perm))
                else:
                    dropped.append(coords)
            encoded = self.inner.encode_many(chunks_kept)
            with lock:
                for coords in dropped:
                    chunks[i].pop(coords, None)
                chunks[i].update(zip(kept, encoded))
                remaining[i] -= 1
                last = remaining[i] == 0
            if last:
                parts = self._codec_at(shards[i].coords).assemble_parts(chunks[i])
                puts.put(keys[i], None if parts is None else self._stored_bytes(parts))

        self._encode_all(encode, items)

    @staticmethod
    def _inner_projections(shard: Projection, inside: Nested,
                           known: dict[tuple[object, ...], list[Projection]]) -> list[Projection]:
        """The inner chunks a write's part of one shard touches, relative to that part
        (``inside()``: its nested projection); the same for every shard whose part is the
        same slices of the same extent (a write over many whole shards projects one), so
        ``known`` keeps them by those."""
        if shard.points or not all(isinstance(d, slice) for d in shard.local):
            return inside()
        key = (shard.extent, *((d.start, d.stop, d.step) for d in shard.local))
        found = known.get(key)
        if found is None:
            found = known[key] = inside()
        return found

    def delete(self, coords: Iterable[tuple[int, ...]]) -> None:
        keys = [self.key(c) for c in coords]
        self.store.delete_many(keys)
        self.fetch.cache.invalidate(keys)
        self.forget(keys)

    # -- what is stored ----------------------------------------------------------------
    def _count_stored(self, units: list[UnitRead]) -> int:
        """The planned inner chunks present in the stored shards ``units`` (their indexes read)."""
        count = 0
        for unit, index in zip(units, self._stored_indexes(units)):
            if index is not None:
                count += sum(index.locate(c.position) is not None for c in unit.chunks)
        return count

    def _stored_indexes(self, units: list[UnitRead]) -> list[ShardIndex | None]:
        """The shard indexes of ``units``: ranged requests, or whole shards when bytes->bytes
        codecs follow the sharding codec (the index cannot be fetched on its own then)."""
        if self.layout.ranged_reads:
            return self.fetch.indexes(units)
        indexes: list[ShardIndex | None] = []
        for unit, blob in zip(units, self.store.get_many([u.key for u in units])):
            if blob is None:
                indexes.append(None)
                continue
            try:
                indexes.append(self._codec_at(unit.coords).index_of(self._shard_bytes(blob), unit.key))
            except CodecError as exc:
                raise type(exc)(f"shard {unit.key}: {exc}") from exc
        return indexes
