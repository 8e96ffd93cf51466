"""Jupyter representations of arrays and groups, in the style of xarray's: a header
(name, dimensions, data type), folding sections (metadata, codecs, attributes, what is
stored), the array cut into shards and a shard into chunks drawn to scale with dimension
names on the axes; a group's members as a tree whose first level is open and whose
subgroups open on click. The parts (stylesheet, sections, tables) are ``display/kit.py``'s."""

from __future__ import annotations

import math
from typing import Any

from ..metadata.grid import AxisGrid, ceil_div
from .kit import Fact, attributes_list, document, esc, fact_table, section, short_json, toggle
from .describe import DescribedArray, DescribedGroup, array_info, codec_summary, group_info, storage_rows
from .html_grid import AxisDrawing, grid_figure

__all__ = ["array_html", "group_html"]

#: Stored units up to which a local array's display counts what is stored (listing its
#: keys, reading shard indexes); beyond, or on a remote store, ``info_complete()`` does.
CHEAP_UNITS = 4096
#: Attributes up to which the attributes section is shown open.
OPEN_ATTRIBUTES = 25
#: Members a group's display lists at most.
MAX_MEMBERS = 500
#: Metadata rows the array display leaves to its header and other sections.
_ELSEWHERE = {"node_type", "path", "codecs", "attributes"}


def _dimension_labels(array: DescribedArray) -> list[str]:
    names = array.dimension_names or (None,) * len(array.shape)
    return [name if name is not None else f"axis {k}" for k, name in enumerate(names)]


def _dims_html(labels: list[str], shape: tuple[int, ...]) -> str:
    items = "".join(f"<li><b>{esc(label)}</b>: {n}</li>" for label, n in zip(labels, shape))
    return f"<ul class='zd-dims'>{items}</ul>"


def _extent(unit: Any) -> int:
    """One axis of a chunk or shard shape (the largest extent of an irregular one)."""
    return max(unit) if isinstance(unit, tuple) else int(unit)


def _figures(array: DescribedArray, labels: list[str]) -> str:
    """The array cut into its storage units and, when sharded, one shard into its chunks."""
    unit = "shards" if array.shards is not None else "chunks"
    shape_of_unit = array.shards if array.shards is not None else array.chunks
    axes = [_grid_axis(label, n, axis) for label, n, axis in zip(labels, array.shape, array.unit_grid)]
    figures = [grid_figure(axes, f"array in {unit} {tuple(shape_of_unit)}, one key each")[0]]
    if array.shards is not None:
        shard = [_extent(s) for s in array.shards]
        inner = [_extent(c) for c in array.chunks]
        axes = [_cut_axis(label, s, c) for label, s, c in zip(labels, shard, inner)]
        figures.append(grid_figure(axes, f"one shard {tuple(shard)} in chunks {tuple(array.chunks)}")[0])
    return "".join(figures)


def _grid_axis(label: str, size: int, axis: AxisGrid) -> AxisDrawing:
    """An axis of the array cut into its storage units."""
    return AxisDrawing.of(label, size, axis.count, lambda k: axis.bounds(k)[0])


def _cut_axis(label: str, size: int, step: int) -> AxisDrawing:
    """An axis of ``size`` cut into units of ``step`` (the last one shorter)."""
    return AxisDrawing.of(label, size, ceil_div(size, step) if step > 0 else 1, lambda k: k * step)


def _codec_rows(codecs: list[Any], prefix: str = "") -> list[Fact]:
    """Each codec's configuration (the chain itself is the section's one line)."""
    facts = []
    for k, codec in enumerate(codecs):
        if isinstance(codec, str):
            facts.append(Fact(f"{prefix}{codec}", "{}"))
        elif "name" not in codec:  # v2: filters + compressor
            facts.extend(Fact(f"{prefix}filter", short_json(f)) for f in codec.get("filters") or ())
            facts.append(Fact(f"{prefix}compressor", short_json(codec.get("compressor"))))
        elif codec["name"] == "sharding_indexed":
            config = dict(codec.get("configuration", {}))
            inner, index = config.pop("codecs", []), config.pop("index_codecs", [])
            facts.append(Fact(f"{prefix}sharding_indexed", short_json(config)))
            facts.extend(_codec_rows(inner, f"{prefix}\u2003chunk: "))
            facts.extend(_codec_rows(index, f"{prefix}\u2003index: "))
        else:
            facts.append(Fact(f"{prefix}{codec['name']}", short_json(codec.get("configuration", {}))))
    return facts


