"""Chunk sources: where a selection's bytes come from and how they get back to the store.

``PlainChunkSource`` stores one chunk per key. ``ShardedChunkSource`` stores a shard
per key and is the only place that knows about sharding: a partial read fetches the
shard index with one ranged request (cached per array), then only the inner chunks
it needs, neighbouring ranges coalesced, all shards' requests batched into one store
call; a whole shard is one GET. Each chunk is decoded once and copied straight into
the caller's output. Writes encode chunks in parallel and put each key once; a
partly covered chunk or shard is read, modified and written inside the same call.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..codecs.base import ChunkSpec
from ..codecs.sharding import ShardIndex, ShardingCodec, is_empty_chunk
from ..errors import CodecError, CorruptChunkError, InvalidModeError, MissingChunkError
from ..indexing import OrthogonalSelection, Projection, Selection
from ..storage.base import ByteRange, Store, join_path
from ..storage.coalesce import coalesce_ranges, split_coalesced
from .executor import run_all

__all__ = ["ArrayOptions", "IndexCache", "PlainChunkSource", "ShardedChunkSource", "make_chunk_source"]


@dataclass(frozen=True)
class ArrayOptions:
    """Per-array runtime options (not stored in metadata).

    ``write_empty_chunks``: store chunks equal to the fill value (default: delete them).
    ``missing_chunks``: ``"fill"`` reads absent chunks as the fill value, ``"raise"`` raises.
    ``index_cache_size``: shard indexes kept per array (LRU).
    ``threads``: threads for one read/write call (None: one per core; 1: serial, as in Dask tasks).
    ``coalesce_gap`` / ``coalesce_max``: merge inner-chunk ranges at most this far apart / this big.
    """

    write_empty_chunks: bool = False
    missing_chunks: str = "fill"
    index_cache_size: int = 1024
    threads: int | None = None
    coalesce_gap: int = 1 << 16
    coalesce_max: int = 1 << 26

    def __post_init__(self) -> None:
        if self.missing_chunks not in ("fill", "raise"):
            raise InvalidModeError(f"missing_chunks must be 'fill' or 'raise', got {self.missing_chunks!r}")
        if self.threads is not None and self.threads < 1:
            raise InvalidModeError(f"threads must be None or >= 1, got {self.threads!r}")


class IndexCache:
    """A thread-safe LRU of decoded shard indexes (flat ``[offset, nbytes, ...]`` arrays), by store key."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: str, index: Any) -> None:
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


def _with_key(exc: CodecError, key: str, inner: tuple[int, ...] | None = None) -> CodecError:
    where = f"chunk {key}" if inner is None else f"shard {key}, inner chunk {inner}"
    text = str(exc)
    return type(exc)(text if text.startswith(("shard ", "chunk ")) else f"{where}: {text}")


class ChunkSource:
    """Common state: the store, how keys are named, the storage unit's pipeline and spec."""

    def __init__(self, store: Store, path: str, key_encoding: Any, pipeline: Any, spec: ChunkSpec,
                 options: ArrayOptions, cache: IndexCache) -> None:
        self.store = store
        self.path = path
        self.key_encoding = key_encoding
        self.pipeline = pipeline
        self.spec = spec
        self.options = options
        self.cache = cache
        self.unit_shape = spec.shape
        self.read_shape = spec.shape  # the unit a read decodes (inner chunks when sharded)
        fill = spec.fill_value
        self.fill = spec.dtype.default_fill() if fill is None else fill

    def key(self, coords: tuple[int, ...]) -> str:
        return join_path(self.path, self.key_encoding.encode(coords))

    def _missing(self, what: str, target: np.ndarray, index: Any) -> None:
        """Fill ``target[index]`` for an absent ``what`` (e.g. ``"chunk c/0/1"``), or raise."""
        if self.options.missing_chunks == "raise":
            raise MissingChunkError(f"{what} does not exist (missing_chunks='raise')")
        target[index] = self.fill

    def _new_chunk(self, shape: tuple[int, ...]) -> np.ndarray:
        chunk = np.empty(shape, dtype=self.spec.dtype.dtype)
        chunk[...] = self.fill
        return chunk

    def _updated_chunk(self, shape: tuple[int, ...], proj: Projection, values: np.ndarray,
                       old: Callable[[], np.ndarray] | None) -> np.ndarray:
        """The chunk after the write: the new values themselves when they cover it whole (no
        copy), else the old chunk (``old()``, or the fill value) with the new values assigned."""
        if proj.full and proj.chunk_selection.shape == shape and _is_view(proj.out_index):
            return values[proj.out_index]
        chunk = np.array(old(), copy=True) if old is not None else self._new_chunk(shape)
        proj.chunk_selection.assign(chunk, values[proj.out_index])
        return chunk

    def _keep(self, chunk: np.ndarray) -> bool:
        return self.options.write_empty_chunks or not is_empty_chunk(chunk, self.fill)

    def read(self, selection: Selection, out: np.ndarray) -> None:
        raise NotImplementedError

    def write(self, selection: Selection, values: np.ndarray) -> None:
        raise NotImplementedError


