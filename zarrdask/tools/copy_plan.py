"""What ``copy`` will do, per array, before it does it (``dry_run=True`` returns it): the
layout before and after, stored units (chunks, or shards when sharded) and bytes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..nodes.array import Array
from ..display.describe import codec_summary
from ..storage.base import Store

__all__ = ["ArrayPlan", "CopyPlan", "plan_array"]


def _layout(array: Array) -> dict[str, Any]:
    units = math.prod(axis.count for axis in array.unit_grid)
    return {"zarr_format": array.zarr_format, "chunks": _list(array.chunks), "shards": _list(array.shards),
            "codecs": codec_summary(array.codecs), "units_total": units}


def _list(shape: Any) -> Any:
    return None if shape is None else [list(s) if isinstance(s, tuple) else s for s in shape]


@dataclass(frozen=True)
class ArrayPlan:
    """One array: ``before`` and ``after`` (format, chunks, shards, codecs, the number of
    storage units of the grid); ``bytes_copied``: stored units are copied byte for byte
    (the layout is unchanged), else read and rewritten. ``bytes_stored`` is measured for
    dry runs only (None otherwise)."""

    path: str
    before: dict[str, Any]
    after: dict[str, Any]
    bytes_copied: bool
    source_keys: frozenset[str] = field(repr=False)
    bytes_stored: int | None = None

    @property
    def unchanged(self) -> bool:
        return self.bytes_copied and self.before == self.after

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "action": "copy bytes" if self.bytes_copied else "rewrite",
                "before": dict(self.before, units_stored=len(self.source_keys), bytes_stored=self.bytes_stored),
                "after": dict(self.after, units_stored=len(self.source_keys) if self.bytes_copied else None)}


@dataclass(frozen=True)
class CopyPlan:
    """Every array's :class:`ArrayPlan`, and the number of groups copied."""

    source: str
    target: str
    arrays: list[ArrayPlan]
    groups: int

    @property
    def unchanged(self) -> bool:
        return all(a.unchanged for a in self.arrays)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "groups": self.groups,
                "arrays": [a.to_json() for a in self.arrays]}

    def __str__(self) -> str:
        lines = [f"copy {self.source} -> {self.target}: {len(self.arrays)} array(s), {self.groups} group(s)"]
        for a in self.arrays:
            doc = a.to_json()
            b, f = doc["before"], doc["after"]
            lines.append(f"{a.path or '/'}: {doc['action']}")
            lines.append(f"  before: v{b['zarr_format']} chunks {b['chunks']} shards {b['shards']} {b['codecs']}; "
                         f"{b['units_stored']} of {b['units_total']} unit(s) stored, {b['bytes_stored']} bytes")
            stored = f"{f['units_stored']} of " if f["units_stored"] is not None else "at most "
            lines.append(f"  after:  v{f['zarr_format']} chunks {f['chunks']} shards {f['shards']} {f['codecs']}; "
                         f"{stored}{f['units_total']} unit(s)")
        return "\n".join(lines)


def plan_array(rel: str, array: Array, target: Any, dst: Store, *, bytes_copied: bool, measure: bool) -> ArrayPlan:
    """The plan of one array (``target``: its new metadata, checked against the target store)."""
    units = array.units
    if measure:
        sizes = units.stored_sizes()
        keys, size = frozenset(sizes), sum(sizes.values())
    else:
        keys, size = frozenset(units.stored_keys()), None
    copy = Array(dst, rel, target)
    return ArrayPlan(rel or "/", _layout(array), _layout(copy), bytes_copied=bytes_copied, source_keys=keys,
                     bytes_stored=size)
