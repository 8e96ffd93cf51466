"""Jupyter representations: an array's metadata table, its shard and chunk grids drawn to
scale (dask's SVG of a chunked array) and its codec chain; a group's table and tree."""

from __future__ import annotations

import html
from typing import Any, Protocol

from .describe import DescribedArray, DescribedGroup, array_info, codec_summary, group_info

__all__ = ["DrawnGroup", "array_html", "group_html"]


class DrawnGroup(DescribedGroup, Protocol):
    """A group as drawn: its description and its hierarchy."""

    def tree(self) -> str: ...


_STYLE = "display:flex;gap:2em;align-items:flex-start;flex-wrap:wrap"


def _grid_svg(array: DescribedArray, unit: Any, title: str) -> str:
    """A figure of the array cut into ``unit`` (a shape or dask-style extents), to scale."""
    from dask.array.core import normalize_chunks
    from dask.array.svg import svg

    if not array.shape or 0 in array.shape:
        return ""
    chunks = normalize_chunks(unit, array.shape)
    try:
        picture = svg(chunks, size=160)
    except (NotImplementedError, ValueError):  # (dask draws at most a few dims / lines)
        return ""
    return f"<figure style='margin:0'>{picture}<figcaption>{html.escape(title)}</figcaption></figure>"


def array_html(array: DescribedArray) -> str:
    """The array's table, grid pictures and codec chain as one HTML block."""
    figures = []
    if array.shards is not None:
        figures.append(_grid_svg(array, array.shards, f"shards {array.shards} (one key each)"))
    figures.append(_grid_svg(array, array.chunks, f"chunks {array.chunks}"))
    codecs = html.escape(codec_summary(array.codecs))
    return (f"<div><strong>zarrdask.Array {html.escape(array.name)}</strong>"
            f"<div style='{_STYLE}'>{array_info(array).to_html()}{''.join(figures)}</div>"
            f"<div>codecs: <code>{codecs}</code></div></div>")


def group_html(group: DrawnGroup) -> str:
    """The group's table and its hierarchy."""
    tree = html.escape(group.tree())
    return (f"<div><strong>zarrdask.Group {html.escape(group.name)}</strong>"
            f"<div style='{_STYLE}'>{group_info(group).to_html()}<pre>{tree}</pre></div></div>")
