"""Chunk grids and chunk key encodings: pure integer geometry and key strings.

Both are v3 extension points with a registry a user can extend:
``register_chunk_grid(name, factory)`` and ``register_chunk_key_encoding(name, factory)``
(also through the entry-point groups ``zarrdask.chunk_grids`` /
``zarrdask.chunk_key_encodings``).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Protocol, cast

import numpy as np

from ..errors import MetadataError, Problem, UnknownExtensionError
from ..keywords import did_you_mean
from .extension import NamedConfig

__all__ = [
    "AxisGrid",
    "RectilinearChunkGrid",
    "RegularAxis",
    "RegularChunkGrid",
    "VariableAxis",
    "all_chunk_coords",
    "as_axes",
    "ceil_div",
    "chunks_outside",
    "cut_at_lines",
    "edges",
    "largest_extent",
    "regular_axis",
    "chunk_of",
    "check_shape",
    "chunk_slices",
    "grid_shape",
    "stored_shape",
    "ChunkGrid",
    "ChunkKeyEncoding",
    "DefaultKeyEncoding",
    "V2KeyEncoding",
    "decimal_coords",
    "parse_chunk_grid",
    "parse_chunk_key_encoding",
    "register_chunk_grid",
    "register_chunk_key_encoding",
]

Loc = tuple[str | int, ...]


def ceil_div(n: int, d: int) -> int:
    """``ceil(n / d)`` for non-negative integers, exact at any size."""
    return -(-n // d)


class AxisGrid(Protocol):
    """One dimension of a chunk grid laid over an array's extent ``size``: ``count`` chunks,
    chunk ``k`` covering ``[bounds(k)[0], bounds(k)[1])`` (clipped to the array) and stored
    with ``stored(k)`` elements along this axis (a regular grid pads its edge chunk)."""

    @property
    def size(self) -> int: ...

    @property
    def count(self) -> int: ...

    def bounds(self, k: int) -> tuple[int, int]: ...

    def overlapping(self, start: int, stop: int) -> list[tuple[int, int, int]]:
        """``(k, lo, hi)`` of every chunk meeting ``[start, stop)`` (``start < stop``), in
        order: one call per selection and dimension, however many chunks it meets."""

    def stored(self, k: int) -> int: ...

    def index_of(self, i: int) -> int:
        """The chunk holding index ``i`` (``0 <= i < size``)."""

    def index_of_array(self, indices: np.ndarray) -> np.ndarray: ...

    def extents(self) -> tuple[int, ...]:
        """Every chunk's extent inside the array, dask-style (``(0,)`` for an empty axis)."""


@dataclass(frozen=True, slots=True)
class RegularAxis:
    """Chunks of ``step`` elements; the last one is cut by the array's edge."""

    size: int
    step: int

    @property
    def count(self) -> int:
        return ceil_div(self.size, self.step)

    def bounds(self, k: int) -> tuple[int, int]:
        lo = k * self.step
        return lo, min(lo + self.step, self.size)

    def overlapping(self, start: int, stop: int) -> list[tuple[int, int, int]]:
        step, size = self.step, self.size
        first, last = start // step, (stop - 1) // step
        if first == last:  # (one chunk: most parts of a small read)
            lo = first * step
            return [(first, lo, min(lo + step, size))]
        return [(k, k * step, min(k * step + step, size)) for k in range(first, last + 1)]

    def stored(self, k: int) -> int:
        return self.step

    def index_of(self, i: int) -> int:
        return i // self.step

    def index_of_array(self, indices: np.ndarray) -> np.ndarray:
        return indices // self.step

    def extents(self) -> tuple[int, ...]:
        if self.size == 0:
            return (0,)
        whole, rest = divmod(self.size, self.step)
        return (self.step,) * whole + ((rest,) if rest else ())


@dataclass(frozen=True, slots=True)
class RegularChunkGrid:
    """A grid of equal chunks; the last chunk along a dimension may run past the edge."""

    chunk_shape: tuple[int, ...]

    def axes(self, shape: Sequence[int]) -> tuple[RegularAxis, ...]:
        """The grid laid over an array of ``shape``, one :class:`AxisGrid` per dimension."""
        return cast("tuple[RegularAxis, ...]", _as_axes(self.chunk_shape, tuple(shape)))

    def to_json(self) -> dict[str, Any]:
        return {"name": "regular", "configuration": {"chunk_shape": list(self.chunk_shape)}}


