"""Chunk statistics of an array, for the tools: thin functions over the array's stored
units (``Array.units``), which answer them without reading chunk data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.units import StorageStatistics

if TYPE_CHECKING:
    from ..core.array import Array

__all__ = ["StorageStatistics", "storage_statistics", "stored_unit_keys", "unit_keys"]


def unit_keys(array: Array) -> dict[str, tuple[int, ...]]:
    """Every storage unit's key (shard when sharded, else chunk) -> its grid coordinates."""
    return array.units.unit_keys()


def stored_unit_keys(array: Array, keys: Sequence[str] | None = None) -> set[str]:
    """The storage units' keys present in the store (one listing of the array's keys)."""
    return array.units.stored_keys(keys)


def storage_statistics(array: Array, region: Any = Ellipsis) -> StorageStatistics:
    """Which chunks overlapping ``region`` (a basic selection: ints, slices) are stored."""
    return array.storage_statistics(region)
