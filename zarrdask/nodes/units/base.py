"""What every kind of stored unit shares: the store and key naming, the read executor for
whole units, the write helpers, key listing, statistics and the check of one unit.

A kind (``chunks.py``, ``shards.py``) adds how one stored value is decoded and written.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ...codecs.base import ChunkSpec, fill_into
from ...codecs.protocol import ChunkPipeline
from ...codecs.sharding import fill_test
from ...errors import CodecError, MissingChunkError, UnguardedWriteError, WriteConflictError, ZarrdaskError
from ...indexing import Projection, Selection, basic_selection
from ...metadata.grid import AxisGrid, ChunkKeyEncoding, RegularAxis, all_chunk_coords, chunk_slices, stored_shape
from ...plan.fetch_plan import ReadPlan, StorageLayout, UnitRead, is_view, plan_read, planned_chunks
from ...storage.base import ByteRange, Store, join_path
from ...runtime.cache import ArrayCache, ArrayKey, forget
from ...runtime.executor import MIN_PARALLEL_WRITE_ITEM_BYTES, run_all
from ...runtime.output import held_array, output_array
from ...runtime.progress import ProgressBar, counted
from .checksums import carries_checksum
from .copies import Hits
from .interface import StorageStatistics, UnitShape
from .options import ArrayOptions
from .puts import UnitPuts

__all__ = ["ChunkSource", "UnitWriter", "fill_item", "with_key"]

T = TypeVar("T")

#: ``writer(indices, old, puts)``: encode the units ``indices`` of a write (``old``: the stored
#: bytes of those read first, by index) and hand each to ``puts``
UnitWriter = Callable[[Sequence[int], Mapping[int, "bytes | None"], UnitPuts], None]
#: how often a guarded read-modify-write is tried before other writers are reported
_ATTEMPTS = 64


def with_key(exc: CodecError, key: str, inner: tuple[int, ...] | None = None) -> CodecError:
    """``exc`` naming the stored value (and inner chunk) it is about, once."""
    where = f"chunk {key}" if inner is None else f"shard {key}, inner chunk {inner}"
    text = str(exc)
    return type(exc)(text if text.startswith(("shard ", "chunk ")) else f"{where}: {text}")


class ChunkSource(ABC):
    """Common state: the store, how keys are named, the storage units' grid and codecs.

    ``pipelines(shape)`` gives the codec pipeline of a unit stored with ``shape``: one
    shape for a regular grid, the shape of each chunk for a rectilinear one. ``spec`` is
    the first unit's (the data type and fill value are every unit's). ``shards``: the
    units are shards (whatever decodes them)."""

    def __init__(self, store: Store, path: str, key_encoding: ChunkKeyEncoding,
                 pipelines: Callable[[tuple[int, ...]], ChunkPipeline], spec: ChunkSpec, options: ArrayOptions,
                 grid: tuple[AxisGrid, ...], *, shards: bool, pool_key: ArrayKey | None = None,
                 decoded: ArrayCache | None = None) -> None:
        self.store = store
        self.path = path
        self.key_encoding = key_encoding
        self._key_prefix = join_path(path) + "/" if join_path(path) else ""  # (then a unit's encoded coordinates)
        self.pipelines = pipelines
        self.pipeline = pipelines(spec.shape)
        self.spec = spec
        self.options = options
        self.grid = grid  # the storage units (one key each) laid over the array
        regular = all(isinstance(axis, RegularAxis) for axis in grid)
        #: the units' shape (regular grids), else every unit's extent per dimension
        self.unit_shape: UnitShape = spec.shape if regular else tuple(axis.extents() for axis in grid)
        self.read_shape: UnitShape = self.unit_shape  # the unit a read decodes (inner chunks when sharded)
        self.shards: UnitShape | None = self.unit_shape if shards else None
        #: what unwritten elements are set to (the metadata's ``chunk_fill``; set by :func:`fill_into`)
        self.fill = spec.fill_value
        self.layout = StorageLayout(unit_grid=grid, chunk_shape=spec.shape, index_strides=_no_strides,
                                    sharded=False, ranged_reads=False, key=self.key)
        #: the array in the process's decoded-chunk pool (writes forget their keys there),
        #: and this open's view of the pool when it reads through it (None: straight reads)
        self.pool_key = pool_key
        self.decoded = decoded

    @functools.cached_property
    def _is_fill(self) -> Callable[[np.ndarray], bool]:
        """Whether a chunk holds the fill value's bits only (worked out on a write's first ask)."""
        return fill_test(self.spec.dtype.dtype, self.spec.fill_value)

    @property
    def _unit_bytes(self) -> int:
        """A whole unit's decoded bytes (the first unit's, on a rectilinear grid): what the
        executor weighs against spreading units over threads."""
        return math.prod(self.spec.shape) * self.spec.dtype.dtype.itemsize

    @property
    def _write_item_bytes(self) -> int:
        """The decoded bytes of what a write encodes in one call: an inner chunk when
        sharded (a shard's inner chunks go to the executor in runs, but each is one
        GIL-free encode, which is what the threshold weighs), else a unit (the first
        one's, on a rectilinear grid)."""
        sizes = [n for n in self.read_shape if isinstance(n, int)]
        if len(sizes) != len(self.read_shape):  # a rectilinear grid's extents per dimension
            sizes = list(self.spec.shape)
        return math.prod(sizes) * self.spec.dtype.dtype.itemsize

    def _pipeline_at(self, coords: tuple[int, ...]) -> ChunkPipeline:
        return self.pipelines(stored_shape(self.grid, coords))

    def key(self, coords: tuple[int, ...]) -> str:
        return self._key_prefix + self.key_encoding.encode(coords).strip("/")

    # -- reads: the plan (pure) and its one executor ------------------------------------
    def plan(self, selection: Selection) -> ReadPlan:
        return plan_read(selection, self.layout)

    def read(self, selection: Selection, out: np.ndarray) -> None:
        decoded = self.decoded
        units = (self.plan(selection) if decoded is None else decoded.plan(selection, self.plan)).units
        targets = [_target(out, u) for u in units]
        if decoded is None:
            self._read_units(units, targets)
        else:
            self._read_cached(units, targets, decoded)
        for u, target in zip(units, targets):
            if u.out_index is not None and not is_view(u.out_index):
                out[u.out_index] = target

    def _read_units(self, units: Sequence[UnitRead], targets: Sequence[np.ndarray]) -> None:
        """Read the planned units into their targets (every unit whole here)."""
        self._read_whole(units, targets)

    def _read_whole(self, units: Sequence[UnitRead], targets: Sequence[np.ndarray]) -> None:
        """Fetch and decode whole units: on local stores each thread fetches and decodes its
        own (one unit: its chunks decoded in parallel); remote stores fetch them all
        concurrently and each is decoded as it arrives, so fetching overlaps decoding."""
        threads = self.options.threads
        if len(units) == 1 or self.store.is_local:
            inner = threads if len(units) == 1 else 1
            run_all(lambda i: self._decode_unit(units[i], targets[i], self.store.get(units[i].key), inner),
                    range(len(units)), threads, min_parallel=2, item_bytes=self._unit_bytes)
            return
        for i, blob in self.store.iter_ranges([(u.key, ByteRange(0, None)) for u in units]):
            self._decode_unit(units[i], targets[i], blob, threads)

    def _read_cached(self, units: Sequence[UnitRead], targets: Sequence[np.ndarray], cache: ArrayCache) -> None:
        """Read through the decoded-chunk cache: each unit's decoded value from the pool (the
        copies spread over the threads for large reads), or fetched, decoded into an array of
        its own, held and copied out."""
        ticket = cache.ticket()
        missed = []
        hits = Hits(self.options.threads, self._placed_bytes(units))
        for i, (unit, found) in enumerate(zip(units, cache.get_many([(u.key, 0) for u in units]))):
            if found is None:
                missed.append(i)
            else:
                hits.add(targets[i], unit.chunks[0], found)
        hits.finish()

        def load(i: int, blob: bytes | None) -> None:
            unit = units[i]
            (placement,) = unit.chunks
            if blob is None:
                self._missing(f"chunk {unit.key}", targets[i], placement.out_index)
                return
            try:
                chunk = self._decode_whole(unit.coords, blob)
            except CodecError as exc:
                raise with_key(exc, unit.key) from exc
            cache.put(unit.key, 0, chunk, ticket)
            targets[i][placement.out_index] = chunk[placement.chunk_index]

        if self.store.is_local:
            run_all(lambda i: load(i, self.store.get(units[i].key)), missed, self.options.threads, min_parallel=2)
        else:
            blobs = self.store.get_many([units[i].key for i in missed])
            run_all(lambda j: load(missed[j], blobs[j]), range(len(missed)), self.options.threads, min_parallel=2)

    def _placed_bytes(self, units: Sequence[UnitRead]) -> int:
        """The bytes ``units`` place into a read's output."""
        return sum(math.prod(u.shape) for u in units) * self.spec.dtype.dtype.itemsize

    def _decode_whole(self, coords: tuple[int, ...], blob: bytes) -> np.ndarray:
        """A whole stored value decoded into an array of its own (C order, memory an entry
        dropped earlier may have left: ``held_array``), to be held."""
        pipeline = self._pipeline_at(coords)
        if not pipeline.decodes_into:
            return np.array(pipeline.decode(blob), order="C", copy=True)
        fresh = held_array(stored_shape(self.grid, coords), self.spec.dtype.dtype)
        pipeline.decode_into([blob], fresh[np.newaxis])
        return fresh

    def forget(self, keys: Iterable[str] | None = None) -> None:
        """Forget what the process's decoded-chunk cache holds of ``keys`` (None: every key)
        of this array, after zarrdask changed them."""
        forget(self.pool_key, keys)

    @abstractmethod
    def _decode_unit(self, unit: UnitRead, target: np.ndarray, blob: bytes | None, threads: int | None) -> None:
        """Decode a whole stored value (None: absent) into ``target``."""

    def _missing(self, what: str, target: np.ndarray, index: Any) -> None:
        """Fill ``target[index]`` for an absent ``what`` (e.g. ``"chunk c/0/1"``), or raise."""
        if self.options.missing_chunks == "raise":
            raise MissingChunkError(f"{what} does not exist (missing_chunks='raise')")
        fill_into(target, index, self.fill)

    # -- writes ------------------------------------------------------------------------
    @abstractmethod
    def write(self, selection: Selection, values: np.ndarray) -> None:
        """Write ``values`` over ``selection``: every touched unit read (when partly
        covered), modified, encoded and put once, inside this call."""

    def _write_units(self, keys: Sequence[str], projections: Sequence[Projection], writer: UnitWriter) -> None:
        """Write the units of one call: those covered whole with plain puts, then the others
        by a read-modify-write the store guards (``Store.update``): each commits only if no
        other writer changed it since it was read, else it is read, merged and committed
        again. Where the store cannot guard it the write is refused before anything is
        stored, unless ``lock`` serialises the writers or ``safe_chunks=False``."""
        full = [self._covers(p.full, p.extent, stored_shape(self.grid, p.coords)) for p in projections]
        whole = [i for i, f in enumerate(full) if f]
        partly = [i for i, f in enumerate(full) if not f]
        if partly:
            self._check_guarded([keys[i] for i in partly])
        try:
            if whole:
                puts = UnitPuts(self.store)
                writer(whole, {}, puts)
                puts.finish()
            for attempt in range(_ATTEMPTS):
                if not partly:
                    break
                with self.store.update([keys[i] for i in partly]) as update:
                    puts = UnitPuts(self.store, update)
                    writer(partly, {i: update.values[keys[i]] for i in partly}, puts)
                    changed = update.commit(puts.held)
                partly = [i for i in partly if keys[i] in changed]
                if partly:  # others wrote those units meanwhile: back off, then merge again
                    time.sleep(random.uniform(0, min(1.0, 0.005 * 2 ** attempt)))
            if partly:
                raise WriteConflictError(
                    f"array {self.path or '/'}: other writers kept changing {_named(self._noun, keys, partly)} while this write "
                    f"merged its part into them, {_ATTEMPTS} times; nothing of those was stored (the rest was). "
                    "Write again, or give the writers of those units a shared lock (lock=)")
        finally:
            self.forget(keys)

    def _covers(self, full: bool, extent: tuple[int, ...], shape: tuple[int, ...]) -> bool:
        """Whether a write covering ``extent`` of a unit (or inner chunk) stored as ``shape``
        replaces it whole. A unit the array's edge cuts is merged instead where writers are
        guarded (or locked) and ``safe_chunks`` holds: another process may have grown the
        array since this one read its shape and stored values past that edge, which a whole
        write would drop."""
        return full and (extent == shape or not self.options.safe_chunks
                         or (self.store.guard is None and self.options.lock is None))

    def check_region(self, region: tuple[slice, ...]) -> None:
        if self.store.guard is not None or self.options.lock is not None or not self.options.safe_chunks:
            return
        axes = []  # per axis: the units met, and those met in part
        for s, axis in zip(region, self.grid):
            met = [k for k, _, _ in axis.overlapping(s.start, s.stop)] if s.stop > s.start else []
            cut = [k for k in met if not s.start <= axis.bounds(k)[0] <= axis.bounds(k)[1] <= s.stop]
            axes.append((met, cut))
        for a, (_, cut) in enumerate(axes):
            if cut:  # a few units cut along axis ``a`` named (with every unit met along the others)
                keys = [self.key(c) for c in itertools.islice(itertools.product(
                    *(cut if b == a else met for b, (met, _) in enumerate(axes))), 3)]
                self._check_guarded(keys)

    @property
    def _noun(self) -> str:
        return "chunk" if self.shards is None else "shard"

    def _check_guarded(self, keys: list[str]) -> None:
        store = self.store
        if store.guard is not None or self.options.lock is not None or not self.options.safe_chunks:
            return
        raise UnguardedWriteError(
            f"array {self.path or '/'}: this write covers part of {_named(self._noun, keys, range(len(keys)))}, and "
            f"{store!r} can neither write conditionally nor lock a key, so another writer's part of those "
            f"{self._noun}s could be lost. Nothing was written. Write whole {self._noun}s (a selection or region "
            f"aligned to the {self._noun} shape {self.unit_shape}), or give every writer one lock "
            "(lock=zarrdask.FileLock(path) on one machine, a distributed.Lock on a cluster), or pass "
            f"safe_chunks=False when no other writer touches these {self._noun}s at the same time")

    def _new_chunk(self, shape: tuple[int, ...]) -> np.ndarray:
        chunk = np.empty(shape, dtype=self.spec.dtype.dtype)
        fill_into(chunk, ..., self.fill)
        return chunk

    def _updated_chunk(self, shape: tuple[int, ...], proj: Projection, values: np.ndarray,
                       old: Callable[[], np.ndarray] | None) -> np.ndarray:
        """The chunk after the write: the new values themselves when they cover it whole (no
        copy), else the old chunk (``old()``, or the fill value) with the new values assigned."""
        if proj.full and proj.extent == shape and is_view(proj.out_index):
            return values[(*proj.out_index, ...)]  # (a 0-d view, not an element, for 0-d arrays)
        chunk = np.array(old(), copy=True) if old is not None else self._new_chunk(shape)
        chunk[proj.chunk_index] = values[proj.out_index]
        return chunk

    def _keep(self, chunk: np.ndarray) -> bool:
        return self.options.write_empty_chunks or not self._is_fill(chunk)

    def _encode_all(self, encode: Callable[[T], None], items: Sequence[T]) -> None:
        """``encode`` (and put) every chunk of a write (the one executor), counted on a bar
        when asked."""
        size = {"item_bytes": self._write_item_bytes, "min_item_bytes": MIN_PARALLEL_WRITE_ITEM_BYTES}
        if not self.options.progress:
            run_all(encode, items, self.options.threads, **size)
            return
        with ProgressBar(len(items), f"write {self.path or '/'}", self._noun) as bar:
            run_all(counted(encode, bar), items, self.options.threads, **size)

    def delete(self, coords: Iterable[tuple[int, ...]]) -> None:
        keys = [self.key(c) for c in coords]
        self.store.delete_many(keys)
        self.forget(keys)

    # -- what is stored ------------------------------------------------------------------
    def coords_of(self, key: str) -> tuple[int, ...] | None:
        if not key.startswith(self._key_prefix):
            return None
        decode = getattr(self.key_encoding, "decode", None)
        if decode is None:  # (a registered encoding that cannot read its keys back)
            return self._grid_keys.get(key)
        coords: tuple[int, ...] | None = decode(key[len(self._key_prefix):], len(self.grid))
        if coords is None or any(c >= axis.count for c, axis in zip(coords, self.grid)):
            return None
        return coords

    @functools.cached_property
    def _grid_keys(self) -> dict[str, tuple[int, ...]]:
        """Every unit's key -> its coordinates (for :meth:`coords_of`, without a ``decode``)."""
        return {self.key(c): c for c in all_chunk_coords(self.grid)}

    def stored_keys(self) -> set[str]:
        return {k for k in self.store.list_prefix(self.path) if self.coords_of(k) is not None}

    def stored_sizes(self) -> dict[str, int]:
        return {k: n for k, n in self.store.list_sizes(self.path) if self.coords_of(k) is not None}

    def statistics(self, selection: Selection, listed: Iterable[str] | None = None) -> StorageStatistics:
        keys = self.store.list_prefix(self.path) if listed is None else listed
        stored = {c for c in map(self.coords_of, keys) if c is not None}
        present = list(plan_read(selection, self.layout, stored).units)
        return StorageStatistics(chunks_stored=self._count_stored(present),
                                 chunks_total=planned_chunks(selection, self.layout))

    def _count_stored(self, units: list[UnitRead]) -> int:
        """The planned chunks of stored ``units`` that are present (every one, unsharded)."""
        return sum(len(u.chunks) for u in units)

    def check_unit(self, coords: tuple[int, ...]) -> str | None:
        shape = tuple(axis.size for axis in self.grid)
        selection, _ = basic_selection(chunk_slices(self.grid, coords), shape)
        try:
            self.read(selection, output_array(selection.shape, self.spec.dtype.dtype))
        except ZarrdaskError as exc:
            return str(exc)
        except Exception as exc:  # a codec library's own error on corrupt bytes: still a finding
            return f"{type(exc).__name__}: {exc}"
        return None

    @property
    def carries_checksum(self) -> bool:
        return carries_checksum(self.pipeline.to_json())


def _named(noun: str, keys: Sequence[str], indices: Iterable[int]) -> str:
    """``shards 'k1', 'k2' and 3 more``: the stored units at ``indices``."""
    chosen = [keys[i] for i in indices]
    shown = ", ".join(repr(k) for k in chosen[:3])
    more = f" and {len(chosen) - 3} more" if len(chosen) > 3 else ""
    return f"{noun}{'' if len(chosen) == 1 else 's'} {shown}{more}"


def _no_strides(coords: tuple[int, ...]) -> tuple[int, ...]:
    return ()


def _target(out: np.ndarray, unit: UnitRead) -> np.ndarray:
    """Where a unit's values go: ``out`` itself (placements index it directly), a view of
    it, or a buffer copied back after the read."""
    if unit.out_index is None:
        return out
    if is_view(unit.out_index):
        return out[unit.out_index or ...]  # (``...``: a 0-d array's view, not its scalar)
    return np.empty(unit.shape, dtype=out.dtype)


def fill_item(fill: Any) -> Any:
    """``fill`` as numpy assigns it to every element it is set to: a list or dict (an item
    of an array of any objects) inside a 0-d object array, which numpy broadcasts whole
    (a bare list would be spread over the elements)."""
    if not isinstance(fill, (list, dict)):
        return fill
    item = np.empty((), dtype=object)
    item[()] = fill
    return item
