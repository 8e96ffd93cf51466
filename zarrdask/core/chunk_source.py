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

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..codecs.base import ChunkSpec, Frames
from ..codecs.sharding import ShardIndex, ShardingCodec, is_empty_chunk
from ..metadata.grid import AxisGrid, RegularAxis, stored_shape
from ..errors import CodecError, CorruptChunkError, InvalidModeError, MissingChunkError
from ..indexing import Projection, Selection
from ..plan.fetch_plan import ChunkPlacement, ReadPlan, StorageLayout, UnitRead, index_strides, is_view, plan_read
from ..storage.base import ByteRange, Store, join_path
from ..storage.coalesce import coalesce_ranges, split_coalesced
from .block_placement import Slab, place_block, slabs
from .executor import run_all
from .output import scratch
from .progress import ProgressBar, counted

__all__ = ["ArrayOptions", "IndexCache", "PlainChunkSource", "ShardedChunkSource", "make_chunk_source"]


@dataclass(frozen=True)
class ArrayOptions:
    """Per-array runtime options (not stored in metadata).

    ``write_empty_chunks``: store chunks equal to the fill value (default: delete them).
    ``missing_chunks``: ``"fill"`` reads absent chunks as the fill value, ``"raise"`` raises.
    ``index_cache_size``: shard indexes kept per array (LRU).
    ``threads``: threads for one read/write call (None: one per core; 1: serial, as in Dask tasks).
    ``coalesce_gap`` / ``coalesce_max``: merge inner-chunk ranges at most this far apart / this big.
    ``progress``: writes draw a progress bar on stderr (chunks encoded).
    ``lock``: held around every write call (``acquire()``/``release()``: a ``distributed.Lock``, a
    :class:`~zarrdask.core.locks.FileLock`), for processes writing parts of the same chunk or shard
    outside Dask. Without it such writes are unsafe: one writer's part can be lost.
    ``verify_checksums``: check every crc32c on read (False skips the check, for speed).
    """

    write_empty_chunks: bool = False
    missing_chunks: str = "fill"
    index_cache_size: int = 1024
    threads: int | None = None
    coalesce_gap: int = 1 << 16
    coalesce_max: int = 1 << 26
    progress: bool = False
    lock: Any = None
    verify_checksums: bool = True

    def __post_init__(self) -> None:
        if self.lock is not None and not (hasattr(self.lock, "acquire") and hasattr(self.lock, "release")):
            raise InvalidModeError(f"lock must have acquire() and release(), got {self.lock!r}")
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
    """Common state: the store, how keys are named, the storage units' grid and codecs.

    ``pipelines(shape)`` gives the codec pipeline of a unit stored with ``shape``: one
    shape for a regular grid, the shape of each chunk for a rectilinear one. ``spec`` is
    the first unit's (the data type and fill value are every unit's)."""

    def __init__(self, store: Store, path: str, key_encoding: Any, pipelines: Callable[[tuple[int, ...]], Any],
                 spec: ChunkSpec, options: ArrayOptions, cache: IndexCache, grid: tuple[AxisGrid, ...]) -> None:
        self.store = store
        self.path = path
        self.key_encoding = key_encoding
        self.pipelines = pipelines
        self.pipeline = pipelines(spec.shape)
        self.spec = spec
        self.options = options
        self.cache = cache
        self.grid = grid  # the storage units (one key each) laid over the array
        regular = all(isinstance(axis, RegularAxis) for axis in grid)
        #: the units' shape (regular grids), else every unit's extent per dimension
        self.unit_shape: Any = spec.shape if regular else tuple(axis.extents() for axis in grid)
        self.read_shape: Any = self.unit_shape  # the unit a read decodes (inner chunks when sharded)
        fill = spec.fill_value
        self.fill = spec.dtype.default_fill() if fill is None else fill
        self.layout = StorageLayout(grid, spec.shape, _no_strides, False, False, self.key)

    def _pipeline_at(self, coords: tuple[int, ...]) -> Any:
        return self.pipelines(stored_shape(self.grid, coords))

    def key(self, coords: tuple[int, ...]) -> str:
        return join_path(self.path, self.key_encoding.encode(coords))

    # -- reads: the plan (pure) and its one executor ------------------------------------
    def plan(self, selection: Selection) -> ReadPlan:
        return plan_read(selection, self.layout)

    def read(self, selection: Selection, out: np.ndarray) -> None:
        """Read ``selection`` into ``out``: whole units fetched and decoded (on local stores
        each thread fetches and decodes its own; remote stores fetch them all concurrently
        and each is decoded as it arrives, so fetching overlaps decoding either way),
        ranged units through their indexes."""
        units = self.plan(selection).units
        targets = [_target(out, u) for u in units]
        whole = [i for i, u in enumerate(units) if u.whole]
        threads = self.options.threads
        if len(whole) == 1:  # one unit: its chunks are decoded in parallel
            i = whole[0]
            self._decode_unit(units[i], targets[i], self.store.get(units[i].key), threads)
        elif whole and self.store.is_local:
            run_all(lambda i: self._decode_unit(units[i], targets[i], self.store.get(units[i].key), 1),
                    whole, threads, min_parallel=2)
        elif whole:  # decoded as they arrive, each on the pool, while the rest are in flight
            arrivals = self.store.iter_ranges([(units[i].key, ByteRange(0, None)) for i in whole])
            for j, blob in arrivals:
                i = whole[j]
                self._decode_unit(units[i], targets[i], blob, threads)
        ranged = [i for i, u in enumerate(units) if not u.whole]
        if ranged:
            jobs = self._fetch_ranges([units[i] for i in ranged], [targets[i] for i in ranged])
            run_all(self._decode_job, jobs, threads)
        for u, target in zip(units, targets):
            if u.out_index is not None and not is_view(u.out_index):
                out[u.out_index] = target

    def _decode_unit(self, unit: UnitRead, target: np.ndarray, blob: bytes | None, threads: int | None) -> None:
        """Decode a whole stored value into ``target``."""
        raise NotImplementedError

    def _fetch_ranges(self, units: list[UnitRead], targets: list[np.ndarray]) -> list[_InnerJob]:
        raise NotImplementedError

    def _decode_job(self, job: _InnerJob) -> None:
        raise NotImplementedError

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
        if proj.full and proj.shape == shape and is_view(proj.out_index):
            return values[(*proj.out_index, ...)]  # (a 0-d view, not an element, for 0-d arrays)
        chunk = np.array(old(), copy=True) if old is not None else self._new_chunk(shape)
        chunk[proj.chunk_index] = values[proj.out_index]
        return chunk

    def _keep(self, chunk: np.ndarray) -> bool:
        return self.options.write_empty_chunks or not is_empty_chunk(chunk, self.fill)

    def write(self, selection: Selection, values: np.ndarray) -> None:
        raise NotImplementedError

    def _encode_all(self, encode: Callable[[Any], bytes | None], items: Sequence[Any]) -> list[bytes | None]:
        """``encode`` every chunk of a write (the one executor), counted on a bar when asked."""
        if not self.options.progress:
            return run_all(encode, items, self.options.threads)
        with ProgressBar(len(items), f"write {self.path or '/'}") as bar:
            return run_all(counted(encode, bar), items, self.options.threads)


