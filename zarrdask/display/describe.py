"""Descriptions of arrays and groups as tables (``Array.info``, ``Group.info``, the CLI's
``info``), printable as text, HTML or JSON."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..indexing import Selection, basic_selection
from ..metadata.grid import AxisGrid
from .kit import Fact, document, fact_table
from ..storage.base import Store

__all__ = ["DescribedArray", "DescribedGroup", "NodeInfo", "Row", "array_info", "codec_summary", "group_info",
           "storage_rows"]


class DescribedArray(Protocol):
    """What a description reads of an array (``Array``'s public face; this module sits
    below ``nodes/array.py``, which calls it)."""

    @property
    def metadata(self) -> Any: ...
    @property
    def zarr_format(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def chunks(self) -> Any: ...
    @property
    def shards(self) -> Any: ...
    @property
    def unit_grid(self) -> tuple[AxisGrid, ...]: ...
    @property
    def codecs(self) -> list[dict[str, Any]]: ...
    @property
    def dimension_names(self) -> Any: ...
    @property
    def attrs(self) -> Any: ...
    @property
    def store(self) -> Store: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def units(self) -> DescribedUnits: ...


class StoredCounts(Protocol):
    """Chunks stored of those possible (``units.interface.StorageStatistics``)."""

    @property
    def chunks_stored(self) -> int: ...
    @property
    def chunks_total(self) -> int: ...


class DescribedUnits(Protocol):
    """What a description reads of an array's stored units (``units.interface.StoredUnits``)."""

    @property
    def store(self) -> Store: ...
    @property
    def grid(self) -> tuple[AxisGrid, ...]: ...
    def stored_sizes(self) -> dict[str, int]: ...
    def statistics(self, selection: Selection, listed: Iterable[str] | None = None) -> StoredCounts: ...


class DescribedGroup(Protocol):
    """What a description reads of a group."""

    @property
    def zarr_format(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def attrs(self) -> Any: ...
    @property
    def consolidated(self) -> bool: ...
    @property
    def store(self) -> Store: ...
    def members(self, max_depth: int | None = 0) -> Sequence[tuple[str, Any]]: ...


@dataclass(frozen=True)
class Row:
    """One fact: its ``label`` for people, ``key`` and JSON ``value`` for programs, and
    ``text``, how people read the value (``400 B (400)``, ``0 of 10``)."""

    label: str
    key: str
    value: Any
    text: str


@dataclass(frozen=True)
class NodeInfo:
    """Facts about a node; ``str()`` is an aligned text table, :meth:`to_json` the
    documented JSON object (``docs/cli-json.md``): snake_case keys, numbers and JSON values."""

    rows: tuple[Row, ...]

    def to_json(self) -> dict[str, Any]:
        return {row.key: row.value for row in self.rows}

    def __str__(self) -> str:
        width = max(len(row.label) for row in self.rows)
        return "\n".join(f"{row.label:<{width}} : {row.text}" for row in self.rows)

    def __repr__(self) -> str:
        return str(self)

    def to_html(self) -> str:
        """The table as an HTML ``<table>`` (Jupyter shows it for ``a.info``)."""
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(row.label)}</th>"
                       f"<td style='text-align:left'>{html.escape(row.text)}</td></tr>" for row in self.rows)
        return f"<table>{body}</table>"

    def _repr_html_(self) -> str:
        """The table in the displays' style (theme-aware), its text as the fallback."""
        title = next((row.text for row in self.rows if row.key == "path"), "")
        return document("zarrdask info", title, str(self), fact_table(Fact(r.label, r.text) for r in self.rows))


def _row(label: str, key: str, value: Any, text: str | None = None) -> Row:
    value = list(value) if isinstance(value, tuple) else value
    return Row(label, key, value, _text(value) if text is None else text)


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def codec_summary(codecs: list[Any]) -> str:
    """A codec chain in one line: ``sharding_indexed[bytes > zstd] > crc32c``."""
    parts = []
    for codec in codecs:
        if isinstance(codec, str):
            parts.append(codec)
            continue
        if "name" not in codec:  # v2: filters + compressor
            chain = [f["id"] for f in codec.get("filters") or ()]
            if codec.get("compressor"):
                chain.append(codec["compressor"]["id"])
            parts.append(" > ".join(chain) or "none")
            continue
        name = codec["name"]
        if name == "sharding_indexed":
            inner = codec_summary(codec["configuration"]["codecs"])
            index = codec_summary(codec["configuration"]["index_codecs"])
            parts.append(f"sharding_indexed[{inner}; index: {index}]")
        else:
            parts.append(name)
    return " > ".join(parts)


