"""Staged writes: the pieces of cut dask blocks go through the target's store instead of
waiting in worker memory for the rest of their shard.

Checked on random shapes, chunks, shards, regions, task sizes and dtypes (byte orders
included), with pieces written from rows of their block and from a copy, in bands of one
row, a few rows or whole, into a store that writes values from parts and one that does
not: a staged graph stores the same bytes as the graph that reads whole blocks, and
leaves nothing below ``.zarrdask-staging``. Also: a blockwise source fused with the stage
tasks, a write task run twice (its result lost with a worker) finds itself done and
writes nothing, a piece deleted under a running write is an error naming its key,
``to_zarr`` stages by default only when the waiting pieces would outweigh one thread's
work, the keyword's refusals, a process cluster, the loopback S3 server, ``plan_write``'s
account, and ``verify`` and ``remove_temporary_files`` on what a killed job left.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.dask_io import staging as staging_module
from zarrdask.dask_io.staging import StagedPiece, Staging, stage_piece
from zarrdask.dask_io.write_graph import PIECE_PRIORITY, PRIORITY, write_graph, write_region
from zarrdask.errors import InvalidModeError, StoreError
from zarrdask.plan import make_write_plan
from zarrdask.storage import MemoryStore, open_store

from test_write_pieces import _stored_bytes, writes


def _layer_kinds(job) -> set[str]:
    """The kinds of zarrdask's layers in a write graph (piece, stage, write, done)."""
    return {"done" if "done" in name else name.split("-")[1]
            for name in job.__dask_graph__().layers if name.startswith("zarrdask-")}


def _top_function(job) -> str:
    """The name of the function of the graph's final task."""
    graph = job.__dask_graph__()
    return graph.layers[job.key][job.key].func.__name__


@settings(max_examples=60, deadline=None)
@given(writes(), st.sampled_from(["<u2", ">f8", "<i4", "|u1"]), st.booleans(), st.booleans(),
       st.sampled_from([1, 40, 2**30]))
def test_staged_pieces_write_the_same_bytes_as_whole_blocks(problem, dtype, rows, local, band):
    shape, chunks, shard, inner, region, task_bytes = problem
    data = np.random.default_rng(sum(shape)).integers(0, 200, size=shape).astype(dtype)
    source = da.from_array(data[region], chunks=chunks)
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setattr(staging_module, "ROW_BYTES", 1 if rows else 2**40)  # pieces from row views, or from a copy
        mp.setattr(staging_module, "STAGED_BATCH", band)  # bands of one row, of a few, of the whole piece
        store = open_store(f"{tmp}/staged", mode="a") if local else MemoryStore()
        staged = zarrdask.create_array(store, shape=shape, dtype=dtype, chunks=inner, shards=shard, fill_value=7)
        direct = zarrdask.create_array(f"{tmp}/direct", shape=shape, dtype=dtype, chunks=inner, shards=shard,
                                       fill_value=7)
        plan = make_write_plan(shape, chunks, shard, region, task_bytes=task_bytes, itemsize=data.itemsize)
        job = write_graph(source, staged.with_options(threads=1), plan, staging=True)
        dask.compute(job, scheduler="sync")
        dask.compute(write_graph(source, direct.with_options(threads=1), plan, cut_bytes=2**62), scheduler="threads")
        if local:
            assert _stored_bytes(Path(tmp) / "staged") == _stored_bytes(Path(tmp) / "direct")
        expected = np.full(shape, 7, dtype=dtype)
        expected[region] = data[region]
        assert np.array_equal(staged[...], expected)
        assert not [k for k in store.list_prefix("") if ".zarrdask-staging" in k]
        kinds = _layer_kinds(job)
        assert "piece" not in kinds  # staged: one stage task per block instead of piece tasks
        if not plan.aligned:
            assert "stage" in kinds and _top_function(job) == "finish_staging"


def _one_staged_task(tmp_path):
    """A staged write's graph, its store and the key of a write task that reads pieces,
    with every stage task already run."""
    data = np.arange(40 * 30, dtype="f4").reshape(40, 30)
    target = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype="f4", chunks=(5, 5),
                                   shards=(10, 10))
    source = da.from_array(data, chunks=(13, 13))
    job = write_graph(source, target.with_options(threads=1), make_write_plan(data.shape, source.chunks, (10, 10)),
                      staging=True)
    graph = dict(job.__dask_graph__())
    results = dask.get(graph, [k for k in graph if isinstance(k, tuple) and "stage" in str(k[0])])
    assert all(isinstance(p, StagedPiece) for r in results for p in r.values())
    write = next(k for k, task in graph.items()
                 if isinstance(k, tuple) and "write-" in str(k[0]) and "done" not in str(k[0])
                 and any("stage" in str(d[0]) for d in task.dependencies))
    return data, target, graph, write