def _no_strides(coords: tuple[int, ...]) -> tuple[int, ...]:
    return ()


def _target(out: np.ndarray, unit: UnitRead) -> np.ndarray:
    """Where a unit's values go: ``out`` itself (placements index it directly), a view of
    it, or a buffer copied back after the read."""
    if unit.out_index is None:
        return out
    if is_view(unit.out_index):
        return out[unit.out_index]
    return np.empty(unit.shape, dtype=out.dtype)


class PlainChunkSource(ChunkSource):
    """One stored value per chunk (or per shard that must be decoded whole)."""

    def _decode_unit(self, unit: UnitRead, target: np.ndarray, blob: bytes | None, threads: int | None) -> None:
        (placement,) = unit.chunks
        if blob is None:
            self._missing(f"chunk {unit.key}", target, placement.out_index)
            return
        try:
            with _decoded(self._pipeline_at(unit.coords), blob, stored_shape(self.grid, unit.coords),
                          self.spec.dtype.dtype) as chunk:
                target[placement.out_index] = chunk[placement.chunk_index]
        except CodecError as exc:
            raise _with_key(exc, unit.key) from exc

    def write(self, selection: Selection, values: np.ndarray) -> None:
        projections = list(selection.project(self.grid))
        keys = [self.key(p.coords) for p in projections]
        partial = [i for i, p in enumerate(projections) if not p.full]
        existing = dict(zip(partial, self.store.get_many([keys[i] for i in partial])))

        def encode(i: int) -> bytes | None:
            blob, coords = existing.get(i), projections[i].coords
            pipeline = self._pipeline_at(coords)
            try:
                old = None if blob is None else (lambda: pipeline.decode(blob))
                chunk = self._updated_chunk(stored_shape(self.grid, coords), projections[i], values, old)
            except CodecError as exc:
                raise _with_key(exc, keys[i]) from exc
            return pipeline.encode(chunk) if self._keep(chunk) else None

        encoded = self._encode_all(encode, range(len(projections)))
        self.store.set_many({k: e for k, e in zip(keys, encoded) if e is not None})
        self.store.delete_many([k for k, e in zip(keys, encoded) if e is None])


