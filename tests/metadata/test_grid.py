"""The chunk-grid abstraction: a grid is its axes (``zarrdask.metadata.grid.AxisGrid``), and the
indexing layer projects any selection onto any axes, regular or not. An irregular axis
defined here (as a rectilinear grid will be) projects exactly like numpy's indexing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _util import IrregularAxis

from zarrdask.metadata.grid import (
    DefaultKeyEncoding,
    RegularAxis,
    RegularChunkGrid,
    all_chunk_coords,
    chunk_of,
    chunks_outside,
    largest_extent,
    chunk_slices,
    grid_shape,
    stored_shape,
    V2KeyEncoding,
)
from zarrdask.metadata.n5 import N5KeyEncoding
from zarrdask.metadata.v3draft import DraftKeyEncoding
from zarrdask.indexing import basic_selection, orthogonal_selection, point_selection

SETTINGS = settings(derandomize=True, deadline=None, max_examples=200, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 7)), min_size=1, max_size=3))
def test_regular_axes_match_brute_force(dims):
    shape = tuple(n for n, _ in dims)
    axes = RegularChunkGrid(tuple(c for _, c in dims)).axes(shape)
    assert grid_shape(axes) == tuple(-(-n // c) for n, c in dims)
    covered = np.zeros(shape, dtype=int)
    for coords in all_chunk_coords(axes):
        region = chunk_slices(axes, coords)
        covered[region] += 1
        assert stored_shape(axes, coords) == tuple(c for _, c in dims)
        first = tuple(s.start for s in region)
        if all(s.stop > s.start for s in region):
            assert chunk_of(axes, first) == coords
    assert (covered == 1).all()
    for axis, (n, _) in zip(axes, dims):
        assert sum(axis.extents()) == n
        assert largest_extent(axis) == max(axis.extents())


@st.composite
def irregular_case(draw):
    ndim = draw(st.integers(1, 3))
    axes, shape = [], []
    for _ in range(ndim):
        extents = draw(st.lists(st.integers(1, 5), min_size=1, max_size=5))
        edges = tuple(itertools.accumulate([0, *extents]))
        axes.append(IrregularAxis(edges) if draw(st.booleans()) else RegularAxis(edges[-1], extents[0]))
        shape.append(edges[-1])
    return tuple(shape), axes


def _rebuild(selection, axes, data, out_shape):
    out = np.zeros(selection.shape, dtype=data.dtype)
    for p in selection.project(axes):
        region = chunk_slices(axes, p.coords)
        chunk = data[region]
        out[p.out_index] = chunk[p.chunk_index]
    return out.reshape(out_shape)


@SETTINGS
@given(irregular_case(), st.data())
def test_projection_onto_any_axes_matches_numpy(case, data):
    shape, axes = case
    values = np.arange(int(np.prod(shape))).reshape(shape)
    window = tuple(slice(data.draw(st.integers(0, n)), data.draw(st.integers(0, n)), data.draw(st.sampled_from([1, 2, 3])))
                   for n in shape)
    sel, out_shape = basic_selection(window, shape)
    assert np.array_equal(_rebuild(sel, axes, values, out_shape), values[window])
    picks = tuple(np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=6)), dtype=int) for n in shape)
    sel, out_shape = orthogonal_selection(picks, shape)
    assert np.array_equal(_rebuild(sel, axes, values, out_shape), values[np.ix_(*picks)])
    n_points = data.draw(st.integers(1, 6))
    points = tuple(np.array([data.draw(st.integers(0, n - 1)) for _ in range(n_points)]) for n in shape)
    sel, out_shape = point_selection(points, shape)
    assert np.array_equal(_rebuild(sel, axes, values, out_shape), values[points])


def _same(a, b) -> bool:
    """Projections (and their parts) equal, numpy arrays by value."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype \
            and np.array_equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@SETTINGS
