"""Shards whose inner chunks lie in another order than C order (zarr-python writes Morton
order) read the same values as C-ordered ones: whole shards in an order that goes box by box
are decoded a run at a time in file order (``stored_order.py``), every other order chunk by
chunk. Generated geometries, orders, missing chunks, clipped edges and a transposing codec
before the sharding one, all against the values written."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from _util import draw_shard_geometry
from zarrdask.codecs.sharding import MISSING
from zarrdask.metadata.grid import all_chunk_coords
from zarrdask.nodes.units.stored_order import StoredOrder
from zarrdask.storage import MemoryStore
from zarrdask.storage.base import join_path


def morton(grid: tuple[int, ...]) -> list[tuple[int, ...]]:
    """zarr-python's order of a shard's chunks: Morton codes counted up, each decoded bit by
    bit over the axes that still have bits, codes outside the grid skipped."""
    bits = [max(0, math.ceil(math.log2(g))) for g in grid]
    order: list[tuple[int, ...]] = []
    code = 0
    while len(order) < math.prod(grid):
        coords, bit = [0] * len(grid), 0
        for level in range(max(bits, default=0)):
            for d in range(len(grid)):
                if level < bits[d]:
                    coords[d] |= ((code >> bit) & 1) << level
                    bit += 1
        if all(c < g for c, g in zip(coords, grid)):
            order.append(tuple(coords))
        code += 1
    return order


def c_order(grid):
    return list(itertools.product(*map(range, grid)))


def f_order(grid):
    return [tuple(reversed(c)) for c in itertools.product(*map(range, reversed(grid)))]


def ranks_of(coords: list[tuple[int, ...]], grid) -> np.ndarray:
    return np.ravel_multi_index(tuple(np.array(coords).T), grid).astype(np.intp) if coords else np.zeros(0, np.intp)


def positions(order: StoredOrder, n: int, ndim: int) -> np.ndarray:
    """The grid coordinates of each rank, from the order's digits (a second reckoning)."""
    out = np.zeros((n, ndim), dtype=np.int64)
    for rank in range(n):
        value = rank
        for digit in order.digits:
            value, d = divmod(value, digit.radix)
            out[rank, digit.axis] += d * digit.stride
    return out


grids = st.lists(st.integers(1, 8), min_size=1, max_size=3).map(tuple)


@settings(max_examples=150, deadline=None)
@given(grid=grids, kind=st.sampled_from(["c", "f", "morton", "shuffled"]), seed=st.integers(0, 2**16))
def test_orders_writers_use_are_found_and_placed_where_they_lie(grid, kind, seed):
    coords = {"c": c_order, "f": f_order, "morton": morton}.get(kind, c_order)(grid)
    if kind == "shuffled":
        np.random.default_rng(seed).shuffle(coords)
    ranks = ranks_of(coords, grid)
    order = StoredOrder.of(ranks, grid)
    n = math.prod(grid)
    box_by_box = kind in ("c", "f") or (kind == "morton" and all(g & (g - 1) == 0 for g in grid))
    if n > 1 and box_by_box:
        assert order is not None, (grid, kind)
    if order is not None:
        assert np.array_equal(positions(order, n, len(grid)), np.array(coords).reshape(n, len(grid)))


@settings(max_examples=150, deadline=None)
@given(grid=grids, data=st.data())
def test_runs_placed_one_copy_each_rebuild_the_shard(grid, data):
    """Runs of any size (the lowest digits free, the others fixed), each placed with one
    copy into the shard's part of the output, in any axis order of the array, rebuild it."""
    ndim = len(grid)
    chunk = tuple(data.draw(st.integers(1, 3)) for _ in grid)
    kind = data.draw(st.sampled_from(["c", "f", "morton"] if all(g & (g - 1) == 0 for g in grid) else ["c", "f"]))
    coords = {"c": c_order, "f": f_order, "morton": morton}[kind](grid)
    order = StoredOrder.of(ranks_of(coords, grid), grid)
    if order is None:  # (one chunk: nothing to order)
        assert math.prod(grid) == 1
        return
    axes = data.draw(st.permutations(range(ndim)))  # (axes[d]: the codec axis that is array axis d)
    shard = np.arange(math.prod(g * c for g, c in zip(grid, chunk))).reshape([g * c for g, c in zip(grid, chunk)])
    stack = np.stack([shard[tuple(slice(i * c, (i + 1) * c) for i, c in zip(pos, chunk))] for pos in coords])
    expected = shard.transpose(axes)
    target = np.full(expected.shape, -1)
    limit = data.draw(st.integers(1, len(coords))) * math.prod(chunk) * 8
    runs = order.runs(math.prod(chunk) * 8, limit)
    assert [r.first for r in runs] == list(range(0, len(coords), runs[0].count))
    for run in runs:
        order.place(stack[run.first: run.first + run.count], target, run, axes)
    assert np.array_equal(target, expected)


