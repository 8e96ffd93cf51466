"""Selections and their projection onto a chunk grid (pure integer geometry).

A user selection is normalised once into one of two forms:

* :class:`OrthogonalSelection`: one entry per dimension, each a positive-step ``slice``
  or an int array (``a[...]`` with ints/slices/ellipsis, and ``a.oindex[...]``);
* :class:`PointSelection`: broadcast coordinate arrays (``a.vindex[...]``).

``selection.project(grid)`` gives one :class:`Projection` per chunk touched, for a grid
given as its axes (:class:`~zarrdask.metadata.grid.AxisGrid`, any chunk grid) or as a regular
chunk shape: the chunk's grid coordinates, the selection inside the chunk (which becomes
a Selection on demand, so a shard projects it onto its inner chunks the same way), where
the values go in the output, and whether the chunk is covered completely (a write needs
no read then).
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Union

import numpy as np

from .arguments import shown
from .errors import BoundsError, SelectionError
from .metadata.grid import AxisGrid, RegularAxis, as_axes, regular_axis

__all__ = [
    "DimPart",
    "Nested",
    "NestedParts",
    "OrthogonalSelection",
    "PointSelection",
    "Selection",
    "Projection",
    "basic_selection",
    "expand_ellipsis",
    "indexing_kind",
    "orthogonal_selection",
    "point_selection",
]

DimSel = Union[slice, np.ndarray]
GridLike = Sequence[Union[int, AxisGrid]]


class Projection(NamedTuple):
    """One chunk's part of a selection: ``out[out_index] = chunk[chunk_index]``.

    ``local`` is the selection inside the chunk (per dimension, or the points' coordinate
    arrays when ``points``) and ``extent`` the chunk's extent inside the array. Only
    plain values are built per chunk; ``chunk_selection`` (to project a shard onto its
    inner chunks) is made when asked for. ``full``: the chunk's whole extent is selected
    (claimed for unit steps only)."""

    coords: tuple[int, ...]
    local: tuple[Any, ...]
    extent: tuple[int, ...]
    out_index: Any  # tuple of slices (a view), an np.ix_ tuple, or flat positions (points)
    full: bool
    points: bool = False

    @property
    def chunk_selection(self) -> Selection:
        if self.points:
            return PointSelection(self.local, self.extent, (len(self.local[0]),))
        return OrthogonalSelection(self.local, self.extent)

    @property
    def chunk_index(self) -> Any:
        """A numpy index of the selected part of the chunk."""
        if self.points or all(isinstance(d, slice) for d in self.local):
            return self.local
        return self.chunk_selection.index()

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the selected part (as the selection inside the chunk sees it)."""
        if self.points:
            return (len(self.local[0]),)
        return tuple([_slice_len(d) if isinstance(d, slice) else len(d) for d in self.local])


#: the one chunk of a 0-d array, whole
_WHOLE_0D = Projection((), (), (), (), True)