def test_a_write_task_run_again_after_its_pieces_are_gone_writes_nothing(tmp_path):
    data, target, graph, write = _one_staged_task(tmp_path)
    (value,) = dask.get(graph, [write])  # the pieces are read, the shard written, the pieces deleted
    task = graph[write]
    staging = next(a for a in task.args if isinstance(a, Staging))
    assert staging.store.exists(staging.done_key(tuple(write[1:])))
    region = task.args[1]
    target.with_options(threads=1)[region] = np.zeros_like(data[region])  # overwritten since: must stay so
    index = tuple(write[1:])
    staged = [{index: StagedPiece(k, (1, 1), "<f4", 1)} for k in ("p/gone-1", "p/gone-2")]  # as stage tasks give them
    write_region(target, region, task.args[2], staged, staging, index)  # recomputed: done, skipped
    assert np.array_equal(target[region], np.zeros_like(data[region]))


def test_a_staged_piece_deleted_under_a_running_write_is_an_error_naming_it(tmp_path):
    data, target, graph, write = _one_staged_task(tmp_path)
    task = graph[write]
    staging = next(a for a in task.args if isinstance(a, Staging))
    missing = StagedPiece(f"{staging.prefix}/p/9/9/9/9", (3, 3), "<f4", 3)
    layout = tuple(((slice(0, 3), slice(0, 3)),) for _ in range(2))
    with pytest.raises(StoreError, match=r"staged piece '.*p/9/9/9/9/0'.*Run the write again"):
        write_region(target, (slice(0, 3), slice(0, 3)), layout, [{(9, 9): missing}], staging, (9, 9))


def test_pieces_are_written_from_rows_of_their_block_without_a_copy(tmp_path, monkeypatch):
    store = open_store(str(tmp_path / "s"), mode="a")
    written = {}
    monkeypatch.setattr(store, "set", lambda key, value: written.update({key: value}))
    block = np.arange(6 * 2000, dtype="f4").reshape(6, 2000)
    monkeypatch.setattr(staging_module, "STAGED_BATCH", 3 * 1300 * 4)  # three rows per band
    record = stage_piece(block, (slice(1, 5), slice(500, 1800)), Staging(store, "x"), "x/p/0")
    assert record == StagedPiece("x/p/0", (4, 1300), "<f4", 3) and sorted(written) == ["x/p/0/0", "x/p/0/1"]
    parts = [p for key in sorted(written) for p in (written[key] if isinstance(written[key], list) else [written[key]])]
    assert isinstance(written["x/p/0/0"], list) and len(parts) == 4  # rows 1-3 as three views, row 4 contiguous
    assert all(np.shares_memory(np.asarray(p), block) for p in parts)
    assert b"".join(parts) == block[1:5, 500:1800].tobytes()


def test_to_zarr_stages_only_when_the_waiting_pieces_outweigh_a_threads_work(tmp_path):
    """Wide cross-sections stage by default; narrow ones keep pieces in memory; False and
    True force it either way (True cuts small blocks too)."""
    wide = da.zeros((4 * 4900, 32768), chunks=(4900, 4900), dtype="f4")  # front 512 MiB > 2 x (92 + 32) MiB
    narrow = da.zeros((8192, 8192), chunks=(2100, 2100), dtype="f4")  # front 32 MiB < 2 x (17 + 4) MiB
    small = da.zeros((100, 100), chunks=(30, 30), dtype="f4")
    cases = [(wide, (4096, 2048), None, "stage"), (wide, (4096, 2048), False, "piece"),
             (narrow, (1024, 1024), None, "piece"), (narrow, (1024, 1024), True, "stage"),
             (small, (20, 20), None, None), (small, (20, 20), True, "stage")]
    for n, (source, shards, staging, expected) in enumerate(cases):
        job = zarrdask.to_zarr(source, str(tmp_path / f"{n}.zarr"), chunks=(512, 512) if shards[0] > 20 else (10, 10),
                               shards=shards, staging=staging, compute=False)
        assert _layer_kinds(job) - {"write", "done", "record"} == ({expected} if expected else set()), (n, staging)
    plan = make_write_plan(wide.shape, wide.chunks, (4096, 2048))
    assert plan.pieces(4) == (True, True, 4 * 4096 * 32768)
    assert plan.pieces(4, False) == (True, False, 4 * 4096 * 32768)
    assert plan.pieces(4, can_stage=False).staged is False