def _storage_section(array: DescribedArray) -> str:
    units = math.prod(axis.count for axis in array.unit_grid)
    if not array.store.is_local or units > CHEAP_UNITS:
        reason = "a remote store" if not array.store.is_local else f"{units} stored units"
        body = f"<div class='zd-empty'>not counted for {esc(reason)}: Array.info_complete() lists the keys</div>"
        return section("Storage", body, open=False)
    rows = [Fact(row.label, row.text) for row in storage_rows(array) if not row.key.endswith("_total")]
    return section("Storage", fact_table(rows), open=True)


def array_html(array: DescribedArray) -> str:
    """The array as one HTML block: header, sections and grid figures."""
    info = array_info(array)
    labels = _dimension_labels(array)
    attrs = dict(array.attrs)
    sections = "".join((
        section("Metadata", fact_table(Fact(r.label, r.text) for r in info.rows if r.key not in _ELSEWHERE)),
        section("Codecs", fact_table(_codec_rows(array.codecs)), open=False, preview=codec_summary(array.codecs)),
        section("Attributes", attributes_list(attrs), open=len(attrs) <= OPEN_ATTRIBUTES, count=len(attrs)),
        _storage_section(array),
    ))
    header = (_dims_html(labels, array.shape) + f"<span class='zd-note'>{esc(array.dtype)}</span>"
              f"<span class='zd-note'>Zarr v{array.zarr_format}</span>")
    body = (f"<div class='zd-main'><div class='zd-sections'>{sections}</div>"
            f"<div class='zd-figures'>{_figures(array, labels)}</div></div>")
    return document("zarrdask.Array", array.name, f"{array!r}\n{info}", body, header_extra=header)


def _member_html(key: str, node: Any, children: dict[str, list[tuple[str, Any]]]) -> str:
    """One member: an array as a line (name, dimensions, data type), a group as a folded
    entry whose members show on click."""
    name = key.rsplit("/", 1)[-1]
    if node.metadata.node_type == "array":
        dims = _dims_html(_dimension_labels(node), node.shape)
        return (f"<li data-member='{esc(key)}' data-node='array'><span class='zd-leaf'>{esc(name)}{dims}"
                f"<span class='zd-node-note'>{esc(node.dtype)}</span></span></li>")
    below = children.get(key, [])
    label = f"{esc(name)}/<span class='zd-node-note'>{len(below)} members</span>"
    inner = "<ul class='zd-tree'>" + "".join(_member_html(k, n, children) for k, n in below) + "</ul>"
    return f"<li data-member='{esc(key)}' data-node='group'>{toggle(label, inner, open=False, kind='group')}</li>"


def _members(group: DescribedGroup) -> tuple[str, str]:
    """The members section, and the same hierarchy as indented text (the fallback)."""
    found = list(group.members(max_depth=None))
    shown = sorted(found[:MAX_MEMBERS], key=lambda item: item[0])
    children: dict[str, list[tuple[str, Any]]] = {}
    for key, node in shown:
        children.setdefault(key.rsplit("/", 1)[0] if "/" in key else "", []).append((key, node))
    top = children.get("", [])
    items = "".join(_member_html(key, node, children) for key, node in top)
    note = ""
    if len(found) > MAX_MEMBERS:
        note = (f"<div class='zd-empty'>the first {MAX_MEMBERS} of {len(found)} members below this group; "
                "Group.tree(level=...) lists more</div>")
    body = f"<ul class='zd-tree'>{items}</ul>{note}" if top else "<div class='zd-empty'>no members</div>"
    lines = []
    for key, node in shown:
        indent = "    " * key.count("/")
        name = key.rsplit("/", 1)[-1]
        lines.append(f"{indent}{name} {node.shape} {node.dtype}" if node.metadata.node_type == "array"
                     else f"{indent}{name}/")
    return section("Members", body, count=len(top)), "\n".join(lines)


def group_html(group: DescribedGroup) -> str:
    """The group as one HTML block: its members (first level open), attributes, facts."""
    info = group_info(group)
    attrs = dict(group.attrs)
    members, text = _members(group)
    body = "".join((
        members,
        section("Attributes", attributes_list(attrs), open=len(attrs) <= OPEN_ATTRIBUTES, count=len(attrs)),
        section("Metadata", fact_table(Fact(r.label, r.text) for r in info.rows
                                       if r.key not in {"node_type", "path", "attributes"}), open=False),
    ))
    header = f"<span class='zd-note'>Zarr v{group.zarr_format}</span>"
    return document("zarrdask.Group", group.name, f"{group!r}\n{text}", body, header_extra=header)
