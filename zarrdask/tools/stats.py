"""Chunk statistics: what is stored, found without reading chunk data.

Unsharded arrays are answered from one listing of the array's keys; sharded arrays also
read the index of each stored shard a question touches (one batched ranged request, or
whole shards when bytes->bytes codecs after the sharding codec hide the index).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.chunk_source import ShardedChunkSource
from ..errors import CodecError
from ..metadata.grid import all_chunk_coords
from ..indexing import basic_selection
from ..plan.fetch_plan import UnitRead

if TYPE_CHECKING:
    from ..core.array import Array

__all__ = ["StorageStatistics", "storage_statistics", "stored_unit_keys", "unit_keys"]


@dataclass(frozen=True)
class StorageStatistics:
    """How much of a region is stored. ``chunks_total`` counts the chunks (inner chunks when
    sharded) that overlap the region, ``chunks_stored`` those of them present in the store.
    A chunk equal to the fill value is usually not stored, so ``fully_stored`` False does
    not mean data is missing; ``not_stored`` True means every read of the region gives the
    fill value."""

    chunks_stored: int
    chunks_total: int

    @property
    def not_stored(self) -> bool:
        return self.chunks_stored == 0

    @property
    def fully_stored(self) -> bool:
        return self.chunks_stored == self.chunks_total


def unit_keys(array: Array) -> dict[str, tuple[int, ...]]:
    """Every storage unit's key (shard when sharded, else chunk) -> its grid coordinates."""
    source = array._source
    return {source.key(c): c for c in all_chunk_coords(array.unit_grid)}


def stored_unit_keys(array: Array, keys: Sequence[str] | None = None) -> set[str]:
    """The storage units' keys present in the store (one listing of the array's keys)."""
    expected = set(unit_keys(array)) if keys is None else set(keys)
    source = array._source
    return {k for k in source.store.list_prefix(source.path) if k in expected}


def storage_statistics(array: Array, region: Any = Ellipsis) -> StorageStatistics:
    """Which chunks overlapping ``region`` (a basic selection: ints, slices) are stored."""
    selection, _ = basic_selection(region, array.shape)
    source = array._source
    units = source.plan(selection).units
    stored = stored_unit_keys(array, [u.key for u in units])
    total = sum(len(u.chunks) for u in units)
    present = [u for u in units if u.key in stored]
    if not isinstance(source, ShardedChunkSource):
        return StorageStatistics(sum(len(u.chunks) for u in present), total)
    count = 0
    for unit, index in zip(present, _shard_indexes(source, present)):
        if index is not None:
            count += sum(index.locate(c.position) is not None for c in unit.chunks)
    return StorageStatistics(count, total)


def _shard_indexes(source: ShardedChunkSource, units: list[UnitRead]) -> list[Any]:
    """The shard indexes of ``units``: ranged requests, or whole shards when bytes->bytes
    codecs follow the sharding codec (the index cannot be fetched on its own then)."""
    if source.layout.ranged_reads:
        return source._indexes(units)
    indexes = []
    for unit, blob in zip(units, source.store.get_many([u.key for u in units])):
        if blob is None:
            indexes.append(None)
            continue
        try:
            indexes.append(source._codec_at(unit.coords).index_of(source.pipeline.decode_bytes_stage(blob), unit.key))
        except CodecError as exc:
            raise type(exc)(f"shard {unit.key}: {exc}") from exc
    return indexes