def _bytes(n: int) -> str:
    from dask.utils import format_bytes

    return f"{format_bytes(n)} ({n})"


def array_info(array: DescribedArray, *, storage: bool = False) -> NodeInfo:
    """The array's metadata; with ``storage``, also what is stored (a listing of its keys,
    and for sharded arrays their indexes) and the compression ratio."""
    data_type = array.metadata.data_type.to_json()
    fill = array.metadata.to_json().get("fill_value")  # its JSON form
    rows = [
        _row("Type", "node_type", "array", f"Array (Zarr v{array.zarr_format})"),
        _row("Zarr format", "zarr_format", array.zarr_format),
        _row("Path", "path", array.name),
        _row("Shape", "shape", array.shape),
        _row("Data type", "data_type", data_type, f"{_text(data_type)} ({array.dtype})"),
        _row("Chunk shape", "chunk_shape", _json_shape(array.chunks)),
        _row("Shard shape", "shard_shape", _json_shape(array.shards)),
        _row("Shard grid" if array.shards is not None else "Chunk grid", "unit_grid",
             [axis.count for axis in array.unit_grid]),
        _row("Codecs", "codecs", array.codecs, codec_summary(array.codecs)),
        _row("Dimension names", "dimension_names", array.dimension_names),
        _row("Fill value", "fill_value", fill, _text(fill)),
        _row("Attributes", "attributes", dict(array.attrs), str(len(array.attrs))),
        _row("Store", "store", array.store.url, repr(array.store)),
        _row("Bytes", "bytes", array.nbytes, _bytes(array.nbytes)),
    ]
    if storage:
        rows.extend(storage_rows(array))
    return NodeInfo(tuple(rows))


def storage_rows(array: DescribedArray) -> list[Row]:
    """What is stored: chunks (and shards) stored of those possible, their bytes and the
    compression ratio. Lists the array's keys (and reads sharded arrays' indexes)."""
    rows: list[Row] = []
    units = array.units
    sizes = units.stored_sizes()
    stats = units.statistics(basic_selection(Ellipsis, array.shape)[0], sizes)  # (the same listing)
    rows.append(_row("Chunks stored", "chunks_stored", stats.chunks_stored,
                     f"{stats.chunks_stored} of {stats.chunks_total}"))
    rows.append(_row("Chunks total", "chunks_total", stats.chunks_total))
    if array.shards is not None:
        total = math.prod(axis.count for axis in units.grid)
        rows.append(_row("Shards stored", "shards_stored", len(sizes), f"{len(sizes)} of {total}"))
        rows.append(_row("Shards total", "shards_total", total))
    stored = sum(sizes.values())
    rows.append(_row("Bytes stored", "bytes_stored", stored, _bytes(stored)))
    # the stored share of the array's bytes over the bytes that store it
    part = array.nbytes * stats.chunks_stored / stats.chunks_total if stats.chunks_total else 0
    ratio = round(part / stored, 4) if stored else None
    rows.append(_row("Compression ratio", "compression_ratio", ratio, f"{ratio:.2f}" if stored else "-"))
    return rows


def _json_shape(shape: Any) -> Any:
    """A shape as JSON: a list (of ints, or of extents per dimension for irregular chunks)."""
    return None if shape is None else [list(s) if isinstance(s, tuple) else s for s in shape]


def group_info(group: DescribedGroup) -> NodeInfo:
    members = group.members()
    arrays = sum(1 for _, m in members if m.metadata.node_type == "array")
    return NodeInfo((
        _row("Type", "node_type", "group", f"Group (Zarr v{group.zarr_format})"),
        _row("Zarr format", "zarr_format", group.zarr_format),
        _row("Path", "path", group.name),
        _row("Arrays", "arrays", arrays),
        _row("Groups", "groups", len(members) - arrays),
        _row("Attributes", "attributes", dict(group.attrs), str(len(group.attrs))),
        _row("Consolidated", "consolidated", group.consolidated),
        _row("Store", "store", group.store.url, repr(group.store)),
    ))
