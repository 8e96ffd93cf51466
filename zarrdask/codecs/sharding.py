"""``sharding_indexed`` (array -> bytes): many inner chunks stored in one value with an index.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/sharding-indexed/index.html
Example::

    {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 64, 64],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end"}}

The index is a ``(*inner_grid, 2)`` uint64 array of (offset, nbytes) per inner chunk,
``2**64 - 1`` for both when the chunk is absent. This module owns the whole format:
:class:`ShardIndex` parses, checks, looks up and builds indexes, and the codec knows
where the index is, how to assemble a shard from encoded inner chunks and how to take
one apart. Everything else about stored shards (I/O: one index request, coalesced inner
chunk ranges, whole-shard GETs; the index cache; partial reads and writes; the bytes stage
after this codec) is ``nodes/units/shards.py``'s, built on these same format functions.
This codec's own ``decode``/``encode`` are only the :class:`~.base.ArrayBytesCodec` face of
the format (:meth:`split` / :meth:`assemble`) for chains whose units are decoded whole: a
sharding codec nested inside another shard, or after array->array codecs that do more
than permute axes.
"""

from __future__ import annotations

import array
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..metadata.dtypes import data_type_from_numpy
from ..errors import CodecError, CorruptChunkError, MetadataError
from ..storage.base import Buffer, ByteRange, ByteRequest, SuffixRange
from ._config import check_keys, config_error, get_choice
from .base import ArrayBytesCodec, ChunkSpec, Codec, Loc, fill_into
from .nested import parse_codec_list
from .pipeline import CodecPipeline
from .registry import chain_checksummed, register_codec

__all__ = ["ShardingCodec", "ShardIndex", "MISSING", "fill_test", "is_empty_chunk"]

MISSING = np.uint64(2**64 - 1)
_MISSING_INT = 2**64 - 1
_INDEX_DTYPE = data_type_from_numpy("uint64")
_OUTSIDE: Any = object()  # (in place of the span of an entry outside its shard's data region)
_CHECK_ALL = 32  # (a lookup of this many entries checks the whole index at once: one vectorised pass)