@given(irregular_case(), st.data())
def test_nested_projection_is_each_chunks_own_projection(case, data):
    """``project_nested`` (what a sharded read plans with: each dimension's part projected onto the
    inner chunks once) gives what projecting each chunk's part on its own gives, for every kind of
    selection."""
    shape, axes = case
    inner = tuple(data.draw(st.integers(1, 4)) for _ in shape)
    window = tuple(slice(data.draw(st.integers(0, n)), data.draw(st.integers(0, n)), data.draw(st.sampled_from([1, 2, 3])))
                   for n in shape)
    picks = tuple(np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=6)), dtype=int) for n in shape)
    n_points = data.draw(st.integers(1, 6))
    points = tuple(np.array([data.draw(st.integers(0, n - 1)) for _ in range(n_points)]) for n in shape)
    basic = basic_selection(window, shape)[0]
    for sel in (basic, orthogonal_selection(picks, shape)[0], point_selection(points, shape)[0]):
        nested = sel.project_nested(axes, inner)
        own = list(sel.project(axes))
        assert len(nested) == len(own)
        for (p, inside), q in zip(nested, own):
            assert _same(p, q)
            assert _same(tuple(inside()), tuple(q.chunk_selection.project(inner)))
        if sel is basic and nested:  # (what a read plans a box of slices from: the same inner chunks, a
            parts = sel.nested_parts(axes, inner)  # dimension at a time, in the same order)
            for idx, (_, inside) in zip(parts.combos, nested):
                fields = [tuple(zip(*combo)) for combo in itertools.product(*parts.inside(idx))]
                assert [(f[0], f[1], f[2]) for f in fields] == [(r.coords, r.local, r.out_index) for r in inside()]


def test_nested_projection_of_a_0d_array():
    sel, _ = basic_selection((), ())
    [(p, inside)] = sel.project_nested((), ())
    assert p == sel.project(())[0] and inside() == list(p.chunk_selection.project(()))
    parts = sel.nested_parts((), ())
    assert list(parts.combos) == [()] and parts.inside(()) == []  # (its one chunk: no parts)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13), st.integers(1, 4)), min_size=1, max_size=3))
def test_the_chunks_a_resize_drops_are_those_the_new_grid_lacks(dims):
    """``chunks_outside``: every chunk of the old grid outside the new one, each once, and
    nothing else, whatever grows, shrinks or empties."""
    old = RegularChunkGrid(tuple(c for _, _, c in dims)).axes(tuple(n for n, _, _ in dims))
    new = RegularChunkGrid(tuple(c for _, _, c in dims)).axes(tuple(m for _, m, _ in dims))
    got = list(chunks_outside(old, new))
    assert len(got) == len(set(got))
    assert sorted(got) == [c for c in all_chunk_coords(old) if any(i >= a.count for i, a in zip(c, new))]


ENCODINGS = [DefaultKeyEncoding("/"), DefaultKeyEncoding("."), V2KeyEncoding("."), V2KeyEncoding("/"),
             N5KeyEncoding(), DraftKeyEncoding("/"), DraftKeyEncoding(".")]


@SETTINGS
@given(st.sampled_from(ENCODINGS), st.lists(st.integers(0, 10**15), max_size=5))
def test_every_key_encoding_reads_its_keys_back(encoding, coords):
    assert encoding.decode(encoding.encode(coords), len(coords)) == tuple(coords)


@SETTINGS
@given(st.sampled_from(ENCODINGS), st.integers(0, 4),
       st.lists(st.sampled_from(["c", "0", "1", "7", "10", "01", "/", ".", "-", "+", " ", "_", "x", "\u0661"]),
                max_size=9))
def test_a_key_encoding_reads_back_only_the_keys_it_writes(encoding, ndim, pieces):
    """``decode`` of any text: the coordinates whose ``encode`` is exactly that text (so
    ``c/01``, ``c/+1``, ``c/1/2`` for one dimension, an Arabic-Indic digit are no chunk's),
    else None."""
    key = "".join(pieces)
    coords = encoding.decode(key, ndim)
    if coords is not None:
        assert len(coords) == ndim and encoding.encode(coords) == key


@pytest.mark.parametrize("key", ["c/01", "c/+1", "c/ 1", "c/1_0", "c/-1", "c/1/2", "c/", "c", "c.1", "1",
                                 "c/\u0661", "zarr.json"])
def test_keys_no_encoding_writes_read_as_no_chunk(key):
    assert DefaultKeyEncoding("/").decode(key, 1) is None