@contextmanager
def _decoded(pipeline: Any, blob: bytes, shape: tuple[int, ...], dtype: np.dtype) -> Iterator[np.ndarray]:
    """A stored chunk decoded, for the duration of the block: into a reused scratch buffer
    (its pages already mapped, where a fresh result of megabytes is paid for in page
    faults) when the chain can decode straight into memory, else as ``decode`` gives it
    (then a buffer would only add a copy)."""
    if not pipeline.decodes_into:
        yield pipeline.decode(blob)
        return
    with scratch((1, *shape), dtype) as chunk:
        pipeline.decode_into([blob], chunk)
        yield chunk[0, ...]  # (a 0-d view, not an element, for 0-d chunks)


class _InnerJob:
    """One inner chunk of a ranged read: its placement, the unit's target, and its bytes
    once fetched (None: absent from the shard)."""

    __slots__ = ("key", "placement", "target", "data")

    def __init__(self, key: str, placement: ChunkPlacement, target: np.ndarray) -> None:
        self.key, self.placement, self.target = key, placement, target
        self.data: memoryview | bytes | None = None


class _InnerWrite(NamedTuple):
    """One inner chunk of a write: shard ``shard`` (its number in the write), the inner
    chunk's projection, the shard's values and the chunk's old encoded bytes (or None)."""

    shard: int
    projection: Projection
    values: np.ndarray
    old: Any


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
        self.inner = codec.inner
        self._perm = perm
        self._inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))
        self.inner_shape = tuple(codec.chunk_shape[k] for k in self._inverse)
        self.read_shape = self.inner_shape
        self._strides: dict[tuple[int, ...], tuple[int, ...]] = {}
        # bytes->bytes codecs after the sharding codec hide the layout: only whole-shard reads then
        self.layout = StorageLayout(self.grid, self.inner_shape, self._strides_at, True,
                                    not self.pipeline.bytes_bytes, self.key)

    def _codec_at(self, coords: tuple[int, ...]) -> ShardingCodec:
        """The sharding codec of the shard at ``coords`` (its inner grid and index size
        follow the shard's stored shape)."""
        return self._pipeline_at(coords).array_bytes

    def _strides_at(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        shape = stored_shape(self.grid, coords)
        strides = self._strides.get(shape)
        if strides is None:
            strides = self._strides[shape] = index_strides(self.pipelines(shape).array_bytes.grid_shape, self._perm)
        return strides

    # -- reads -----------------------------------------------------------------------
    def _decode_inner(self, data: bytes | memoryview) -> np.ndarray:
        """An inner chunk as the array sees it (a view when transposed back)."""
        return self.inner.decode(data).transpose(self._inverse)

    def _encode_inner(self, chunk: np.ndarray) -> bytes:
        return self.inner.encode(chunk.transpose(self._perm))

    def _encoded_coords(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        """An inner chunk's coordinates in the sharding codec's (permuted) grid."""
        return tuple(coords[k] for k in self._perm)

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
            blob = self.pipeline.decode_bytes_stage(blob)
            index = codec.index_of(blob, key)
        except CodecError as exc:
            raise _with_key(exc, key) from exc
        view = memoryview(blob)
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
                raise _with_key(exc, key, item.coords) from exc
            target[item.out_index] = chunk[item.chunk_index]

        run_all(place, unit.chunks, threads)

    def _decode_block(self, unit: UnitRead, codec: ShardingCodec, index: ShardIndex, view: memoryview,
                      target: np.ndarray, threads: int | None) -> None:
        """Decode the inner chunks of a shard read whole a slab at a time, each straight into
        its slot where the codecs allow, and place each slab with one copy (see
        ``block_placement.py``); the slabs are spread over the threads."""
        key, inner, order = unit.key, codec.inner, self._inverse
        assert inner is not None
        needed = {item.position: item for item in unit.chunks}  # (at an edge, not every chunk)

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
                    raise _with_key(exc, key, failed) from exc
                place_block(stack, target[region], order)

        run_all(run, slabs(codec.grid_shape, codec.chunk_shape, self.spec.dtype.dtype.itemsize), threads,
                min_parallel=2)

    def _indexes(self, units: list[UnitRead]) -> list[ShardIndex | None]:
        """Shard indexes from the cache, the rest with one batched ranged request."""
        indexes: list[Any] = [self.cache.get(u.key) for u in units]
        todo = [i for i, idx in enumerate(indexes) if idx is None]
        codecs = {i: self._codec_at(units[i].coords) for i in todo}
        requests = [(units[i].key, codecs[i].index_request()) for i in todo]
        for i, raw in zip(todo, self.store.get_ranges(requests)):
            if raw is None:
                continue
            key = units[i].key
            try:
                indexes[i] = codecs[i].read_index(raw, key)
            except CodecError as exc:
                raise _with_key(exc, key) from exc
            self.cache.put(key, indexes[i])
        return indexes

    def _fetch_ranges(self, units: list[UnitRead], targets: list[np.ndarray]) -> list[_InnerJob]:
        """The inner chunks of partly read shards, with their bytes: the indexes (cached, or
        one batched request), then every needed range, neighbours coalesced, in one batch."""
        jobs: list[_InnerJob] = []
        requests: list[tuple[str, ByteRange]] = []
        placements: list[tuple[list[tuple[int, int]], list, list[_InnerJob]]] = []
        for unit, target, index in zip(units, targets, self._indexes(units)):
            key = unit.key
            inner = [_InnerJob(key, placement, target) for placement in unit.chunks]
            jobs.extend(inner)
            if index is None:
                continue
            ranges, pending = [], []
            for job in inner:
                where = index.locate(job.placement.position)
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
                        f"shard {job.key}, inner chunk {job.placement.coords}: expected {end - start} bytes at offset "
                        f"{start}, got {got} (truncated shard)")
                job.data = piece
        return jobs

    def _decode_job(self, job: _InnerJob) -> None:
        placement = job.placement
        if job.data is None:
            self._missing(f"shard {job.key}, inner chunk {placement.coords}", job.target, placement.out_index)
            return
        try:
            chunk = self._decode_inner(job.data)
        except CodecError as exc:
            raise _with_key(exc, job.key, placement.coords) from exc
        job.target[placement.out_index] = chunk[placement.chunk_index]

    # -- writes ----------------------------------------------------------------------
    def write(self, selection: Selection, values: np.ndarray) -> None:
        shards = list(selection.project(self.grid))
        keys = [self.key(p.coords) for p in shards]
        partial = [i for i, p in enumerate(shards) if not p.full]
        existing: dict[int, dict[tuple[int, ...], Any]] = {}
        for i, blob in zip(partial, self.store.get_many([keys[i] for i in partial])):
            if blob is not None:
                try:
                    existing[i] = self._codec_at(shards[i].coords).split(self.pipeline.decode_bytes_stage(blob), keys[i])
                except CodecError as exc:
                    raise _with_key(exc, keys[i]) from exc
        tasks = []
        for i, p in enumerate(shards):
            sub_values = values[p.out_index]
            for q in p.chunk_selection.project(self.inner_shape):
                tasks.append(_InnerWrite(i, q, sub_values, existing.get(i, {}).get(self._encoded_coords(q.coords))))

        def encode(task: _InnerWrite) -> bytes | None:
            q, blob = task.projection, task.old
            try:
                old = None if blob is None or q.full else (lambda: self._decode_inner(blob))
                chunk = self._updated_chunk(self.inner_shape, q, task.values, old)
            except CodecError as exc:
                raise _with_key(exc, keys[task.shard], q.coords) from exc
            return self._encode_inner(chunk) if self._keep(chunk) else None

        encoded = self._encode_all(encode, tasks)
        chunks: list[dict[tuple[int, ...], Any]] = [dict(existing.get(i, {})) for i in range(len(shards))]
        for task, data in zip(tasks, encoded):
            i, coords = task.shard, self._encoded_coords(task.projection.coords)
            if data is None:
                chunks[i].pop(coords, None)
            else:
                chunks[i][coords] = data
        puts: dict[str, Any] = {}
        deletes = []
        for p, key, inner_chunks in zip(shards, keys, chunks):
            parts = self._codec_at(p.coords).assemble_parts(inner_chunks)
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


def make_chunk_source(store: Store, path: str, key_encoding: Any, pipelines: Callable[[tuple[int, ...]], Any],
                      spec: ChunkSpec, options: ArrayOptions, cache: IndexCache,
                      grid: tuple[AxisGrid, ...]) -> ChunkSource:
    """The chunk source for a codec chain: sharded when its array->bytes codec is sharding
    and the codecs before it only permute axes; any other chain decodes whole stored values."""
    pipeline = pipelines(spec.shape)
    sharded = (isinstance(getattr(pipeline, "array_bytes", None), ShardingCodec)
               and pipeline.axis_permutation is not None)
    cls = ShardedChunkSource if sharded else PlainChunkSource
    return cls(store, path, key_encoding, pipelines, spec, options, cache, grid)
