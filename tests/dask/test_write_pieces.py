"""Piece tasks of misaligned writes: the write graph cuts each misaligned block into one
small task per (block, write task) and feeds the write tasks from those pieces.

Checked on random shapes, dask chunks, regular shards, regions and task sizes: the piece
graph stores the same bytes as the graph that reads whole blocks (and the source's
values), piece tasks exist exactly for the pieces of misaligned blocks that are less than
the whole block (by an independent computation of the block and shard edges), the lazy
layer's length, keys and membership agree, aligned writes keep their graph (no piece
layer, no priority), ``to_zarr`` cuts only blocks of ``CUT_BYTES`` and more, the
priorities (pieces above writes) reach a distributed scheduler, and the caller's own
``dask.annotate(priority=...)`` wins, and an Icechunk session written from worker
processes through pieces commits every byte.
"""

from __future__ import annotations

import itertools
import math
import tempfile
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.dask_io.write_graph import CUT_BYTES, PIECE_PRIORITY, PRIORITY, write_graph
from zarrdask.plan import make_write_plan


@st.composite
def writes(draw):
    """(shape, dask chunks, shard shape, inner chunks, region, task_bytes) of a small write."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 30), min_size=ndim, max_size=ndim)))
    shard = tuple(draw(st.integers(1, 12)) for _ in shape)
    inner = tuple(draw(st.sampled_from([d for d in range(1, s + 1) if s % d == 0])) for s in shard)
    region = []
    for n in shape:
        start = draw(st.integers(0, n - 1))
        region.append(slice(start, draw(st.integers(start + 1, n))))
    chunks = []
    for s in region:
        left, blocks = s.stop - s.start, []
        while left:
            blocks.append(draw(st.integers(1, min(left, 14))))
            left -= blocks[-1]
        chunks.append(tuple(blocks))
    task_bytes = draw(st.none() | st.integers(1, 4000))
    return shape, tuple(chunks), shard, inner, tuple(region), task_bytes


def _stored_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.name != "zarr.json"}


def _misaligned_blocks(chunks, shard, region) -> list[set[int]]:
    """Per axis, the blocks with an edge strictly inside a shard (region edges excepted)."""
    out = []
    for blocks, size, s in zip(chunks, shard, region):
        edges = list(itertools.accumulate(blocks, initial=s.start))
        inside = [e not in (s.start, s.stop) and e % size != 0 for e in edges]
        out.append({b for b in range(len(blocks)) if inside[b] or inside[b + 1]})
    return out


@settings(max_examples=60, deadline=None)
@given(writes())
def test_pieces_write_the_same_bytes_as_whole_blocks(problem):
    shape, chunks, shard, inner, region, task_bytes = problem
    data = np.random.default_rng(sum(shape)).integers(0, 2**16, size=shape, dtype=np.uint16)
    source = da.from_array(data[region], chunks=chunks)
    with tempfile.TemporaryDirectory() as tmp:
        arrays = [zarrdask.create_array(f"{tmp}/{name}", shape=shape, dtype="u2", chunks=inner, shards=shard,
                                        fill_value=7) for name in ("pieces", "direct")]
        plan = make_write_plan(shape, chunks, shard, region, task_bytes=task_bytes, itemsize=2)
        dask.compute(write_graph(source, arrays[0].with_options(threads=1), plan, cut_bytes=0, staging=False),
                     scheduler="sync")
        dask.compute(write_graph(source, arrays[1].with_options(threads=1), plan, cut_bytes=2**62), scheduler="threads")
        assert _stored_bytes(Path(tmp) / "pieces") == _stored_bytes(Path(tmp) / "direct")
        expected = np.full(shape, 7, dtype=np.uint16)
        expected[region] = data[region]
        assert np.array_equal(arrays[0][...], expected)


@settings(max_examples=150, deadline=None)
@given(writes())
def test_piece_tasks_are_made_for_cut_misaligned_blocks_only(problem):
    shape, chunks, shard, inner, region, task_bytes = problem
    source = da.zeros([s.stop - s.start for s in region], chunks=chunks, dtype="u2")
    plan = make_write_plan(shape, chunks, shard, region, task_bytes=task_bytes, itemsize=2)
    with tempfile.TemporaryDirectory() as tmp:
        target = zarrdask.create_array(f"{tmp}/a", shape=shape, dtype="u2", chunks=inner, shards=shard)
        job = write_graph(source, target, plan, cut_bytes=0, staging=False)
    layers = job.__dask_graph__().layers
    piece_layers = [(name, layer) for name, layer in layers.items() if name.startswith("zarrdask-piece-")]
    misaligned = _misaligned_blocks(chunks, shard, region)
    expected = set()  # (write task, block) pairs that must go through a piece
    for task in plan.tasks():
        for piece in task.pieces:
            bad = any(b in m for b, m in zip(piece.block, misaligned))
            whole = all(s.stop - s.start == chunks[a][b] for a, (s, b) in enumerate(zip(piece.block_slices, piece.block)))
            if bad and not whole:
                expected.add((task.index, piece.block))
    if not expected:  # aligned (or nothing cut): the graph of before, unannotated
        assert not piece_layers
        assert all(layer.annotations is None for layer in layers.values())
        return
    ((name, pieces),) = piece_layers
    ndim = len(shape)
    keys = list(pieces)
    assert len(keys) == len(set(keys)) == len(pieces)
    assert {(k[1:ndim + 1], k[ndim + 1:]) for k in keys} == expected
    assert all(k in pieces for k in keys)
    assert (name, *(0,) * ndim, *(10**6,) * ndim) not in pieces
    assert pieces.annotations == {"priority": PIECE_PRIORITY}
    writes_layer = next(layer for n, layer in layers.items() if n.startswith("zarrdask-write-") and "done" not in n)
    assert writes_layer.annotations == {"priority": PRIORITY}
    for key in writes_layer:  # every write task reads each input once: a piece, or an uncut block
        reads = writes_layer[key].dependencies
        task = plan.task(key[1:])
        assert len(reads) == len(task.pieces)
        for dep in reads:
            if dep[0] == name:
                assert (tuple(dep[1:ndim + 1]), tuple(dep[ndim + 1:])) in expected and dep[1:ndim + 1] == key[1:]
            else:
                assert (task.index, tuple(dep[1:])) not in expected
    for key in keys:  # a piece task reads its one block
        assert pieces[key].dependencies == {(source.name, *key[ndim + 1:])}
    assert math.prod(len(a) for a in plan.axes) == len(writes_layer)


def test_only_blocks_of_cut_bytes_and_more_are_cut(tmp_path):
    """to_zarr cuts misaligned blocks into pieces when the largest block holds CUT_BYTES,
    and leaves the graph of smaller blocks as it was (no pieces, no priority)."""
    side = math.isqrt(CUT_BYTES // 4)  # float32 blocks of CUT_BYTES (2048 x 2048 for 16 MiB)
    for block, expect in ((side, True), (side - 1, False)):
        source = da.zeros((2 * side, side), chunks=(block, block), dtype="f4")
        job = zarrdask.to_zarr(source, str(tmp_path / f"{block}.zarr"), chunks=(100, 100), shards=(1000, 1000),
                               compute=False)
        names = list(job.__dask_graph__().layers)
        assert any(n.startswith("zarrdask-piece-") for n in names) is expect, (block, names)


def test_icechunk_from_worker_processes_with_pieces_commits_every_byte(tmp_path, monkeypatch):
    """Piece tasks return arrays, write tasks the forks' changes: the tree still merges
    every write's changes into the session (misaligned blocks, a process cluster)."""
    import distributed
    import icechunk

    from zarrdask.dask_io import write_graph as graph_module

    monkeypatch.setattr(graph_module, "CUT_BYTES", 0)  # the client builds the graph: small blocks cut too
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "ic")))
    session = repo.writable_session("main")
    data = np.random.default_rng(5).standard_normal((90, 70))
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        writes = zarrdask.to_zarr(da.from_array(data, chunks=(7, 13)), session.store, path="x", chunks=(8, 8),
                                  shards=(32, 32), compute=False)
        assert any(n.startswith("zarrdask-piece-") for n in writes.__dask_graph__().layers)
        session.merge(client.compute(writes).result())
    session.commit("pieces")
    stored = zarrdask.open_array(repo.readonly_session("main").store, path="x")[...]
    assert np.array_equal(stored.view(np.uint64), data.view(np.uint64))