class PlainChunkSource(ChunkSource):
    """One stored value per chunk."""

    def read(self, selection: Selection, out: np.ndarray) -> None:
        projections = list(selection.project(self.unit_shape))
        keys = [self.key(p.coords) for p in projections]
        blobs = self.store.get_many(keys)

        def decode(i: int) -> None:
            p, blob = projections[i], blobs[i]
            if blob is None:
                self._missing(f"chunk {keys[i]}", out, p.out_index)
                return
            try:
                chunk = self.pipeline.decode(blob)
            except CodecError as exc:
                raise _with_key(exc, keys[i]) from exc
            out[p.out_index] = p.chunk_selection.extract(chunk)

        run_all(decode, range(len(projections)), self.options.threads)

    def write(self, selection: Selection, values: np.ndarray) -> None:
        projections = list(selection.project(self.unit_shape))
        keys = [self.key(p.coords) for p in projections]
        partial = [i for i, p in enumerate(projections) if not p.full]
        existing = dict(zip(partial, self.store.get_many([keys[i] for i in partial])))

        def encode(i: int) -> bytes | None:
            blob = existing.get(i)
            try:
                old = None if blob is None else (lambda: self.pipeline.decode(blob))
                chunk = self._updated_chunk(self.unit_shape, projections[i], values, old)
            except CodecError as exc:
                raise _with_key(exc, keys[i]) from exc
            return self.pipeline.encode(chunk) if self._keep(chunk) else None

        encoded = run_all(encode, range(len(projections)), self.options.threads)
        self.store.set_many({k: e for k, e in zip(keys, encoded) if e is not None})
        self.store.delete_many([k for k, e in zip(keys, encoded) if e is None])


class _InnerJob:
    """One inner chunk to decode: ``target[out_index] = decoded[chunk_index]``."""

    __slots__ = ("key", "coords", "pos", "out_index", "chunk_index", "target", "data")

    def __init__(self, key: str, coords: tuple[int, ...], pos: int, out_index: Any, chunk_index: Any,
                 target: np.ndarray, data: memoryview | bytes | None = None) -> None:
        self.key, self.coords, self.pos, self.out_index, self.chunk_index = key, coords, pos, out_index, chunk_index
        self.target, self.data = target, data


def _flat_position(coords: Sequence[int], strides: Sequence[int]) -> int:
    """Position of an inner chunk in the shard index (``strides``: see ``_index_strides``)."""
    pos = 0
    for c, n in zip(coords, strides):
        pos += c * n
    return pos