def _slice_len(s: slice) -> int:
    return max(0, (s.stop - s.start + s.step - 1) // s.step)


def c_order_stop(index: Any, shape: tuple[int, ...]) -> int | None:
    """How many leading elements (in C order) of an array of ``shape`` hold every element
    ``index`` selects, for an index of normalized slices (one per axis); None for any other
    index (whole chunks, points, integer arrays)."""
    if not isinstance(index, tuple) or len(index) != len(shape) or not all(isinstance(d, slice) for d in index):
        return None
    last = 0
    for d, n in zip(index, shape):
        count = _slice_len(d)
        if count == 0:
            return 0
        last = last * n + d.start + (count - 1) * d.step
    return last + 1


@dataclass(frozen=True)
class OrthogonalSelection:
    """Per-dimension selection: positive-step slices or int arrays (indices in order)."""

    dims: tuple[DimSel, ...]
    array_shape: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple([_slice_len(d) if isinstance(d, slice) else len(d) for d in self.dims])

    @property
    def is_basic(self) -> bool:
        return all([isinstance(d, slice) for d in self.dims])

    def index(self) -> Any:
        """A numpy index that applies this selection to an array of ``array_shape``."""
        if self.is_basic:
            return self.dims
        return np.ix_(*(np.arange(d.start, d.stop, d.step) if isinstance(d, slice) else d for d in self.dims))

    def project(self, grid: GridLike, only: Collection[tuple[int, ...]] | None = None) -> list[Projection]:
        """Every chunk of ``grid`` this selection touches (``only``: of those, the ones at
        these coordinates; in C order either way)."""
        per_dim = self._parts(grid, only)
        if per_dim is None:
            return []
        basic = self.is_basic
        if only is None:
            return [_projection(combo, basic) for combo in itertools.product(*per_dim)]
        return [_projection([per_dim[d][i] for d, i in enumerate(idx)], basic) for idx in _combos(per_dim, only)]

    def project_nested(self, grid: GridLike, inner: Sequence[int], only: Collection[tuple[int, ...]] | None = None
                       ) -> list[tuple[Projection, Nested]]:
        """``project(grid, only)``, each chunk with its part projected onto ``inner``, a
        regular grid laid over the chunk from its origin (a shard's inner chunks): the same
        as ``p.chunk_selection.project(inner)``, but each dimension's part is projected once,
        when first asked for, however many chunks share it (the shards of a window or a
        slab)."""
        nested = self.nested_parts(grid, inner, only)
        if nested is None:
            return []
        return [(nested.projection(idx), _OrthogonalNested(nested, idx)) for idx in nested.combos]

    def nested_parts(self, grid: GridLike, inner: Sequence[int], only: Collection[tuple[int, ...]] | None = None
                     ) -> NestedParts | None:
        """What :meth:`project_nested` builds its projections from, a dimension at a time
        (:class:`NestedParts`), for a caller that builds records of its own; None when no
        chunk is touched."""
        per_dim = self._parts(grid, only)
        if per_dim is None:
            return None
        return NestedParts(per_dim, _combos(per_dim, only), tuple(map(int, inner)), self.is_basic)

    def count_nested(self, grid: GridLike, inner: Sequence[int] | None) -> int:
        """How many inner chunks ``project_nested(grid, inner)`` projects in all (``inner``
        None: how many chunks ``project(grid)`` does), counted a dimension at a time: the
        chunks touched are every combination of one part per dimension, so no chunk is
        listed."""
        if 0 in self.shape:
            return 0
        axes = as_axes(grid, self.array_shape)
        return math.prod(_dim_count(d, a, None if inner is None else int(inner[k]))
                         for k, (d, a) in enumerate(zip(self.dims, axes)))

    def _parts(self, grid: GridLike, only: Collection[tuple[int, ...]] | None = None) -> list[list[DimPart]] | None:
        """Each dimension's parts on ``grid``'s chunks (``only``: in the chunks these
        coordinates name along it); None when a dimension selects nothing (then no chunk is
        touched, and no dimension's chunks are listed: a long one can have billions)."""
        if 0 in self.shape:
            return None
        axes = as_axes(grid, self.array_shape)
        if only is None:  # (every dimension selects something, so meets some chunk)
            return [_project_dim(d, a) for d, a in zip(self.dims, axes)]
        per_dim = []
        for k, (d, a) in enumerate(zip(self.dims, axes)):
            parts = _project_dim(d, a, {coords[k] for coords in only})
            if not parts:
                return None
            per_dim.append(parts)
        return per_dim


def _combos(per_dim: list[list[DimPart]], only: Collection[tuple[int, ...]] | None) -> Iterable[tuple[int, ...]]:
    """The chunks touched as the position of their part in each dimension, in C order:
    all of them, or those at the coordinates ``only`` (found a dimension at a time)."""
    if only is None:
        return itertools.product(*[range(len(parts)) for parts in per_dim])
    where = [{part.chunk: i for i, part in enumerate(parts)} for parts in per_dim]
    return [tuple(w[c] for w, c in zip(where, coords)) for coords in sorted(only)
            if len(coords) == len(where) and all(c in w for w, c in zip(where, coords))]


def _projection(combo: Sequence[DimPart], basic: bool) -> Projection:
    """The chunk of one part per dimension (the one chunk of a 0-d array for none)."""
    if not combo:
        return _WHOLE_0D
    coords, local, outs, fulls, extent = zip(*combo)
    if not basic:
        outs = np.ix_(*(np.arange(o.start, o.stop) if isinstance(o, slice) else o for o in outs))
    return Projection(coords, local, extent, outs, False not in fulls)


class Nested:
    """A chunk's part of a selection projected onto a regular grid laid over the chunk (a
    shard's inner chunks), made when asked for: calling it gives every inner chunk's
    :class:`Projection`."""

    def __call__(self) -> list[Projection]:
        raise NotImplementedError


class NestedParts:
    """An orthogonal selection's parts on a grid's chunks (``per_dim``: a list of
    :class:`DimPart` per dimension), the chunks it touches as the position of their part in
    each dimension (``combos``, in C order), and each part projected onto the regular grid
    of ``inner`` laid over its chunk when first asked for (:meth:`inside`): once per
    dimension's part, however many chunks share it (the shards of a window or a slab).
    ``basic``: every part is a slice."""

    __slots__ = ("per_dim", "combos", "basic", "_inner", "_found")

    def __init__(self, per_dim: list[list[DimPart]], combos: Iterable[tuple[int, ...]], inner: tuple[int, ...],
                 basic: bool) -> None:
        self.per_dim, self.combos, self.basic, self._inner = per_dim, combos, basic, inner
        self._found: list[list[list[DimPart] | None]] = [[None] * len(parts) for parts in per_dim]

    def inside(self, idx: tuple[int, ...]) -> list[list[DimPart]]:
        """The parts of the chunk at ``idx`` on the inner grid, a list per dimension: its
        inner chunks are every combination of one per dimension, in C order."""
        out = []
        for d, i in enumerate(idx):
            found = self._found[d][i]
            if found is None:
                part = self.per_dim[d][i]
                found = self._found[d][i] = _project_dim(part.local, regular_axis(part.extent, self._inner[d]))
            out.append(found)
        return out

    def projection(self, idx: tuple[int, ...]) -> Projection:
        """The chunk at ``idx``'s projection."""
        return _projection([self.per_dim[d][i] for d, i in enumerate(idx)], self.basic)

    def projections(self, idx: tuple[int, ...]) -> list[Projection]:
        """Each inner chunk's projection of the chunk at ``idx``'s part, in C order."""
        basic = self.basic
        return [_projection(combo, basic) for combo in itertools.product(*self.inside(idx))]


class _OrthogonalNested(Nested):
    """An orthogonal selection's part in the chunk at ``idx`` of its parts ``nested``."""

    __slots__ = ("_nested", "_idx")

    def __init__(self, nested: NestedParts, idx: tuple[int, ...]) -> None:
        self._nested, self._idx = nested, idx

    def __call__(self) -> list[Projection]:
        return self._nested.projections(self._idx)


class _PointsNested(Nested):
    """A point selection's part: its points projected onto the inner grid."""

    __slots__ = ("_projection", "_inner")

    def __init__(self, projection: Projection, inner: tuple[int, ...]) -> None:
        self._projection, self._inner = projection, inner

    def __call__(self) -> list[Projection]:
        return list(self._projection.chunk_selection.project(self._inner))


class DimPart(NamedTuple):
    """One chunk's part of a selection along one dimension."""

    chunk: int
    local: DimSel  # the selection inside the chunk
    out: DimSel  # where its values go in the output
    full: bool  # the chunk's whole extent is selected
    extent: int  # the chunk's extent inside the array


def _dim_count(sel: DimSel, axis: AxisGrid, inner: int | None) -> int:
    """How many chunks of ``axis`` a one-dimensional selection touches (``inner``: how many
    inner chunks of that extent, laid over each from its origin): counted, not listed, for
    a slice over a regular grid whose chunks the inner ones tile (their cells then lie on
    one grid along the whole axis); else listed."""
    if isinstance(sel, slice) and isinstance(axis, RegularAxis) and (inner is None or axis.step % inner == 0):
        cell, n = (axis.step if inner is None else inner), _slice_len(sel)
        if n == 0:
            return 0
        last = sel.start + (n - 1) * sel.step
        # (a stride within a cell touches every cell from the first index's to the last's;
        # a longer one a cell per index)
        return last // cell - sel.start // cell + 1 if sel.step <= cell else n
    parts = _project_dim(sel, axis)
    if inner is None:
        return len(parts)
    return sum(len(_project_dim(part.local, regular_axis(part.extent, inner))) for part in parts)


def _project_dim(sel: DimSel, axis: AxisGrid, chunks: Collection[int] | None = None) -> list[DimPart]:
    """The chunks of ``axis`` a one-dimensional selection touches (``chunks``: of those,
    the ones at these indices: a slice's chunks are then not walked)."""
    parts: list[DimPart] = []
    if isinstance(sel, slice):
        start, stop, step = sel.start, sel.stop, sel.step
        if stop <= start:
            return parts
        spans = axis.overlapping(start, stop) if chunks is None else [
            (k, lo, hi) for k in sorted(chunks) if 0 <= k < axis.count
            for lo, hi in [axis.bounds(k)] if lo < stop and hi > start]
        for k, lo, hi in spans:
            # the first selected index in the chunk: start, or the first one past lo on start's stride
            first = start if start >= lo else lo + (start - lo) % step
            end = stop if stop < hi else hi
            if first >= end:
                continue
            out0 = (first - start) // step
            count = (end - first - 1) // step + 1
            parts.append(DimPart(k, slice(first - lo, end - lo, step), slice(out0, out0 + count),
                                 first == lo and end == hi and step == 1, hi - lo))
        return parts
    if sel.size == 0:
        return parts
    chunk_ids = axis.index_of_array(sel)
    order = np.argsort(chunk_ids, kind="stable")
    sorted_ids = chunk_ids[order]
    bounds = np.flatnonzero(np.diff(sorted_ids)) + 1
    for positions in np.split(order, bounds):
        k = int(chunk_ids[positions[0]])
        lo, hi = axis.bounds(k)
        local = sel[positions] - lo
        full = local.size >= hi - lo and np.unique(local).size == hi - lo
        parts.append(DimPart(k, local, positions, bool(full), hi - lo))
    return parts


@dataclass(frozen=True)
class PointSelection:
    """Coordinate selection: ``coords[d][i]`` is point ``i``'s index along dimension ``d``."""

    coords: tuple[np.ndarray, ...]
    array_shape: tuple[int, ...]
    out_shape: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.coords[0]),) if self.coords else (1,)

    def index(self) -> Any:
        """A numpy index that picks these points from an array of ``array_shape``."""
        return self.coords

    def project(self, grid: GridLike, only: Collection[tuple[int, ...]] | None = None) -> Iterator[Projection]:
        """Every chunk of ``grid`` holding some of the points (``only``: of those, the ones
        at these coordinates)."""
        if not self.coords or len(self.coords[0]) == 0:
            return
        wanted = None if only is None else set(only)
        axes = as_axes(grid, self.array_shape)
        chunk_idx = [a.index_of_array(c) for c, a in zip(self.coords, axes)]
        flat = np.ravel_multi_index(chunk_idx, [max(1, a.count) for a in axes])
        order = np.argsort(flat, kind="stable")
        bounds = np.flatnonzero(np.diff(flat[order])) + 1
        for positions in np.split(order, bounds):
            k = tuple(int(ci[positions[0]]) for ci in chunk_idx)
            if wanted is not None and k not in wanted:
                continue
            spans = [a.bounds(kk) for a, kk in zip(axes, k)]
            local = tuple(c[positions] - lo for c, (lo, _) in zip(self.coords, spans))
            local_shape = tuple(hi - lo for lo, hi in spans)
            yield Projection(k, local, local_shape, positions, False, points=True)

    def project_nested(self, grid: GridLike, inner: Sequence[int], only: Collection[tuple[int, ...]] | None = None
                       ) -> list[tuple[Projection, Nested]]:
        """``project(grid, only)``, each chunk with its points projected onto ``inner`` (as
        :meth:`OrthogonalSelection.project_nested`)."""
        return [(p, _PointsNested(p, tuple(inner))) for p in self.project(grid, only)]

    def count_nested(self, grid: GridLike, inner: Sequence[int] | None) -> int:
        """As :meth:`OrthogonalSelection.count_nested` (the points' chunks are listed: no
        more of them than points)."""
        if inner is None:
            return sum(1 for _ in self.project(grid))
        return sum(len(nested()) for _, nested in self.project_nested(grid, inner))