class ShardIndex:
    """Where each inner chunk of one shard lies: ``(offset, nbytes)`` per position in the
    C-ordered inner grid, or absent. Built through :meth:`parse` (entries checked as they
    are looked up) or :meth:`build` (from a layout this module made)."""

    __slots__ = ("_entries", "grid", "_start", "_end", "_key", "_checked")

    def __init__(self, entries: array.array[int], grid: tuple[int, ...], data_start: int = 0,
                 data_end: int = _MISSING_INT, key: str = "", checked: bool = False) -> None:
        self._entries = entries  # flat [offset0, nbytes0, offset1, ...]: its own copy, nothing for the GC
        self.grid = grid
        self._start, self._end, self._key = data_start, data_end, key
        self._checked = checked  # (every entry checked at once: lookups need no check)

    @classmethod
    def parse(cls, table: np.ndarray | Buffer, grid: tuple[int, ...], data_start: int, data_end: int | None,
              key: str) -> ShardIndex:
        """Wrap a decoded ``(*grid, 2)`` table, as an array or as its bytes (C order, this
        machine's byte order), copied: it may view a whole shard's bytes.
        Every present entry must lie in ``[data_start, data_end)`` (``data_end`` None: the
        shard's size is not known) without passing 2**64; an entry is checked when it is
        looked up (:meth:`spans`), as the peers check it, so a read pays for the entries it
        uses and a cold read of a few chunks makes no pass over a large index. Entries may
        share bytes: the spec fixes no order and allows unused space, and zarr-python and
        TensorStore read a shard whose chunks share or overlap their bytes, so that is not
        refused (each chunk is decoded, and checksummed where its codecs say, alone)."""
        entries = array.array("Q")
        entries.frombytes(np.ascontiguousarray(table, dtype=np.uint64).data.cast("B")
                          if isinstance(table, np.ndarray) else table)
        return cls(entries, grid, data_start, _MISSING_INT if data_end is None else data_end, key)

    def check(self) -> None:
        """Check every entry in one vectorised pass: before a lookup of many (a shard read
        whole), and for ``verify`` (entries no read looks up, beyond the array's edge)."""
        if self._checked:
            return
        flat = np.frombuffer(self._entries, dtype=np.uint64).reshape(-1, 2)
        off, size = flat[:, 0], flat[:, 1]
        stop = off + size  # (wraps past 2**64: then below off)
        bad = (stop < off) | (off < self._start) | (stop > self._end)
        if bad.any():
            bad &= off != MISSING  # (absent entries: no bytes, whatever their size says)
            if bad.any():
                raise self._outside(int(np.argmax(bad)))
        self._checked = True

    def _outside(self, position: int) -> CorruptChunkError:
        off, size = self._entries[2 * position: 2 * position + 2]
        end = "?" if self._end == _MISSING_INT else self._end
        return CorruptChunkError(
            f"shard {self._key}: index entry for inner chunk {self._coords(position, self.grid)} (offset {off}, "
            f"{size} bytes) points outside the shard's data region [{self._start}, {end}) "
            f"(truncated or corrupt shard)")

    @staticmethod
    def _coords(position: Any, grid: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(map(int, np.unravel_index(int(position), grid)))

    @classmethod
    def build(cls, sizes: Mapping[tuple[int, ...], int], grid: tuple[int, ...], data_start: int) -> ShardIndex:
        """The index of chunks laid out back to back from ``data_start`` in sorted
        (C) order of their inner coordinates."""
        table = np.full((*grid, 2), MISSING, dtype=np.uint64)
        offset = data_start
        for coords in sorted(sizes):
            table[coords] = (offset, sizes[coords])
            offset += sizes[coords]
        return cls(array.array("Q", table.tobytes()), grid, data_start, offset, checked=True)

    def locate(self, position: int) -> tuple[int, int] | None:
        """``(start, stop)`` of the inner chunk at ``position`` in the C-ordered grid, or None."""
        return self.lookup((position,))[0]

    def lookup(self, positions: Sequence[int]) -> list[tuple[int, int] | None]:
        """:meth:`locate` for each of ``positions``, in one step; an entry outside the data
        region raises :class:`CorruptChunkError` naming the first in ``positions`` (only
        these are checked: entries a read does not use may be anything, as the peers read
        them)."""
        entries = self._entries
        return self._spans(zip([entries[2 * p] for p in positions], [entries[2 * p + 1] for p in positions]),
                           positions)

    def spans(self, start: int, count: int) -> list[tuple[int, int] | None]:
        """:meth:`lookup` of the ``count`` positions from ``start``."""
        if count >= _CHECK_ALL:
            self.check()
        entries, stop = self._entries, 2 * (start + count)
        return self._spans(zip(entries[2 * start: stop: 2], entries[2 * start + 1: stop: 2]),
                           range(start, start + count))

    def _spans(self, pairs: Iterable[tuple[int, int]], positions: Sequence[int]) -> list[tuple[int, int] | None]:
        """``(start, stop)`` or None (absent) of each ``(offset, nbytes)`` entry of
        ``positions``, each checked to lie in the data region unless all were."""
        if self._checked:
            return [None if off == _MISSING_INT else (off, off + size) for off, size in pairs]
        lo, hi = self._start, self._end
        out = [None if off == _MISSING_INT else (off, end) if lo <= off and (end := off + size) <= hi else _OUTSIDE
               for off, size in pairs]
        if _OUTSIDE in out:
            raise self._outside(positions[out.index(_OUTSIDE)])
        return out

    def file_order(self) -> np.ndarray | None:
        """The C-order positions of the inner chunks in the order their bytes lie in the
        shard (``intp``), or None when any is absent."""
        offsets = np.frombuffer(self._entries, dtype=np.uint64)[::2]
        if int(offsets.max(initial=0)) == _MISSING_INT:
            return None
        return offsets.argsort(kind="stable").astype(np.intp, copy=False)

    def table(self) -> np.ndarray:
        """The index as the spec's ``(*grid, 2)`` uint64 array."""
        return np.frombuffer(self._entries, dtype=np.uint64).reshape(*self.grid, 2)

    def __len__(self) -> int:
        return len(self._entries) // 2


def is_empty_chunk(array: np.ndarray, fill_value: Any) -> bool:
    """True when every element has exactly the fill value's bits (-0.0 is not 0.0, NaN payloads count).

    A chunk that is "empty" is not stored, so anything short of bit equality would change data.
    """
    return fill_test(array.dtype, fill_value)(array)


def fill_test(dtype: np.dtype, fill_value: Any) -> Callable[[np.ndarray], bool]:
    """:func:`is_empty_chunk` for chunks of ``dtype``, with the fill value's bits worked out
    once (a write tests every chunk it encodes)."""
    if dtype.kind == "O":
        return lambda array: all(v == fill_value for v in array.reshape(-1))
    fill = np.asarray(fill_value, dtype=dtype)
    itemsize = dtype.itemsize
    if itemsize in (1, 2, 4, 8) and dtype.kind != "U":
        bits_type = np.dtype(f"u{itemsize}")
        fill_bits = int(fill.view(bits_type))

        def same_bits(array: np.ndarray) -> bool:
            if array.size == 0:
                return True
            bits = array.view(bits_type)
            return bool(bits.flat[0] == fill_bits and (bits == fill_bits).all())
        return same_bits
    fill_bytes = np.frombuffer(fill.tobytes(), np.uint8)

    def same_bytes(array: np.ndarray) -> bool:
        if array.size == 0:
            return True
        raw = np.ascontiguousarray(array).view(np.uint8).reshape(-1, itemsize)
        return bool((raw == fill_bytes).all())
    return same_bytes


@register_codec
class ShardingCodec(ArrayBytesCodec):
    """The sharding codec. After ``validate`` it holds the inner and index pipelines."""

    name = "sharding_indexed"

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        """When the inner chain keeps one: the index's own checksum guards no data."""
        return chain_checksummed(configuration.get("codecs", ()))

    def __init__(self, chunk_shape: tuple[int, ...], codecs: list[Codec], index_codecs: list[Codec],
                 index_location: str = "end", *, shard_shape: tuple[int, ...] = (),
                 inner: CodecPipeline | None = None, index_pipeline: CodecPipeline | None = None,
                 index_size: int = 0) -> None:
        """The keywords are what ``validate`` derives from the shard (left out: not validated yet)."""
        self.chunk_shape = tuple(chunk_shape)
        self.codecs = list(codecs)
        self.index_codecs = list(index_codecs)
        self.index_location = index_location
        self.inner = inner
        self.index_pipeline = index_pipeline
        self.shard_shape = tuple(shard_shape)
        self.grid_shape = tuple(s // c for s, c in zip(self.shard_shape, self.chunk_shape))
        self.index_size = index_size

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> ShardingCodec:
        check_keys(configuration, {"chunk_shape", "codecs", "index_codecs", "index_location"}, loc)
        shape = configuration.get("chunk_shape")
        if not isinstance(shape, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape
        ):
            raise config_error((*loc, "configuration", "chunk_shape"), f"expected a list of positive integers, got {shape!r}")
        codecs = parse_codec_list(configuration.get("codecs"), (*loc, "configuration", "codecs"))
        index_codecs = parse_codec_list(
            configuration.get("index_codecs", [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]),
            (*loc, "configuration", "index_codecs"),
        )
        location = get_choice(configuration, "index_location", ("start", "end"), loc, default="end")
        return cls(tuple(shape), codecs, index_codecs, location)

    def to_json(self) -> dict[str, Any]:
        inner = self.inner.to_json() if self.inner else [c.to_json() for c in self.codecs]
        index = self.index_pipeline.to_json() if self.index_pipeline else [c.to_json() for c in self.index_codecs]
        return {"name": self.name, "configuration": {
            "chunk_shape": list(self.chunk_shape), "codecs": inner, "index_codecs": index,
            "index_location": self.index_location}}

    def validate(self, spec: ChunkSpec, loc: Loc) -> ShardingCodec:
        if len(spec.shape) != len(self.chunk_shape):
            raise config_error((*loc, "configuration", "chunk_shape"),
                               f"expected {len(spec.shape)} entries (one per shard dimension), "
                               f"got {len(self.chunk_shape)}: {list(self.chunk_shape)}")
        if any(s % c for s, c in zip(spec.shape, self.chunk_shape)):
            raise config_error((*loc, "configuration", "chunk_shape"),
                               f"{list(self.chunk_shape)} must divide the shard shape {list(spec.shape)} evenly")
        grid_shape = tuple(s // c for s, c in zip(spec.shape, self.chunk_shape))
        try:
            inner = CodecPipeline(self.codecs, ChunkSpec(self.chunk_shape, spec.dtype, spec.fill_value),
                                  (*loc, "configuration", "codecs"))
            index_pipeline = CodecPipeline(self.index_codecs, ChunkSpec((*grid_shape, 2), _INDEX_DTYPE, MISSING),
                                           (*loc, "configuration", "index_codecs"))
        except MetadataError as exc:
            raise CodecError("; ".join(str(p) for p in exc.problems)) from None
        size = index_pipeline.encoded_size()
        if size is None:
            raise config_error((*loc, "configuration", "index_codecs"),
                               "must have a fixed encoded size (bytes + checksums only, no compression)")
        return ShardingCodec(self.chunk_shape, self.codecs, self.index_codecs, self.index_location,
                             shard_shape=tuple(spec.shape), inner=inner, index_pipeline=index_pipeline, index_size=size)

    def without_checksums(self) -> ShardingCodec:
        """Unvalidated (the pipeline validates it against the shard again), with every
        inner and index codec reading without checksums."""
        return ShardingCodec(self.chunk_shape, [c.without_checksums() for c in self.codecs],
                             [c.without_checksums() for c in self.index_codecs], self.index_location)

    # -- layout ---------------------------------------------------------------------
    def index_request(self, reach: int = 0) -> ByteRequest:
        """The byte request that fetches the index, and with it up to ``reach`` bytes of the
        shard's chunks beside it (a shard no larger comes whole: :meth:`index_from`)."""
        size = max(self.index_size, reach)
        if self.index_location == "end":
            return SuffixRange(size)
        return ByteRange(0, size)

    def index_from(self, data: Buffer, key: str, reach: int = 0) -> tuple[ShardIndex, Buffer | None]:
        """The index from the answer to ``index_request(reach)``, and the whole shard when the
        answer holds it: fewer bytes than were asked for are the whole object (a suffix or a
        range past the end ends at the object's end), checked as a shard held in memory."""
        if reach > self.index_size:
            if len(data) < reach:
                return self.index_of(data, key), data
            if len(data) == reach:
                view = memoryview(data)
                data = view[-self.index_size:] if self.index_location == "end" else view[: self.index_size]
        return self.read_index(data, key), None

    @property
    def _data_start(self) -> int:
        return self.index_size if self.index_location == "start" else 0

    def read_index(self, data: Buffer, key: str, shard_size: int | None = None) -> ShardIndex:
        """Decode and check an index fetched on its own (``shard_size`` None: unknown) or
        cut from a whole shard; ``key`` names the shard in errors."""
        if len(data) != self.index_size:
            raise CorruptChunkError(
                f"shard {key}: index needs {self.index_size} bytes, found {len(data)} (truncated shard)")
        assert self.index_pipeline is not None
        try:
            table = self.index_pipeline.decode_to_bytes(data)
        except CodecError as exc:
            raise type(exc)(f"shard {key}: index: {exc}") from None
        data_end = None if shard_size is None else shard_size - (self.index_size if self.index_location == "end" else 0)
        return ShardIndex.parse(table, self.grid_shape, self._data_start, data_end, key)

    def index_of(self, shard: Buffer, key: str) -> ShardIndex:
        """The index of a whole shard held in memory, checked against the shard's length."""
        if len(shard) < self.index_size:
            raise CorruptChunkError(
                f"shard {key}: {len(shard)} bytes cannot hold its {self.index_size}-byte index (truncated shard)")
        view = memoryview(shard)
        raw = view[-self.index_size:] if self.index_location == "end" else view[: self.index_size]
        return self.read_index(raw, key, len(shard))

    def inner_chunk_coords(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*map(range, self.grid_shape))

    def assemble(self, chunks: Mapping[tuple[int, ...], Buffer]) -> bytes | None:
        """Lay out encoded inner chunks (C order) with their index; None when no chunk is present."""
        parts = self.assemble_parts(chunks)
        return None if parts is None else b"".join(parts)

    def assemble_parts(self, chunks: Mapping[tuple[int, ...], Buffer]) -> list[Buffer] | None:
        """The shard as a list of parts (index and chunks, in file order), not yet joined."""
        if not chunks:
            return None
        assert self.index_pipeline is not None
        index = ShardIndex.build({c: len(d) for c, d in chunks.items()}, self.grid_shape, self._data_start)
        parts = [chunks[coords] for coords in sorted(chunks)]
        encoded_index = self.index_pipeline.encode(index.table())
        if self.index_location == "start":
            return [encoded_index, *parts]
        return [*parts, encoded_index]

    def split(self, shard: Buffer, key: str) -> dict[tuple[int, ...], memoryview]:
        """The encoded inner chunks of a whole shard, by inner coordinates (zero-copy)."""
        index = self.index_of(shard, key)
        view = memoryview(shard)
        out: dict[tuple[int, ...], memoryview] = {}
        for position, coords in enumerate(self.inner_chunk_coords()):
            where = index.locate(position)
            if where is not None:
                out[coords] = view[where[0]: where[1]]
        return out

    # -- whole-shard codec (used when nested) ------------------------------------------
    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        assert self.inner is not None
        out = np.empty(spec.shape, dtype=spec.dtype.dtype)
        fill_into(out, ..., spec.fill_value)
        for coords, blob in self.split(data, "<nested shard>").items():
            region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, self.chunk_shape))
            out[region] = self.inner.decode(blob)
        return out

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        assert self.inner is not None
        chunks: dict[tuple[int, ...], bytes] = {}
        for coords in self.inner_chunk_coords():
            region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, self.chunk_shape))
            chunk = array[region]
            if not is_empty_chunk(chunk, spec.fill_value):
                chunks[coords] = self.inner.encode(chunk)
        return self.assemble(chunks) or self.assemble_empty()

    def assemble_empty(self) -> bytes:
        """A shard holding no chunk (only needed inside another shard)."""
        assert self.index_pipeline is not None
        return self.index_pipeline.encode(np.full((*self.grid_shape, 2), MISSING, dtype=np.uint64))