@pytest.mark.parametrize("grid", [(3, 5), (6, 4)])
def test_morton_order_off_a_power_of_two_grid_is_read_chunk_by_chunk(grid):
    assert StoredOrder.of(ranks_of(morton(grid), grid), grid) is None


def relayout(a: zarrdask.Array, order) -> None:
    """Rewrite every stored shard of ``a`` with its inner chunks in ``order(grid)``'s order
    (index at the end, as zarrdask writes it)."""
    codec = a.units.pipeline.sharding
    grid = codec.grid_shape
    for coords in all_chunk_coords(a.metadata.chunk_grid.axes(a.shape)):
        key = join_path(a.path, a.units.key(coords))
        blob = a.store.get(key)
        if blob is None:
            continue
        chunks = codec.split(blob, key)
        table = np.full((*grid, 2), MISSING, dtype=np.uint64)
        parts, offset = [], 0
        for c in order(grid):
            if c in chunks:
                table[c] = (offset, len(chunks[c]))
                parts.append(bytes(chunks[c]))
                offset += len(chunks[c])
        a.store.set(key, b"".join(parts) + bytes(codec.index_pipeline.encode(table)))


@st.composite
def cases(draw):
    ndim, inner, shard, shape = draw_shard_geometry(draw, st, max_per_shard=4, min_extent=1, spare=3)
    low = draw(st.sampled_from([-3, 1]))  # (from -3: some inner chunks all fill value, so not stored)
    # (values from a drawn seed: a list of one draw per element is past what Hypothesis
    # generates for the largest geometries, over 8,192 elements)
    values = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).integers(low, 4, size=shape, dtype="int16")
    kind = draw(st.sampled_from(["c", "f", "morton", "shuffled"]))
    transposed = draw(st.booleans()) and ndim > 1
    return inner, shard, values, kind, transposed, draw(st.integers(0, 2**16))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_shards_in_any_order_read_as_written(case):
    inner, shard, values, kind, transposed, seed = case
    ndim = values.ndim
    filters = [{"name": "transpose", "configuration": {"order": list(range(ndim))[::-1]}}] if transposed else None
    a = zarrdask.create_array(MemoryStore(), shape=values.shape, chunks=inner, shards=shard, dtype="int16",
                              fill_value=0, filters=filters,
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    a[...] = values  # (inner chunks all zero are left out: missing ones read as the fill value)
    rng = np.random.default_rng(seed)

    def order(grid):
        coords = {"c": c_order, "f": f_order, "morton": morton}.get(kind, c_order)(grid)
        if kind == "shuffled":
            rng.shuffle(coords)
        return coords

    relayout(a, order)
    b = zarrdask.open_array(a.store)
    assert np.array_equal(b[...], values)
    assert np.array_equal(zarrdask.from_zarr(b).compute(), values)
    window = tuple(slice(s // 3, s) for s in values.shape)
    assert np.array_equal(b[window], values[window])


def test_a_corrupt_chunk_in_a_morton_shard_is_named():
    """An inner chunk that fails to decode in a run read in file order names its own
    coordinates, not the run's first."""
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(64, 64), chunks=(16, 16), shards=(64, 64), dtype="int32",
                              compressors=[{"name": "zstd", "configuration": {"level": 1, "checksum": True}}])
    a[...] = np.arange(64 * 64, dtype="int32").reshape(64, 64) + 1
    relayout(a, morton)
    blob = bytearray(store.get("c/0/0"))
    codec = a.units.pipeline.sharding
    start, stop = codec.index_of(bytes(blob), "c/0/0").locate(np.ravel_multi_index((1, 2), (4, 4)))
    blob[start + (stop - start) // 2] ^= 0xFF
    store.set("c/0/0", bytes(blob))
    with pytest.raises(zarrdask.errors.CodecError, match=r"c/0/0.*\(1, 2\)"):
        zarrdask.open_array(store)[...]