Selection = Union[OrthogonalSelection, PointSelection]

# -- normalisation of user selections ------------------------------------------------


def _as_tuple(selection: Any) -> tuple[Any, ...]:
    return selection if isinstance(selection, tuple) else (selection,)


def expand_ellipsis(sel: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    n_ell = sum(1 for s in sel if s is Ellipsis)
    if n_ell > 1:
        raise SelectionError("a selection may contain at most one Ellipsis")
    if n_ell:
        i = next(i for i, s in enumerate(sel) if s is Ellipsis)
        sel = sel[:i] + (slice(None),) * (ndim - len(sel) + 1) + sel[i + 1 :]
    if len(sel) > ndim:
        raise SelectionError(f"too many indices: {len(sel)} for an array with {ndim} dimensions")
    return sel + (slice(None),) * (ndim - len(sel))


def _int_index(value: Any, n: int, dim: int) -> int:
    i = operator.index(value)
    if not -n <= i < n:
        raise BoundsError(f"index {i} is out of bounds for dimension {dim} with length {n}")
    return i + n if i < 0 else i


def _int_array(value: Any, n: int, dim: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise SelectionError(f"boolean index for dimension {dim} has shape {arr.shape}, expected ({n},)")
        return np.flatnonzero(arr)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise SelectionError(f"index for dimension {dim} must be a 1-d integer or boolean array, got {arr.dtype}{arr.shape}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < -n or arr.max() >= n):
        raise BoundsError(f"index out of bounds for dimension {dim} with length {n}")
    return np.where(arr < 0, arr + n, arr)


def _slice(s: slice, n: int) -> DimSel:
    try:
        start, stop, step = s.indices(n)
    except (ValueError, TypeError) as exc:
        raise SelectionError(f"invalid slice {s!r}: {exc}") from None
    if step > 0:
        return slice(start, max(start, stop), step)
    return np.arange(start, stop, step, dtype=np.int64)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _orthogonal(selection: Any, shape: tuple[int, ...], allow_arrays: bool
                ) -> tuple[OrthogonalSelection, tuple[int, ...]]:
    """Normalise per-dimension ints / slices (/ int or bool arrays); integer-indexed
    dimensions are dropped from the returned result shape."""
    sel = expand_ellipsis(_as_tuple(selection), len(shape))
    dims: list[DimSel] = []
    out_shape: list[int] = []
    for d, (s, n) in enumerate(zip(sel, shape)):
        if _is_int(s):
            i = _int_index(s, n, d)
            dims.append(slice(i, i + 1, 1))
            continue
        if s is None:
            raise SelectionError(
                f"selection {shown(selection)}: None (np.newaxis) in dimension {d} adds no axis to a read here, as in "
                "zarr-python; read, then add it to the numpy result, e.g. a[...][..., None]")
        if not isinstance(s, slice) and not allow_arrays:
            raise SelectionError(
                f"unsupported selection {s!r} in dimension {d} for basic indexing; use .oindex or .vindex for arrays"
            )
        ds = _slice(s, n) if isinstance(s, slice) else _int_array(s, n, d)
        dims.append(ds)
        out_shape.append(_slice_len(ds) if isinstance(ds, slice) else len(ds))
    return OrthogonalSelection(tuple(dims), tuple(shape)), tuple(out_shape)


def indexing_kind(selection: Any, ndim: int) -> str:
    """How ``a[selection]`` reads, as zarr-python 3 reads it: ``"points"`` (``vindex``) for a
    boolean mask of the array's dimensions, or for one integer or integer array per
    dimension, at least one an array (``a[[0, 2], [1, 3]]``: the elements (0, 1) and (2, 3),
    as numpy reads it, not the 2 x 2 block); ``"orthogonal"`` (``oindex``) for one array
    among ints and slices, or an array per dimension, some boolean (each picks along its
    own dimension); ``"basic"`` without arrays. Arrays in several dimensions otherwise
    (among slices, or for fewer dimensions than the array has) are refused, as zarr-python
    refuses them: numpy would pair them as points, an orthogonal read would not."""
    items = _as_tuple(selection)
    arrays = [isinstance(s, (list, np.ndarray)) for s in items]
    if not any(arrays):
        return "basic"
    if ndim > 1:
        if len(items) == 1 and arrays[0]:
            first = np.asarray(items[0])
            if first.dtype == bool and first.ndim == ndim:
                return "points"
        full = len(items) == ndim
        if full and all(_is_int(s) or (a and np.asarray(s).dtype.kind in "iu") for s, a in zip(items, arrays)):
            return "points"
        if sum(arrays) > 1 and not (full and all(arrays)):
            raise SelectionError(
                f"selection {shown(selection)}: arrays in {sum(arrays)} dimensions among slices, "
                f"Ellipsis or fewer than the array's {ndim} dimensions, which numpy pairs as points and an "
                "orthogonal read does not (zarr-python refuses it too); pass a.oindex[...] to pick along each "
                "dimension on its own, or a.vindex[...] with one integer array per dimension for points")
    return "orthogonal"


def basic_selection(selection: Any, shape: tuple[int, ...]) -> tuple[OrthogonalSelection, tuple[int, ...]]:
    """Normalise ints / slices / Ellipsis (``a[...]``)."""
    return _orthogonal(selection, shape, allow_arrays=False)


def orthogonal_selection(selection: Any, shape: tuple[int, ...]) -> tuple[OrthogonalSelection, tuple[int, ...]]:
    """Normalise an ``oindex`` selection (ints, slices, int or bool arrays per dimension)."""
    return _orthogonal(selection, shape, allow_arrays=True)


def point_selection(selection: Any, shape: tuple[int, ...]) -> tuple[PointSelection, tuple[int, ...]]:
    """Normalise a ``vindex`` selection: coordinate arrays (broadcast) or one boolean mask."""
    sel = _as_tuple(selection)
    if len(sel) == 1 and np.asarray(sel[0]).dtype == bool and np.asarray(sel[0]).ndim == len(shape):
        mask = np.asarray(sel[0])
        if mask.shape != shape:
            raise SelectionError(f"boolean mask has shape {mask.shape}, expected {shape}")
        coords = tuple(c.astype(np.int64) for c in np.nonzero(mask))
        return PointSelection(coords, shape, (len(coords[0]),)), (len(coords[0]),)
    if len(sel) != len(shape):
        raise SelectionError(f"vindex needs one coordinate array per dimension ({len(shape)}), got {len(sel)}")
    arrays = []
    for d, (s, n) in enumerate(zip(sel, shape)):
        arr = np.asarray(s)
        if arr.dtype.kind not in "iu":
            raise SelectionError(f"vindex coordinates for dimension {d} must be integers, got {arr.dtype}")
        arr = arr.astype(np.int64)
        if arr.size and (arr.min() < -n or arr.max() >= n):
            raise BoundsError(f"coordinate out of bounds for dimension {d} with length {n}")
        arrays.append(np.where(arr < 0, arr + n, arr))
    try:
        bcast = np.broadcast_arrays(*arrays)
    except ValueError as exc:
        raise SelectionError(f"vindex coordinate arrays do not broadcast: {exc}") from None
    out_shape = bcast[0].shape if bcast else ()
    coords = tuple(b.reshape(-1) for b in bcast)
    return PointSelection(coords, shape, out_shape), out_shape
