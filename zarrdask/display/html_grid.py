"""An array cut into its storage units, drawn as SVG: a bar (1-D), a rectangle (2-D) or
an oblique box (3-D and more: the last three axes), each axis labelled with its dimension
name and length. Lines and labels take the text colour of the page (``currentColor``), so
the figure reads on light and dark themes; at most ``MAX_LINES`` grid lines per axis are
drawn (evenly chosen), and the caption says so when lines were left out."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from .kit import esc

__all__ = ["AxisDrawing", "grid_figure"]

#: Grid lines drawn per axis at most (more would be a solid block at this size).
MAX_LINES = 24
#: Longest side of a drawing, in pixels.
SIZE = 150
_FONT = "font-size='11' fill='currentColor' stroke='none'"


class AxisDrawing(NamedTuple):
    """One axis to draw: its label (dimension name or ``axis k``), its length, the unit
    boundaries drawn (``0``, at most ``MAX_LINES`` inner ones, the length) and whether
    some were left out."""

    label: str
    size: int
    lines: tuple[int, ...]
    sampled: bool

    @classmethod
    def of(cls, label: str, size: int, count: int, start: Callable[[int], int]) -> AxisDrawing:
        """``count`` units along ``size``, unit ``k`` starting at ``start(k)``: the inner
        boundaries evenly chosen, and only those asked for (an axis may have billions of
        units)."""
        inner = count - 1
        sampled = inner > MAX_LINES
        step = inner / MAX_LINES
        ks = [1 + int(i * step) for i in range(MAX_LINES)] if sampled else range(1, count)
        return cls(label, size, (0, *map(start, ks), size), sampled)


def _lengths(sizes: Sequence[int]) -> list[float]:
    """Pixel lengths of the axes: the longest gets ``SIZE``; ratios up to 3 are kept,
    larger ones shrink logarithmically (dask's rule), so a thin axis stays visible."""
    longest = max(sizes)
    out = []
    for n in sizes:
        ratio = longest / max(n, 1)
        if ratio > math.e:
            ratio = math.log(min(ratio, 100) + 12.4)
        out.append(SIZE / ratio)
    return out


def _lines(axis: AxisDrawing, length: float) -> list[float]:
    """Pixel offsets of an axis's drawn unit boundaries (both ends included)."""
    total = axis.size or 1
    return [b * length / total for b in axis.lines]


def _label(axis: AxisDrawing) -> str:
    return f"{axis.label}: {axis.size}"


def grid_figure(axes: Sequence[AxisDrawing], caption: str) -> tuple[str, bool]:
    """A ``<figure>`` of the axes' grid with ``caption``; the flag says whether some grid
    lines were left out. Empty when there is nothing to draw (0-d, or an empty axis)."""
    if not axes or any(a.size == 0 for a in axes):
        return "", False
    shown = list(axes[-3:])
    lengths = _lengths([a.size for a in shown])
    grids = [_lines(a, n) for a, n in zip(shown, lengths)]
    sampled = any(a.sampled for a in shown)
    if len(shown) == 1:
        body, width, height = _flat(shown, [12.0, lengths[0]], [[0.0, 12.0], grids[0]], horizontal_only=True)
    elif len(shown) == 2:
        body, width, height = _flat(shown, lengths, grids)
    else:
        body, width, height = _box(shown, lengths, grids)
    hidden = [_label(a) for a in axes[:-3]]
    note = f"; not drawn: {', '.join(hidden)}" if hidden else ""
    note += "; some grid lines left out" if sampled else ""
    svg = (f"<svg width='{width:.0f}' height='{height:.0f}' viewBox='0 0 {width:.0f} {height:.0f}' "
           f"role='img' xmlns='http://www.w3.org/2000/svg'>{body}</svg>")
    return f"<figure>{svg}<figcaption>{esc(caption + note)}</figcaption></figure>", sampled


def _polyline_grid(xs: Sequence[float], ys: Sequence[float], skew: tuple[float, float], origin: tuple[float, float]
                   ) -> str:
    """Grid lines of one face: vertical lines at ``xs``, horizontal ones at ``ys``; a point
    ``(x, y)`` of the face is drawn at ``origin + (x + skew[0]*y, y + skew[1]*x)``."""
    ox, oy = origin

    def at(x: float, y: float) -> str:
        return f"{ox + x + skew[0] * y:.1f},{oy + y + skew[1] * x:.1f}"

    w, h = xs[-1], ys[-1]
    corners = " ".join(at(x, y) for x, y in ((0, 0), (w, 0), (w, h), (0, h)))
    parts = [f"<polygon points='{corners}' fill='var(--zd-fill)' stroke='currentColor' stroke-width='1.5'/>"]
    segments = [(at(x, 0), at(x, h)) for x in xs[1:-1]] + [(at(0, y), at(w, y)) for y in ys[1:-1]]
    parts.extend(f"<polyline points='{a} {b}' fill='none' stroke='currentColor' stroke-width='0.7'/>"
                 for a, b in segments)
    return "".join(parts)


def _flat(axes: Sequence[AxisDrawing], lengths: Sequence[float], lines: Sequence[Sequence[float]], *,
          horizontal_only: bool = False) -> tuple[str, float, float]:
    """A 2-D grid (rows: the first axis, columns: the second); a 1-D array as one row."""
    height, width = lengths
    rows, cols = lines
    body = _polyline_grid(cols, rows, (0.0, 0.0), (4.0, 4.0))
    body += (f"<text x='{4 + width / 2:.1f}' y='{height + 20:.1f}' text-anchor='middle' {_FONT}>"
             f"{esc(_label(axes[-1]))}</text>")
    if not horizontal_only:
        x, y = width + 16, 4 + height / 2
        body += (f"<text x='{x:.1f}' y='{y:.1f}' text-anchor='middle' transform='rotate(-90 {x:.1f} {y:.1f})' "
                 f"{_FONT}>{esc(_label(axes[0]))}</text>")
    return body, width + 24, height + 28


def _box(axes: Sequence[AxisDrawing], lengths: Sequence[float], lines: Sequence[Sequence[float]]
         ) -> tuple[str, float, float]:
    """A 3-D grid: the front face holds the last two axes, the first recedes up and to
    the right at 45 degrees (shortened by half)."""
    depth, height, width = lengths
    d = depth / 2 / math.sqrt(2)
    zs = [z / 2 / math.sqrt(2) for z in lines[0]]
    front = (4.0, 4.0 + d)
    body = _polyline_grid(lines[2], lines[1], (0.0, 0.0), front)
    # top face: x along the last axis, receding along the first
    body += _polyline_grid(lines[2], [-z for z in zs], (-1.0, 0.0), front)
    # side face: receding along the first axis, y along the second
    body += _polyline_grid(zs, lines[1], (0.0, -1.0), (front[0] + width, front[1]))
    body += (f"<text x='{4 + width / 2:.1f}' y='{front[1] + height + 16:.1f}' text-anchor='middle' {_FONT}>"
             f"{esc(_label(axes[2]))}</text>")
    x, y = 4 + width + d + 12, front[1] - d / 2 + height / 2
    body += (f"<text x='{x:.1f}' y='{y:.1f}' text-anchor='middle' transform='rotate(-90 {x:.1f} {y:.1f})' "
             f"{_FONT}>{esc(_label(axes[1]))}</text>")
    x, y = 4 + d / 2 - 5, 4 + d / 2 - 5
    body += (f"<text x='{x:.1f}' y='{y:.1f}' text-anchor='middle' transform='rotate(-45 {x:.1f} {y:.1f})' "
             f"{_FONT}>{esc(_label(axes[0]))}</text>")
    # the slanted label reaches about 2.2 px up and left per character from the edge's middle
    pad = max(0.0, 2.2 * len(_label(axes[0])) - d / 2 + 4)
    return (f"<g transform='translate({pad:.1f} {pad:.1f})'>{body}</g>", width + d + 22 + pad,
            height + d + 24 + pad)