def _index_strides(grid: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """Index strides of the array's axes. The index is C-ordered over the sharding codec's
    inner grid ``grid``, whose axis ``k`` is the array's axis ``perm[k]`` (transpose codecs
    before the sharding codec permute it)."""
    strides = [0] * len(grid)
    step = 1
    for k in reversed(range(len(grid))):
        strides[perm[k]] = step
        step *= grid[k]
    return tuple(strides)


@lru_cache(maxsize=64)
def _whole_shard_layout(shard_shape: tuple[int, ...], inner_shape: tuple[int, ...], strides: tuple[int, ...]
                        ) -> tuple[tuple[tuple[int, ...], int, tuple[slice, ...], Any], ...]:
    """For a shard read whole (``shard_shape`` clipped to the array): each inner chunk's
    coordinates, index position, region in the shard, and the part of it that is in bounds."""
    layout = []
    for coords in itertools.product(*(range(-(-s // c)) for s, c in zip(shard_shape, inner_shape))):
        region = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, inner_shape, shard_shape))
        clipped = any(r.stop - r.start < c for r, c in zip(region, inner_shape))
        inner = tuple(slice(0, r.stop - r.start) for r in region) if clipped else ...
        layout.append((coords, _flat_position(coords, strides), region, inner))
    return tuple(layout)


class ShardedChunkSource(ChunkSource):
    """One stored value per shard; inner chunks addressed through the shard index.

    Array->array codecs before the sharding codec must only permute axes (transpose): the
    sharding codec then sees the shard with its axes in ``perm`` order, so an inner chunk
    of the array is the inner chunk at the permuted coordinates, decoded and transposed
    back. Other array->array codecs need the whole shard (``PlainChunkSource``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        codec = self.pipeline.array_bytes
        perm = self.pipeline.axis_permutation
        assert isinstance(codec, ShardingCodec) and perm is not None
        self.codec = codec
        self.inner = codec.inner
        self._perm = perm
        self._inverse = tuple(int(i) for i in np.argsort(perm))
        self.inner_shape = tuple(codec.chunk_shape[k] for k in self._inverse)
        self.read_shape = self.inner_shape
        self._strides = _index_strides(codec.grid_shape, perm)
        # bytes->bytes codecs after the sharding codec hide the layout: only whole-shard reads then.
        self.partial_reads = not self.pipeline.bytes_bytes

    # -- reads -----------------------------------------------------------------------
    def read(self, selection: Selection, out: np.ndarray) -> None:
        shards = list(selection.project(self.unit_shape))
        targets = [self._target(out, p) for p in shards]
        keys = [self.key(p.coords) for p in shards]
        whole = [i for i, p in enumerate(shards) if p.full or not self.partial_reads]
        partial = [i for i, p in enumerate(shards) if i not in set(whole)]
        threads = self.options.threads
        if len(whole) == 1:  # one shard: its inner chunks are decoded in parallel
            i = whole[0]
            self._decode_shard(keys[i], shards[i], targets[i], self.store.get(keys[i]), threads)
        elif whole and self.store.is_local:
            # Local reads are CPU-bound: each thread fetches and decodes whole shards, so
            # fetching overlaps decoding. Remote stores get one batched (concurrent) fetch.
            run_all(lambda i: self._decode_shard(keys[i], shards[i], targets[i], self.store.get(keys[i]), 1),
                    whole, threads, min_parallel=2)
        elif whole:
            blobs = dict(zip(whole, self.store.get_many([keys[i] for i in whole])))
            run_all(lambda i: self._decode_shard(keys[i], shards[i], targets[i], blobs.pop(i), 1),
                    whole, threads, min_parallel=2)
        jobs = self._jobs_from_ranges([keys[i] for i in partial], [shards[i] for i in partial],
                                      [targets[i] for i in partial])
        run_all(self._decode_job, jobs, threads)
        for p, target in zip(shards, targets):
            if not _is_view(p.out_index):
                out[p.out_index] = target

    @staticmethod
    def _target(out: np.ndarray, p: Projection) -> np.ndarray:
        """Where a shard's values go: a view of ``out`` when possible, else a buffer copied back."""
        if _is_view(p.out_index):
            return out[p.out_index]
        return np.empty(p.chunk_selection.shape, dtype=out.dtype)

    def _placements(self, p: Projection) -> Sequence[tuple[tuple[int, ...], int, Any, Any]]:
        """The inner chunks a shard projection needs, as ``(coords, index position, where in
        the target, which part of the chunk)`` (precomputed when the shard is read whole)."""
        strides = self._strides
        sel = p.chunk_selection
        if p.full and _is_view(p.out_index):
            return _whole_shard_layout(sel.shape, self.inner_shape, strides)
        if isinstance(sel, OrthogonalSelection) and sel.is_basic:
            return [(b.coords, _flat_position(b.coords, strides), b.out_index, b.chunk_index)
                    for b in sel.slice_blocks(self.inner_shape)]
        return [(q.coords, _flat_position(q.coords, strides), q.out_index, q.chunk_selection.index())
                for q in p.chunk_selection.project(self.inner_shape)]

    def _decode_inner(self, data: bytes | memoryview) -> np.ndarray:
        """An inner chunk as the array sees it (a view when transposed back)."""
        return self.inner.decode(data).transpose(self._inverse)

    def _encode_inner(self, chunk: np.ndarray) -> bytes:
        return self.inner.encode(chunk.transpose(self._perm))

    def _encoded_coords(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        """An inner chunk's coordinates in the sharding codec's (permuted) grid."""
        return tuple(coords[k] for k in self._perm)

    def _decode_shard(self, key: str, p: Projection, target: np.ndarray, blob: bytes | None,
                      threads: int | None) -> None:
        """Decode the inner chunks ``p`` needs from a whole shard held in memory into ``target``.

        No object is kept per inner chunk (a shard may hold thousands): each is sliced out,
        decoded and placed in one step, so nothing accumulates for the garbage collector."""
        if blob is None:
            self._missing(f"shard {key}", target, ...)
            return
        try:
            blob = self.pipeline.decode_bytes_stage(blob)
            index = self.codec.index_of(blob, key)
        except CodecError as exc:
            raise _with_key(exc, key) from exc
        view = memoryview(blob)
        decode = self._decode_inner
        locate = index.locate

        def place(item: tuple[tuple[int, ...], int, Any, Any]) -> None:
            coords, pos, out_index, chunk_index = item
            where = locate(pos)
            if where is None:
                self._missing(f"shard {key}, inner chunk {coords}", target, out_index)
                return
            try:
                chunk = decode(view[where[0]: where[1]])
            except CodecError as exc:
                raise _with_key(exc, key, coords) from exc
            target[out_index] = chunk[chunk_index]

        run_all(place, self._placements(p), threads)

    def _indexes(self, keys: list[str]) -> list[ShardIndex | None]:
        """Shard indexes from the cache, the rest with one batched ranged request."""
        indexes: list[Any] = [self.cache.get(k) for k in keys]
        todo = [i for i, idx in enumerate(indexes) if idx is None]
        request = self.codec.index_request()
        for i, raw in zip(todo, self.store.get_ranges([(keys[i], request) for i in todo])):
            if raw is None:
                continue
            try:
                indexes[i] = self.codec.read_index(raw, keys[i])
            except CodecError as exc:
                raise _with_key(exc, keys[i]) from exc
            self.cache.put(keys[i], indexes[i])
        return indexes

    def _jobs_from_ranges(self, keys: list[str], shards: list[Projection],
                          targets: list[np.ndarray]) -> list[_InnerJob]:
        if not keys:
            return []
        jobs: list[_InnerJob] = []
        requests: list[tuple[str, ByteRange]] = []
        placements: list[tuple[list[tuple[int, int]], list, list[_InnerJob]]] = []
        for key, p, target, index in zip(keys, shards, targets, self._indexes(keys)):
            inner = [_InnerJob(key, *placement, target) for placement in self._placements(p)]
            jobs.extend(inner)
            if index is None:
                continue
            ranges, pending = [], []
            for job in inner:
                where = index.locate(job.pos)
                if where is not None:
                    ranges.append(where)
                    pending.append(job)
            merged = coalesce_ranges(ranges, self.options.coalesce_gap, self.options.coalesce_max)
            requests.extend((key, ByteRange(s, e - s)) for s, e, _ in merged)
            placements.append((ranges, merged, pending))
        fetched = self.store.get_ranges(requests)
        pos = 0
        for ranges, merged, pending in placements:
            pieces = split_coalesced(ranges, merged, fetched[pos: pos + len(merged)])
            pos += len(merged)
            for (start, end), piece, job in zip(ranges, pieces, pending):
                if piece is None or len(piece) != end - start:
                    got = "nothing" if piece is None else f"{len(piece)} bytes"
                    raise CorruptChunkError(
                        f"shard {job.key}, inner chunk {job.coords}: expected {end - start} bytes at offset "
                        f"{start}, got {got} (truncated shard)")
                job.data = piece
        return jobs

    def _decode_job(self, job: _InnerJob) -> None:
        if job.data is None:
            self._missing(f"shard {job.key}, inner chunk {job.coords}", job.target, job.out_index)
            return
        try:
            chunk = self._decode_inner(job.data)
        except CodecError as exc:
            raise _with_key(exc, job.key, job.coords) from exc
        job.target[job.out_index] = chunk[job.chunk_index]

    # -- writes ----------------------------------------------------------------------
    def write(self, selection: Selection, values: np.ndarray) -> None:
        shards = list(selection.project(self.unit_shape))
        keys = [self.key(p.coords) for p in shards]
        partial = [i for i, p in enumerate(shards) if not p.full]
        existing: dict[int, dict[tuple[int, ...], Any]] = {}
        for i, blob in zip(partial, self.store.get_many([keys[i] for i in partial])):
            if blob is not None:
                try:
                    existing[i] = self.codec.split(self.pipeline.decode_bytes_stage(blob), keys[i])
                except CodecError as exc:
                    raise _with_key(exc, keys[i]) from exc
        tasks = []
        for i, p in enumerate(shards):
            sub_values = values[p.out_index]
            for q in p.chunk_selection.project(self.inner_shape):
                tasks.append((i, q, sub_values, existing.get(i, {}).get(self._encoded_coords(q.coords))))

        def encode(task: tuple) -> bytes | None:
            i, q, sub_values, blob = task
            try:
                old = None if blob is None or q.full else (lambda: self._decode_inner(blob))
                chunk = self._updated_chunk(self.inner_shape, q, sub_values, old)
            except CodecError as exc:
                raise _with_key(exc, keys[i], q.coords) from exc
            return self._encode_inner(chunk) if self._keep(chunk) else None

        encoded = run_all(encode, tasks, self.options.threads)
        chunks: list[dict[tuple[int, ...], Any]] = [dict(existing.get(i, {})) for i in range(len(shards))]
        for (i, q, _, _), data in zip(tasks, encoded):
            coords = self._encoded_coords(q.coords)
            if data is None:
                chunks[i].pop(coords, None)
            else:
                chunks[i][coords] = data
        puts: dict[str, Any] = {}
        deletes = []
        for key, inner_chunks in zip(keys, chunks):
            parts = self.codec.assemble_parts(inner_chunks)
            if parts is None:
                deletes.append(key)
            elif self.pipeline.bytes_bytes:
                shard = b"".join(parts)
                for codec in self.pipeline.bytes_bytes:
                    shard = codec.encode(shard)
                puts[key] = shard
            else:
                puts[key] = parts
        self.cache.invalidate(keys)
        self.store.set_many(puts)
        self.store.delete_many(deletes)


def _is_view(index: Any) -> bool:
    """True when indexing with ``index`` gives a view (basic slices only)."""
    return isinstance(index, tuple) and all(isinstance(s, slice) for s in index)


def make_chunk_source(store: Store, path: str, key_encoding: Any, pipeline: Any, spec: ChunkSpec,
                      options: ArrayOptions, cache: IndexCache) -> ChunkSource:
    """The chunk source for a pipeline: sharded when its array->bytes codec is sharding and
    the codecs before it only permute axes; any other chain decodes whole stored values."""
    sharded = (isinstance(getattr(pipeline, "array_bytes", None), ShardingCodec)
               and pipeline.axis_permutation is not None)
    cls = ShardedChunkSource if sharded else PlainChunkSource
    return cls(store, path, key_encoding, pipeline, spec, options, cache)
