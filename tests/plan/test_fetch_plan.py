"""The read plan (``zarrdask.plan_read``) is what the executor does: its units are the keys
fetched, whole or through their index as it says, and its placements tile the output."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _util import CountingStore

import zarrdask
from zarrdask.storage import MemoryStore
from zarrdask.storage.base import ByteRange, SuffixRange

SETTINGS = settings(derandomize=True, deadline=None, max_examples=150, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def arrays_and_windows(draw):
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    shard = tuple(i * draw(st.integers(1, 3)) for i in inner)
    shape = tuple(draw(st.integers(1, 2 * s + 1)) for s in shard)
    sharded = draw(st.booleans())
    window = []
    for n in shape:
        a, b = sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2)))
        window.append(slice(a, b, draw(st.sampled_from([1, 1, 2]))))
    return shape, inner, shard if sharded else None, tuple(window)


@SETTINGS
@given(arrays_and_windows())
def test_plan_matches_requests_and_tiles_the_output(case):
    shape, inner, shard, window = case
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=shape, dtype="int32", chunks=inner, shards=shard, fill_value=-1)
    data = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    a[...] = data
    a = zarrdask.open_array(store)  # a cold index cache
    plan = zarrdask.plan_read(a, window)
    summary = plan.summary()
    store.reset()
    assert np.array_equal(a[window], data[window])
    whole_gets = [k for k, r in store.requests if r is None]
    index_requests = [k for k, r in store.requests if isinstance(r, SuffixRange)]
    assert sorted(whole_gets) == sorted(u.key for u in plan.units if u.whole)
    assert sorted(index_requests) == sorted(u.key for u in plan.units if not u.whole)
    assert all(isinstance(r, (type(None), SuffixRange, ByteRange)) for _, r in store.requests)
    assert summary.units == len({u.key for u in plan.units})
    # every output element is placed exactly once
    out_shape = data[window].shape
    hits = np.zeros(out_shape, dtype="int32")
    for unit in plan.units:
        target = hits if unit.out_index is None else hits[unit.out_index]
        for c in unit.chunks:
            target[c.out_index] += 1
    assert (hits == 1).all()
    assert summary.chunks == sum(len(u.chunks) for u in plan.units)


def test_plan_read_of_a_shard_and_a_window():
    a = zarrdask.create_array(MemoryStore(), shape=(16, 16), dtype="u1", chunks=(4, 4), shards=(8, 8))
    assert zarrdask.plan_read(a).summary() == (4, 4, 0, 16)
    window = zarrdask.plan_read(a, (slice(2, 6), slice(3, 5)))
    assert window.summary() == (1, 0, 1, 4)
    assert [u.key for u in window.units] == ["c/0/0"]
    assert [c.coords for c in window.units[0].chunks] == [(0, 0), (0, 1), (1, 0), (1, 1)]


@SETTINGS
@given(arrays_and_windows(), st.data())
def test_the_plan_of_some_units_and_the_count_of_all_are_the_full_plans(case, data):
    """``plan_read(..., units=)`` is the full plan's units at those coordinates, in order,
    and ``planned_chunks`` its chunk count; so ``storage_statistics`` (which plans only the
    stored units and counts the rest a dimension at a time) says what the full plan says,
    with integers, steps, transposed shards and units past the array's edge."""
    from zarrdask.indexing import basic_selection
    from zarrdask.metadata.grid import all_chunk_coords
    from zarrdask.plan.fetch_plan import plan_read, planned_chunks

    shape, inner, shard, window = case
    transposed = shard is not None and len(shape) > 1 and data.draw(st.booleans())
    codecs = None
    if transposed:
        order = list(reversed(range(len(shape))))
        codecs = [{"name": "transpose", "configuration": {"order": order}},
                  {"name": "sharding_indexed", "configuration": {
                      "chunk_shape": [inner[k] for k in order],
                      "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]
    layout_keywords = {"chunks": shard, "codecs": codecs} if codecs else {"chunks": inner, "shards": shard}
    a = zarrdask.create_array(MemoryStore(), shape=shape, dtype="int32", fill_value=-1, **layout_keywords)
    for _ in range(data.draw(st.integers(0, 3))):
        at = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
        a[at] = 7
    picks = tuple(data.draw(st.integers(0, n - 1)) if data.draw(st.booleans()) and n else w
                  for n, w in zip(shape, window))
    selection, _ = basic_selection(picks, shape)
    layout = a.units.layout
    full = plan_read(selection, layout).units
    some = set(data.draw(st.lists(st.sampled_from(list(all_chunk_coords(a.units.grid))), max_size=6)))
    assert plan_read(selection, layout, some).units == tuple(u for u in full if u.coords in some)
    assert planned_chunks(selection, layout) == sum(len(u.chunks) for u in full)
    stats = a.storage_statistics(picks)
    stored = a.units.stored_keys()
    assert stats.chunks_total == sum(len(u.chunks) for u in full)
    assert stats.chunks_stored == a.units._count_stored([u for u in full if u.key in stored])


@SETTINGS
@given(arrays_and_windows(), st.data())
def test_a_box_of_slices_is_planned_as_its_shards_project_it(case, data):
    """The plan of basic slices builds its placements from the parts' fields directly, and
    once for shards selected alike: each shard's placements are still those of its own part
    projected onto its inner chunks (``chunk_selection.project``), for every shard of a slab,
    at the array's edge and with steps."""
    from zarrdask.indexing import basic_selection
    from zarrdask.plan.fetch_plan import plan_read

    shape, inner, shard, window = case
    a = zarrdask.create_array(MemoryStore(), shape=shape, dtype="int32", chunks=inner, shards=shard or inner)
    layout = a.units.layout
    picks = tuple(data.draw(st.integers(0, n - 1)) if data.draw(st.booleans()) else w for n, w in zip(shape, window))
    selection, _ = basic_selection(picks, shape)
    projected = {p.coords: p for p in selection.project(layout.unit_grid)}
    units = plan_read(selection, layout).units
    assert [u.coords for u in units] == list(projected)
    for unit in units:
        p = projected[unit.coords]
        assert (unit.out_index, unit.shape, unit.extent, unit.index, unit.block) == (p.out_index, p.shape, p.extent,
                                                                                      p.local, p.full)
        strides = layout.index_strides(unit.coords)
        expected = [(q.coords, sum(c * s for c, s in zip(q.coords, strides)), _boxes(q.out_index), _boxes(q.chunk_index))
                    for q in p.chunk_selection.project(layout.chunk_shape)]
        assert [(c.coords, c.position, _boxes(c.out_index), _boxes(c.chunk_index, layout.chunk_shape))
                for c in unit.chunks] == expected


def _boxes(index, shape=None):
    """A box of slices as ``(start, stop, step)`` triples (``...``: the whole of ``shape``)."""
    if index is ...:
        index = tuple(slice(0, n) for n in shape)
    return tuple((d.start, d.stop, d.step or 1) for d in index)