def test_plan_write_says_where_the_pieces_of_cut_blocks_wait(tmp_path):
    wide = da.zeros((4 * 4900, 32768), chunks=(4900, 4900), dtype="f4")
    target = zarrdask.create_array(str(tmp_path / "w.zarr"), shape=wide.shape, dtype="f4", chunks=(512, 512),
                                   shards=(4096, 2048))
    staged = zarrdask.plan_write(wide, target)
    assert staged.pieces.staged and "staged in the store (else 512.00 MiB would wait" in repr(staged)
    assert "Cut blocks" in staged._repr_html_()
    kept = zarrdask.plan_write(wide, target, staging=False)
    assert not kept.pieces.staged and "wait in memory for the next block row (up to 512.00 MiB)" in repr(kept)
    aligned = zarrdask.plan_write(da.zeros(wide.shape, chunks=(4096, 2048), dtype="f4"), target)
    assert "no cut blocks" in repr(aligned) and aligned.pieces == (False, False, 0)
    small = zarrdask.plan_write(da.zeros(wide.shape, chunks=(1000, 1000), dtype="f4"), target)
    assert "read whole by each task" in repr(small)
    with pytest.raises(InvalidModeError, match="staging must be True, False or None.*1"):
        zarrdask.plan_write(wide, target, staging=1)


def test_staging_fuses_with_a_blockwise_source_and_writes_run_above_it(tmp_path):
    """A blockwise source and the stage tasks become one task per block (so a block is
    staged by the task that makes it); the writes keep their priority above the source.
    The fusion is dask's (``compat.dask.fuse_blockwise``): checked here on the installed
    release, so a release that stops fusing fails this test rather than falling back."""
    source = da.random.default_rng(1).random((30, 30), chunks=(7, 7)).astype("f4") * 2  # random, astype, mul
    job = zarrdask.to_zarr(source, str(tmp_path / "a.zarr"), chunks=(5, 5), shards=(10, 10), staging=True,
                           compute=False)
    layers = job.__dask_graph__().layers
    assert not any(n.startswith(("astype-", "mul-")) for n in layers)  # fused into the stage layer
    stage = next(layer for n, layer in layers.items() if n.startswith("zarrdask-stage-"))
    write = next(layer for n, layer in layers.items() if n.startswith("zarrdask-write-") and "done" not in n)
    assert len(stage) == 25 and stage.annotations is None and write.annotations == {"priority": PRIORITY}
    target = zarrdask.create_array(str(tmp_path / "b.zarr"), shape=source.shape, dtype="f4", chunks=(5, 5),
                                   shards=(10, 10))
    unstaged = write_graph(source, target, make_write_plan(source.shape, source.chunks, (10, 10)), cut_bytes=0,
                           staging=False).__dask_graph__().layers
    piece = next(layer for n, layer in unstaged.items() if n.startswith("zarrdask-piece-"))
    assert piece.annotations == {"priority": PIECE_PRIORITY} and PIECE_PRIORITY > PRIORITY > 0
    job.compute()
    assert np.array_equal(zarrdask.open_array(str(tmp_path / "a.zarr"))[...], source.compute())


def test_staging_refusals_name_the_keyword_and_a_fix(tmp_path):
    source = da.zeros((30, 30), chunks=(7, 7), dtype="f4")
    with pytest.raises(InvalidModeError, match=r"staging must be True, False or None.*'yes'"):
        zarrdask.to_zarr(source, str(tmp_path / "a.zarr"), chunks=(5, 5), shards=(10, 10), staging="yes")
    strings = da.from_array(np.array([["a"] * 30] * 30, dtype=object), chunks=(7, 7))
    target = zarrdask.create_array(str(tmp_path / "b.zarr"), shape=(30, 30), dtype="string", chunks=(5, 5),
                                   shards=(10, 10))
    with pytest.raises(InvalidModeError, match=r"staging=True.*object.*staging=False"):
        write_graph(strings, target, make_write_plan((30, 30), strings.chunks, (10, 10)), staging=True)
    import icechunk

    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "ic")))
    session = repo.writable_session("main")
    with pytest.raises(InvalidModeError, match=r"staging=True.*transactional session.*staging=False"):
        zarrdask.to_zarr(source, session.store, path="x", chunks=(5, 5), shards=(10, 10), staging=True)
    zarrdask.to_zarr(source, session.store, path="y", chunks=(5, 5), shards=(10, 10))  # default: not staged
    assert not [k for k in zarrdask.open_store(session.store).list_prefix("") if ".zarrdask-staging" in k]


