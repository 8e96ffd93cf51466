"""Descriptions of arrays and groups as tables (``Array.info``, ``Group.info``, the CLI's
``info``), printable as text, HTML or JSON."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .stats import storage_statistics, stored_unit_keys, unit_keys

if TYPE_CHECKING:
    from ..core.array import Array
    from ..core.group import Group

__all__ = ["NodeInfo", "array_info", "group_info", "codec_summary"]


@dataclass(frozen=True)
class NodeInfo:
    """Named rows describing a node; ``str()`` is an aligned text table."""

    rows: tuple[tuple[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {name: value for name, value in self.rows}

    def __str__(self) -> str:
        width = max(len(name) for name, _ in self.rows)
        return "\n".join(f"{name:<{width}} : {_text(value)}" for name, value in self.rows)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(name)}</th>"
                       f"<td style='text-align:left'>{html.escape(_text(value))}</td></tr>" for name, value in self.rows)
        return f"<table>{body}</table>"


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


def array_info(array: Array, storage: bool = False) -> NodeInfo:
    """The array's metadata; with ``storage``, also what is stored (a listing of its keys,
    and for sharded arrays their indexes) and the compression ratio."""
    rows: list[tuple[str, Any]] = [
        ("Type", f"Array (Zarr v{array.zarr_format})"),
        ("Path", array.name),
        ("Shape", array.shape),
        ("Data type", f"{_text(array.metadata.data_type.to_json())} ({array.dtype})"),
        ("Chunk shape", array.chunks),
        ("Shard shape", array.shards),
        ("Shard grid" if array.shards is not None else "Chunk grid", tuple(axis.count for axis in array.unit_grid)),
        ("Codecs", codec_summary(array.codecs)),
        ("Dimension names", array.dimension_names),
        ("Fill value", _text(array.metadata.to_json().get("fill_value"))),  # its JSON form
        ("Attributes", len(array.attrs)),
        ("Store", repr(array.store)),
        ("Bytes", _bytes(array.nbytes)),
    ]
    if storage:
        stats = storage_statistics(array)
        keys = stored_unit_keys(array)
        rows.append(("Chunks stored", f"{stats.chunks_stored} of {stats.chunks_total}"))
        if array.shards is not None:
            rows.append(("Shards stored", f"{len(keys)} of {len(unit_keys(array))}"))
        store = array._source.store
        stored = sum(store.size(k) or 0 for k in keys)
        rows.append(("Bytes stored", _bytes(stored)))
        # the stored share of the array's bytes over the bytes that store it
        part = array.nbytes * stats.chunks_stored / stats.chunks_total if stats.chunks_total else 0
        rows.append(("Compression ratio", f"{part / stored:.2f}" if stored else "-"))
    return NodeInfo(tuple(_json_value(r) for r in rows))


def _json_value(row: tuple[str, Any]) -> tuple[str, Any]:
    name, value = row
    return name, list(value) if isinstance(value, tuple) else value


def group_info(group: Group) -> NodeInfo:
    members = group.members()
    arrays = sum(1 for _, m in members if m.metadata.node_type == "array")
    return NodeInfo((
        ("Type", f"Group (Zarr v{group.zarr_format})"),
        ("Path", group.name),
        ("Arrays", arrays),
        ("Groups", len(members) - arrays),
        ("Attributes", len(group.attrs)),
        ("Consolidated", group.consolidated),
        ("Store", repr(group.store)),
    ))