@dataclass(frozen=True, slots=True)
class VariableAxis:
    """Chunks of the given lengths (``edges``: 0, then each chunk's end); chunks may run
    past the array's edge, and those wholly past it are not part of the grid."""

    size: int
    edges: tuple[int, ...]

    @property
    def count(self) -> int:
        return bisect.bisect_left(self.edges, self.size) if self.size else 0

    def bounds(self, k: int) -> tuple[int, int]:
        return self.edges[k], min(self.edges[k + 1], self.size)

    def overlapping(self, start: int, stop: int) -> list[tuple[int, int, int]]:
        first, last = self.index_of(start), self.index_of(stop - 1)
        return [(k, *self.bounds(k)) for k in range(first, last + 1)]

    def stored(self, k: int) -> int:
        return self.edges[k + 1] - self.edges[k]

    def index_of(self, i: int) -> int:
        return bisect.bisect_right(self.edges, i) - 1

    def index_of_array(self, indices: np.ndarray) -> np.ndarray:
        return np.searchsorted(np.asarray(self.edges), indices, side="right") - 1

    def extents(self) -> tuple[int, ...]:
        if not self.size:
            return (0,)
        return tuple(hi - lo for lo, hi in map(self.bounds, range(self.count)))


@dataclass(frozen=True, slots=True)
class RectilinearChunkGrid:
    """The ``rectilinear`` chunk grid (zarr-extensions): per dimension, a chunk length
    repeated over the array, or explicit lengths (run-length pairs ``[length, count]``
    allowed). ``chunk_shapes`` keeps the JSON form."""

    chunk_shapes: tuple[Any, ...]

    def axes(self, shape: Sequence[int]) -> tuple[VariableAxis, ...]:
        return tuple(_variable_axis(spec, int(n), d) for d, (spec, n) in enumerate(zip(self.chunk_shapes, shape)))

    def to_json(self) -> dict[str, Any]:
        return {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": list(self.chunk_shapes)}}

    @classmethod
    def from_extents(cls, chunks: Sequence[Sequence[int]]) -> RectilinearChunkGrid:
        """The grid of dask-style chunks (run-length encoded where lengths repeat)."""
        return cls(tuple(_run_length(axis) for axis in chunks))


def _run_length(lengths: Sequence[int]) -> Any:
    if len(set(lengths)) == 1 and len(lengths) > 0:
        return [[int(lengths[0]), len(lengths)]] if len(lengths) > 1 else [int(lengths[0])]
    out: list[Any] = []
    for value, run in itertools.groupby(lengths):
        n = len(list(run))
        out.append([int(value), n] if n > 1 else int(value))
    return out


@lru_cache(maxsize=1024)
def _variable_axis_cached(spec: Any, size: int) -> tuple[int, ...]:
    if isinstance(spec, int):
        lengths = [spec] * max(1, ceil_div(size, spec))
    else:
        lengths = []
        for item in spec:
            lengths.extend([item[0]] * item[1] if isinstance(item, tuple) else [item])
    return tuple(itertools.accumulate(lengths, initial=0))


def _variable_axis(spec: Any, size: int, dim: int) -> VariableAxis:
    frozen = spec if isinstance(spec, int) else tuple(tuple(i) if isinstance(i, list) else i for i in spec)
    edges = _variable_axis_cached(frozen, size)
    if edges[-1] < size:
        raise MetadataError([Problem(("chunk_grid", "configuration", "chunk_shapes", dim),
                                     f"chunk lengths sum to {edges[-1]}, less than the array's extent {size}")])
    return VariableAxis(size, edges)


def as_axes(grid: Sequence[int | AxisGrid], shape: Sequence[int]) -> tuple[AxisGrid, ...]:
    """A grid's axes over ``shape``; a plain chunk shape is a regular grid."""
    if not any([isinstance(g, (int, np.integer)) for g in grid]):  # (axes already: no lookup)
        return tuple(grid)  # type: ignore[arg-type]
    return _as_axes(tuple(grid), tuple(shape))


@lru_cache(maxsize=1024)
def _as_axes(grid: tuple[int | AxisGrid, ...], shape: tuple[int, ...]) -> tuple[AxisGrid, ...]:
    return tuple(RegularAxis(int(n), int(g)) if isinstance(g, (int, np.integer)) else g for g, n in zip(grid, shape))


@lru_cache(maxsize=1024)
def regular_axis(size: int, step: int) -> RegularAxis:
    """The regular axis of ``step`` over ``size`` elements, made once (a shard's inner grid
    along one dimension: a read of a few inner chunks lays one over each shard part)."""
    return RegularAxis(size, step)


def largest_extent(axis: AxisGrid) -> int:
    """The longest chunk's extent inside the array (0 on an empty axis): a regular axis's
    first chunk, without listing the others (an axis may have billions)."""
    return axis.bounds(0)[1] if isinstance(axis, RegularAxis) else max(axis.extents())


def edges(axis: AxisGrid) -> tuple[int, ...]:
    """The grid lines of an axis: ``0``, every chunk boundary, and the array's extent."""
    return tuple(itertools.accumulate(axis.extents(), initial=0)) if axis.size else (0,)


def cut_at_lines(axis: AxisGrid, start: int, stop: int) -> tuple[int, ...]:
    """``[start, stop)`` cut at the axis's grid lines (dask-style extents; ``(0,)`` when empty)."""
    if stop <= start:
        return (0,)
    lines = [e for e in edges(axis) if start < e < stop]
    return tuple(b - a for a, b in zip([start, *lines], [*lines, stop]))


def grid_shape(axes: Sequence[AxisGrid]) -> tuple[int, ...]:
    """The number of chunks along each dimension."""
    return tuple(a.count for a in axes)


def chunk_slices(axes: Sequence[AxisGrid], coords: Sequence[int]) -> tuple[slice, ...]:
    """The region of the array chunk ``coords`` covers (clipped to the array)."""
    return tuple(slice(*a.bounds(k)) for a, k in zip(axes, coords))


def stored_shape(axes: Sequence[AxisGrid], coords: Sequence[int]) -> tuple[int, ...]:
    """The shape chunk ``coords`` is stored with (what its codecs see)."""
    return tuple([a.stored(k) for a, k in zip(axes, coords)])


def chunk_of(axes: Sequence[AxisGrid], index: Sequence[int]) -> tuple[int, ...]:
    """The chunk holding the element at ``index``."""
    return tuple(a.index_of(i) for a, i in zip(axes, index))


def all_chunk_coords(axes: Sequence[AxisGrid]) -> Iterator[tuple[int, ...]]:
    """Every chunk's coordinates, in C order."""
    return itertools.product(*(range(a.count) for a in axes))


def chunks_outside(old: Sequence[AxisGrid], new: Sequence[AxisGrid]) -> Iterator[tuple[int, ...]]:
    """The coordinates of ``old``'s chunks that ``new`` (the grid after a resize) does not
    have, each once: for each dimension, the chunks past its new count whose coordinates
    in the dimensions before it are within theirs. Only those are visited (a shrink of a
    long array lists the chunks it drops, not all of them), and none if any dimension has
    no chunk."""
    kept = [min(a.count, o.count) for a, o in zip(new, old)]
    for d, axis in enumerate(old):
        ranges = [*(range(n) for n in kept[:d]), range(kept[d], axis.count),
                  *(range(o.count) for o in old[d + 1:])]
        if all(ranges):
            yield from itertools.product(*ranges)


def _positive_int_list(value: Any, n: int, loc: Loc, problems: list[Problem], allow_zero: bool = False) -> bool:
    if type(value) is list and len(value) == n:  # the common, valid case, checked cheaply
        for v in value:
            if type(v) is not int or not 1 <= v <= MAX_EXTENT:
                break
        else:
            return True
    if not isinstance(value, (list, tuple)) or not all(type(v) is int or (isinstance(v, int) and not isinstance(v, bool))
                                                      for v in value):
        problems.append(Problem(loc, f"expected a list of integers, got {value!r}"))
        return False
    if len(value) != n:
        problems.append(Problem(loc, f"expected {n} entries (one per dimension), got {len(value)}"))
        return False
    low = 0 if allow_zero else 1
    if any(not low <= v <= MAX_EXTENT for v in value):
        problems.append(Problem(loc, f"expected integers from {low} to 2**63 - 1, got {list(value)}"))
        return False
    return True


#: the largest extent (and chunk length) numpy can index: shapes are checked against it
MAX_EXTENT = 2**63 - 1
#: numpy's most dimensions
MAX_NDIM = 64


def check_shape(value: Any, loc: Loc, problems: list[Problem]) -> tuple[int, ...] | None:
    """An array's shape: at most ``MAX_NDIM`` integers in ``[0, MAX_EXTENT]``, else a problem."""
    if not isinstance(value, list) or not all(type(v) is int and 0 <= v <= MAX_EXTENT for v in value):
        problems.append(Problem(loc, f"expected a list of integers from 0 to 2**63 - 1, got {value!r}"))
        return None
    if len(value) > MAX_NDIM:
        problems.append(Problem(loc, f"expected at most {MAX_NDIM} dimensions, got {len(value)}"))
        return None
    return tuple(value)


def _regular(config: Mapping[str, Any], ndim: int, loc: Loc, problems: list[Problem]) -> RegularChunkGrid | None:
    shape = config.get("chunk_shape")
    if not _positive_int_list(shape, ndim, (*loc, "configuration", "chunk_shape"), problems) or not _only(
            config, {"chunk_shape"}, loc, problems):
        return None
    key = tuple(shape or ())
    grid = _SHARED_GRIDS.get(key)
    if grid is None:
        grid = RegularChunkGrid(key)
        if len(_SHARED_GRIDS) < 1024:
            _SHARED_GRIDS[key] = grid
    return grid


#: grids are immutable: the arrays of a dataset share one per chunk shape
_SHARED_GRIDS: dict[tuple[int, ...], RegularChunkGrid] = {}


class ChunkGrid(Protocol):
    """A parsed ``chunk_grid``: laid over an array's shape, one :class:`AxisGrid` per dimension."""

    def axes(self, shape: Sequence[int]) -> tuple[AxisGrid, ...]: ...

    def to_json(self) -> dict[str, Any]: ...


class ChunkKeyEncoding(Protocol):
    """A parsed ``chunk_key_encoding``. The built-in ones (and any registered one that
    defines it) also have ``decode(key, ndim)``: the coordinates ``key`` encodes, or None
    when ``encode`` gives no such key for ``ndim`` dimensions (a document, an orphan, a
    non-canonical spelling such as ``c/01``). Without it, finding the stored chunks among a
    listing walks every key of the grid."""

    def encode(self, coords: Sequence[int]) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


def decimal_coords(parts: Sequence[str]) -> tuple[int, ...] | None:
    """``parts`` as coordinates when each is a decimal number spelled as ``str(int)``
    spells it (ASCII digits, no sign, no leading zero), else None: the inverse of the
    encodings' ``map(str, coords)``."""
    for part in parts:
        if not (part.isascii() and part.isdigit()) or (part[0] == "0" and len(part) > 1):
            return None
    return tuple(map(int, parts))


@dataclass(frozen=True, slots=True)
class DefaultKeyEncoding:
    """``c/1/2`` (or ``c.1.2``); a 0-d array's only chunk is ``c``."""

    separator: str = "/"

    def encode(self, coords: Sequence[int]) -> str:
        return self.separator.join(["c", *map(str, coords)])

    def decode(self, key: str, ndim: int) -> tuple[int, ...] | None:
        parts = key.split(self.separator)
        return decimal_coords(parts[1:]) if parts[0] == "c" and len(parts) == ndim + 1 else None

    def to_json(self) -> dict[str, Any]:
        return {"name": "default", "configuration": {"separator": self.separator}}


@dataclass(frozen=True, slots=True)
class V2KeyEncoding:
    """``1.2`` (or ``1/2``); a 0-d array's only chunk is ``0``."""

    separator: str = "."

    def encode(self, coords: Sequence[int]) -> str:
        return self.separator.join(map(str, coords)) if len(coords) else "0"

    def decode(self, key: str, ndim: int) -> tuple[int, ...] | None:
        if not ndim:
            return () if key == "0" else None
        parts = key.split(self.separator)
        return decimal_coords(parts) if len(parts) == ndim else None

    def to_json(self) -> dict[str, Any]:
        return {"name": "v2", "configuration": {"separator": self.separator}}


def _key_encoding(cls: type, default: str) -> Callable[[Mapping[str, Any], Loc, list[Problem]], Any]:
    def make(config: Mapping[str, Any], loc: Loc, problems: list[Problem]) -> Any:
        sep = config.get("separator", default)
        if sep not in ("/", "."):
            problems.append(Problem((*loc, "configuration", "separator"), f"expected '/' or '.', got {sep!r}"))
            return None
        return shared[sep] if _only(config, {"separator"}, loc, problems) else None

    shared = {sep: cls(sep) for sep in ("/", ".")}  # immutable: one instance per separator
    return make


def _rectilinear(config: Mapping[str, Any], ndim: int, loc: Loc, problems: list[Problem]) -> RectilinearChunkGrid | None:
    where = (*loc, "configuration")
    if config.get("kind") != "inline":
        problems.append(Problem((*where, "kind"), f"expected 'inline', got {config.get('kind')!r}"))
        return None
    shapes = config.get("chunk_shapes")
    if not isinstance(shapes, list) or len(shapes) != ndim:
        problems.append(Problem((*where, "chunk_shapes"), f"expected a list of {ndim} entries (one per dimension), "
                                                          f"got {shapes!r}"))
        return None
    ok = True
    for d, spec in enumerate(shapes):
        if _positive(spec):
            continue
        if isinstance(spec, list) and spec and all(
            _positive(item) or (isinstance(item, list) and len(item) == 2 and all(map(_positive, item)))
            for item in spec
        ):
            continue
        problems.append(Problem((*where, "chunk_shapes", d), "expected a positive integer, or a non-empty list of "
                                                             f"positive integers and [length, count] pairs, got {spec!r}"))
        ok = False
    ok = _only(config, {"kind", "chunk_shapes"}, loc, problems) and ok
    return RectilinearChunkGrid(tuple(shapes)) if ok else None


def _only(config: Mapping[str, Any], known: set[str], loc: Loc, problems: list[Problem]) -> bool:
    """No configuration field beyond ``known`` (as zarr-python and TensorStore refuse them)."""
    extra = set(config) - known
    if extra:
        problems.append(Problem((*loc, "configuration"), f"unexpected fields {sorted(extra)}; "
                                                         f"expected only {sorted(known)}"))
    return not extra


def _positive(value: Any) -> bool:
    return type(value) is int and 1 <= value <= MAX_EXTENT


_GRIDS: dict[str, Callable[..., Any]] = {"regular": _regular, "rectilinear": _rectilinear}
_KEY_ENCODINGS: dict[str, Callable[..., Any]] = {
    "default": _key_encoding(DefaultKeyEncoding, "/"),
    "v2": _key_encoding(V2KeyEncoding, "."),
}


def register_chunk_grid(name: str, factory: Callable[..., Any]) -> None:
    """``factory(configuration, ndim, loc, problems) -> grid | None``."""
    _GRIDS[name] = factory


def register_chunk_key_encoding(name: str, factory: Callable[..., Any]) -> None:
    """``factory(configuration, loc, problems) -> encoding | None``."""
    _KEY_ENCODINGS[name] = factory


def _lookup(registry: dict[str, Callable[..., Any]], group: str, name: str) -> Callable[..., Any] | None:
    if name not in registry:
        for ep in entry_points(group=group):
            if ep.name == name:
                registry[name] = ep.load()
    return registry.get(name)


def _unknown(what: str, name: str, registry: dict[str, Callable[..., Any]], group: str, loc: Loc) -> Problem:
    """The problem of an unknown extension name: the nearest known name, and every known one."""
    known = sorted({*registry, *(ep.name for ep in entry_points(group=group))})
    return Problem((*loc, "name"), f"unknown {what} {name!r}{did_you_mean(name, known)}; "
                                   f"known: {', '.join(map(repr, known))}", unknown_extension=True)


def parse_chunk_grid(named: NamedConfig, ndim: int, loc: Loc, problems: list[Problem]) -> ChunkGrid | None:
    factory = _lookup(_GRIDS, "zarrdask.chunk_grids", named.name)
    if factory is None:
        problems.append(_unknown("chunk grid", named.name, _GRIDS, "zarrdask.chunk_grids", loc))
        return None
    grid: ChunkGrid | None = factory(named.configuration, ndim, loc, problems)
    return grid


def parse_chunk_key_encoding(named: NamedConfig, loc: Loc, problems: list[Problem]) -> ChunkKeyEncoding | None:
    factory = _lookup(_KEY_ENCODINGS, "zarrdask.chunk_key_encodings", named.name)
    if factory is None:
        problems.append(_unknown("chunk key encoding", named.name, _KEY_ENCODINGS, "zarrdask.chunk_key_encodings", loc))
        return None
    encoding: ChunkKeyEncoding | None = factory(named.configuration, loc, problems)
    return encoding


def raise_problems(problems: list[Problem], key: str | None = None) -> None:
    """Raise the collected problems: UnknownExtensionError when any is an unknown name."""
    if not problems:
        return
    cls = UnknownExtensionError if any(p.unknown_extension for p in problems) else MetadataError
    raise cls(problems, key=key)