def test_a_staged_write_on_worker_processes_is_bit_exact_and_leaves_nothing(tmp_path):
    import distributed

    data = np.random.default_rng(11).standard_normal((90, 70))
    url = str(tmp_path / "a.zarr")
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        job = zarrdask.to_zarr(da.from_array(data, chunks=(7, 13)), url, chunks=(8, 8), shards=(32, 32),
                               staging=True, compute=False)
        client.compute(job).result()
    assert np.array_equal(zarrdask.open_array(url)[...].view(np.uint64), data.view(np.uint64))
    assert not list(Path(url).rglob("*staging*"))


def test_remove_temporary_files_removes_what_a_killed_staged_write_left(tmp_path):
    data = np.arange(40 * 30, dtype="f4").reshape(40, 30)
    url = str(tmp_path / "a.zarr")
    target = zarrdask.create_array(url, shape=data.shape, dtype="f4", chunks=(5, 5), shards=(10, 10))
    source = da.from_array(data, chunks=(13, 13))
    job = write_graph(source, target, make_write_plan(data.shape, source.chunks, (10, 10)), staging=True)
    graph = dict(job.__dask_graph__())
    dask.get(graph, [k for k in graph if isinstance(k, tuple) and "stage" in str(k[0])])  # killed after staging
    left = sorted(str(p.relative_to(url)) for p in Path(url).rglob("*") if p.is_file() and "staging" in str(p))
    report = zarrdask.verify(url)  # each one found once, as a leftover (not also as an orphan)
    assert sorted(f.key for f in report.findings) == left
    assert {(f.kind, f.problem) for f in report.findings} == {
        ("temporary", "staged piece left by an interrupted Dask write (to_zarr's staging)")}
    assert zarrdask.remove_temporary_files(url) == left
    assert not list(Path(url).rglob("*staging*")) and zarrdask.open_array(url).shape == data.shape


def test_verify_finds_staged_pieces_in_its_one_listing_of_each_array(tmp_path, monkeypatch):
    """``verify`` lists each array's keys once (on an object store a listing is many
    requests) and finds staged leftovers there, also below an array whose metadata it
    cannot read."""
    from zarrdask.storage.local import LocalStore

    data = np.arange(40 * 30, dtype="f4").reshape(40, 30)
    url = str(tmp_path / "g.zarr")
    zarrdask.open_group(url, mode="w")
    target = zarrdask.create_array(url + "/a", shape=data.shape, dtype="f4", chunks=(5, 5), shards=(10, 10))
    source = da.from_array(data, chunks=(13, 13))
    job = write_graph(source, target, make_write_plan(data.shape, source.chunks, (10, 10)), staging=True)
    graph = dict(job.__dask_graph__())
    dask.get(graph, [k for k in graph if isinstance(k, tuple) and "stage" in str(k[0])])  # killed after staging
    left = sorted("a/" + str(p.relative_to(url + "/a")) for p in Path(url, "a").rglob("*")
                  if p.is_file() and "staging" in str(p))
    listed: list[str] = []
    original = LocalStore.list_prefix

    def counted(self, prefix=""):
        listed.append(prefix)
        return original(self, prefix)

    monkeypatch.setattr(LocalStore, "list_prefix", counted)
    report = zarrdask.verify(url)
    assert sorted(f.key for f in report.findings if f.kind == "temporary") == left and report.ok is False
    assert listed.count("a") == 1 and "" not in listed[1:], listed  # (the first: is anything stored at all)
    Path(url, "a", "zarr.json").write_text('{"zarr_format": 3, "node_type": "array"}')  # unreadable now
    report = zarrdask.verify(url)
    assert sorted(f.key for f in report.findings if f.kind == "temporary") == left
    assert any(f.kind == "metadata" and f.key.startswith("a/") for f in report.findings)


def test_a_staged_write_to_s3_is_bit_exact_and_leaves_nothing(s3_endpoint, s3_url):
    """On the loopback S3 server: pieces in bands (copies: s3fs takes one buffer per value)."""
    from _s3 import s3_storage_options

    options = s3_storage_options(s3_endpoint)
    data = np.random.default_rng(12).standard_normal((60, 50)).astype("f4")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(staging_module, "STAGED_BATCH", 7 * 4 * 9)  # bands of 7 rows of the widest piece
        job = zarrdask.to_zarr(da.from_array(data, chunks=(13, 17)), s3_url, chunks=(5, 5), shards=(10, 10),
                               storage_options=options, staging=True, compute=False)
        dask.compute(job, scheduler="threads")
    store = zarrdask.open_store(s3_url, storage_options=options)
    assert np.array_equal(zarrdask.open_array(store)[...], data)
    assert not [k for k in store.list_prefix("") if ".zarrdask-staging" in k]