def test_the_callers_priority_wins(tmp_path):
    source = da.zeros((30, 30), chunks=(7, 7), dtype="f4")
    target = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(30, 30), dtype="f4", chunks=(5, 5), shards=(10, 10))
    with dask.annotate(priority=50, retries=2):
        job = write_graph(source, target, make_write_plan((30, 30), source.chunks, (10, 10)), cut_bytes=0,
                          staging=False)
    annotated = {name: layer.annotations for name, layer in job.__dask_graph__().layers.items()
                 if name.startswith(("zarrdask-piece-", "zarrdask-write-")) and "done" not in name}
    assert len(annotated) == 2 and all(a == {"priority": 50, "retries": 2} for a in annotated.values())


def test_a_distributed_scheduler_gets_the_priority_and_the_bytes(tmp_path):
    import distributed
    from distributed.diagnostics.plugin import SchedulerPlugin

    class Seen(SchedulerPlugin):
        def __init__(self) -> None:
            self.priorities: dict = {}

        def update_graph(self, scheduler, *, annotations=None, **kwargs) -> None:
            self.priorities.update((annotations or {}).get("priority", {}))

    data = np.random.default_rng(3).standard_normal((60, 50))
    source = da.from_array(data, chunks=(13, 17))
    target = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype=data.dtype, chunks=(5, 5),
                                   shards=(10, 10))
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        seen = Seen()
        cluster.scheduler.add_plugin(seen)
        job = write_graph(source, target.with_options(threads=1), make_write_plan(data.shape, source.chunks, (10, 10)),
                          cut_bytes=0, staging=False)
        client.compute(job).result()
    assert np.array_equal(zarrdask.open_array(str(tmp_path / "a.zarr"))[...], data)
    kinds = {str(k[0]).rsplit("-", 1)[0]: p for k, p in seen.priorities.items()}
    assert kinds == {"zarrdask-piece": PIECE_PRIORITY, "zarrdask-write": PRIORITY}
