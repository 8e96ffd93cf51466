"""The public, typed face of an array's stored units (chunks, or shards of inner chunks).

``Array``, the read planner's callers, the Dask layer and the tools know an array's storage
only through :class:`StoredUnits`; the two implementations (``chunks.py``, ``shards.py``)
own everything about the bytes behind it. Results cross the boundary as named records.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, Union

import numpy as np

from ...codecs.base import ChunkSpec
from ...codecs.protocol import ChunkPipeline
from ...indexing import Selection
from ...metadata.grid import AxisGrid
from ...plan.fetch_plan import ReadPlan
from ...storage.base import Store

__all__ = ["StorageStatistics", "StoredUnits", "UnitShape"]

#: a unit's shape on a regular grid, else every unit's extents per dimension (rectilinear)
UnitShape = Union[tuple[int, ...], tuple[tuple[int, ...], ...]]


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


class StoredUnits(Protocol):
    """An array's stored units: one key each, laid over the array as ``grid``.

    ``read_shape``: the region one decode yields (the inner chunk when sharded) and
    ``shards``: the shard shape when the units are shards, else None (see :data:`UnitShape`)."""

    @property
    def store(self) -> Store: ...

    @property
    def path(self) -> str: ...

    @property
    def grid(self) -> tuple[AxisGrid, ...]: ...

    @property
    def spec(self) -> ChunkSpec: ...

    @property
    def pipeline(self) -> ChunkPipeline: ...

    @property
    def read_shape(self) -> UnitShape: ...

    @property
    def shards(self) -> UnitShape | None: ...

    def key(self, coords: tuple[int, ...]) -> str:
        """The store key of the unit at ``coords``."""

    def plan(self, selection: Selection) -> ReadPlan:
        """The plan of reading ``selection`` (pure: nothing is read)."""

    def read(self, selection: Selection, out: np.ndarray) -> None:
        """Read ``selection`` into ``out`` (C-contiguous, the selection's shape)."""

    def write(self, selection: Selection, values: np.ndarray) -> None:
        """Write ``values`` (the selection's shape) over ``selection``."""

    def check_region(self, region: tuple[slice, ...]) -> None:
        """Refuse (UnguardedWriteError) a write of ``region`` (step-1 slices) that would cover
        part of a unit the store cannot guard, as ``write`` would, before a graph of many
        writes stores anything."""

    def delete(self, coords: Iterable[tuple[int, ...]]) -> None:
        """Remove the units at ``coords`` from the store (and from any cache of them)."""

    def coords_of(self, key: str) -> tuple[int, ...] | None:
        """The grid coordinates of the unit whose key is ``key``, None for any other key (a
        document, an orphan): read back through the key encoding, so a listing costs work
        per key listed, not per unit of the grid."""

    def stored_keys(self) -> set[str]:
        """The units' keys present in the store; one listing."""

    def stored_sizes(self) -> dict[str, int]:
        """The units' keys present in the store, with their sizes in bytes; one listing
        (with sizes, where the store lists them: ``Store.list_sizes``)."""

    def statistics(self, selection: Selection, listed: Iterable[str] | None = None) -> StorageStatistics:
        """Which chunks overlapping ``selection`` are stored (sharded: the stored shards'
        indexes read, no chunk data); one listing (or ``listed``, the keys of one the caller
        made), and work per unit stored, not per unit of the grid."""

    def check_unit(self, coords: tuple[int, ...]) -> str | None:
        """Read the unit at ``coords`` whole through the read path: None when it decodes
        (checksums, index bounds), else what is wrong."""

    @property
    def carries_checksum(self) -> bool:
        """Every stored chunk's data passes a checksummed codec (so a check sees flipped bytes)."""
