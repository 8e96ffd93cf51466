"""The helpers of benchmarks/bench_memory.py, benchmarks/bench_costs.py,
benchmarks/bench_tiny.py and benchmarks/bench_counts.py: the generated source, the ordering
simulation, the graph before piece tasks, the cost model, the tiny-shard runs and the
questions of what is stored."""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import dask
import numpy as np
import pytest
from dask._task_spec import List, Task, TaskRef
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(1, str(Path(__file__).resolve().parents[2] / "benchmarks" / "probes"))

import bench_costs  # noqa: E402
import bench_counts  # noqa: E402
import bench_memory  # noqa: E402
import bench_tiny  # noqa: E402

import zarrdask  # noqa: E402
from zarrdask.plan import make_write_plan  # noqa: E402


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**31))
def test_generated_values_do_not_depend_on_the_chunks(rows: int, cols: int, seed: int) -> None:
    shape = (57, 63)
    a = bench_memory.generated(shape, dask.array.core.normalize_chunks((rows, cols), shape), seed)
    b = bench_memory.generated(shape, dask.array.core.normalize_chunks((57, 63), shape), seed)
    a_bits, b_bits = (x.compute(scheduler="sync").view(np.uint32) for x in (a, b))
    assert np.array_equal(a_bits, b_bits)
    assert np.all((a_bits & 0xFF) == 0) and np.all((a_bits >> 23) == 127)  # 15 random mantissa bits in [1, 2)
    assert len(np.unique(a_bits)) > shape[0] * shape[1] // 4  # not a constant pattern


def test_the_benchmark_layout_cuts_every_shard() -> None:
    lay = bench_memory.layout(8, 4900)
    assert lay.shape == (65536, 32768) and lay.block_bytes == 4 * 4900 * 4900 and lay.shard_bytes == 32 * 2**20
    assert bench_memory.cut_everywhere(lay)
    assert not bench_memory.cut_everywhere(bench_memory.layout(1, 4096))  # blocks on shard edges


def _nothing(_results: list) -> None:
    """A task of the toy graph."""


def test_ordered_peak_counts_results_until_their_last_dependent() -> None:
    dsk = {
        "a": Task("a", _nothing, List()),
        "b": Task("b", _nothing, List()),
        "c": Task("c", _nothing, List(TaskRef("a"), TaskRef("b"))),
        "d": Task("d", _nothing, List(TaskRef("c"))),
    }
    sizes = {"a": 100, "b": 10, "c": 1}
    # c runs holding a and b and its own working memory; then a and b go
    assert bench_memory.ordered_peak(dsk, sizes, {"c": 1000}) == (1111, 2)
    # with "b" preferred, the same peak: c still needs both
    assert bench_memory.ready_peak(dsk, sizes, {"c": 1000}, user=lambda k: k == "b") == 1111
    walk = bench_memory.write_order(dsk, ["d"])
    assert sorted(walk, key=walk.__getitem__)[-1] == "d" and walk["c"] > max(walk["a"], walk["b"])


def test_to_zarrs_graph_frees_blocks_earlier_than_whole_block_reads() -> None:
    """(to_zarr stages this layout's pieces, fused with the blockwise source: one block and
    one region alive at a time, in any order.)"""
    lay = bench_memory.layout(2, 4900)  # 16384 x 32768 in 4 x 7 blocks of 91.6 MiB: every shard cut
    report = bench_memory.order_report(lay)
    for how in ("dask.order", "priorities, source as given", "priorities, source in C order"):
        assert report[f"zarrdask (to_zarr's graph), {how}"][0] < report[f"before (write tasks on whole blocks), {how}"][0]
    assert report["zarrdask (to_zarr's graph), dask.order"][0] < lay.block_bytes + 4 * lay.shard_bytes


def test_the_graph_before_pieces_writes_the_same_bits(tmp_path: Path) -> None:
    shape, chunks = (96, 80), ((30, 30, 36), (25, 25, 30))
    source = bench_memory.generated(shape, chunks, 11)
    target = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=shape, dtype="f4", chunks=(8, 8), shards=(16, 16))
    dsk, final = bench_memory.direct_graph(source, target, make_write_plan(shape, chunks, (16, 16)))
    assert not any("piece" in str(k[0] if isinstance(k, tuple) else k) for k in dsk)
    dask.get(dsk, final, scheduler="sync")
    back = zarrdask.open_array(str(tmp_path / "a.zarr"))[...]
    assert np.array_equal(back.view(np.uint32), source.compute(scheduler="sync").view(np.uint32))


def test_noop_graph_gathers_every_task() -> None:
    dsk, final = bench_costs.noop_graph(200)
    assert len([k for k in dsk if "noop" in k[0]]) == 200
    assert len(dsk) == 200 + 4 + 1  # 200 -> 4 -> 1
    assert dask.get(dsk, final, scheduler="sync") is None


def test_sent_graph_bytes_reads_distributeds_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("Sending large graph of size 10.03 MiB.\nThis may cause some slowdown.", UserWarning)
    assert bench_costs.sent_graph_bytes(caught) == int(10.03 * 2**20)
    assert bench_costs.sent_graph_bytes([]) == 0


@given(st.floats(1e9, 1e16), st.sampled_from([16, 64, 256]), st.sampled_from(["write", "read"]))
def test_estimate_is_bounded_by_its_floors(total: float, shard_mib: int, op: str) -> None:
    c = {"scheduler_per_task": 1e-3, "worker_per_shard": 2e-3, "write_core_s_per_byte": 3e-9,
         "read_core_s_per_byte": 1e-9, "graph_bytes_per_task": 20.0}
    e = bench_costs.estimate(total, shard_mib * 2**20, c, op)
    assert e.tasks == math.ceil(total / (shard_mib * 2**20))
    assert e.wall_s >= max(e.scheduler_s, e.requests_s)
    assert e.wall_s * e.threads_useful >= e.core_hours * 3600 * (1 - 1e-9)
    grouped = bench_costs.estimate(total, shard_mib * 2**20, c, op, tasks=max(1, e.tasks // 16))
    assert grouped.scheduler_s <= e.scheduler_s and grouped.requests_s == e.requests_s
    assert grouped.core_hours == e.core_hours  # grouping saves scheduling, not work per shard
    per_task = bench_costs.estimate(total, shard_mib * 2**20, {**c, "worker_per_task": 1e-3}, op)
    assert math.isclose(per_task.core_hours - e.core_hours, e.tasks * 1e-3 / 3600)


def test_the_tiny_shard_benchmark_times_every_reader(tmp_path) -> None:
    times = bench_tiny.run(4, 1, str(tmp_path))  # (each read is compared with the data inside)
    assert {"write, 1 thread", "read, 1 thread", "write, 2 threads", "read, 2 threads"} <= set(times)
    assert all(len(v) == 1 and v[0] > 0 for v in times.values())


def test_the_copy_floor_benchmark_copies_what_a_cached_read_returns(tmp_path) -> None:
    """probes/bench_copy_floor.py's numpy pass assembles the same slabs a read returns (the last
    slab compared) and the script runs end to end on a small array."""
    import bench_copy_floor

    times = bench_copy_floor.main(["--size-mib", "4", "--repeat", "1", "--step", "3", "--data-dir", str(tmp_path)])
    assert all(len(ts) == 1 for ts in times.values())
    from bench_cache import climate_array, geometry
    from harness import make_data

    shape, layout = geometry(4)
    data = make_data(shape)
    path = climate_array(data, layout, str(tmp_path))
    shard_shape = tuple(layout.shards)
    grid = [-(-n // s) for n, s in zip(shape, shard_shape)]
    shards = {}
    for c in np.ndindex(*grid):
        shard = np.zeros(shard_shape, np.float32)
        part = data[tuple(slice(i * s, (i + 1) * s) for i, s in zip(c, shard_shape))]
        shard[tuple(slice(0, n) for n in part.shape)] = part
        shards[c] = shard
    results = [np.zeros((3, *shape[1:]), np.float32) for _ in range(2)]
    from concurrent.futures import ThreadPoolExecutor

    bench_copy_floor.copy_pass(shards, results, 3, shard_shape, 3, ThreadPoolExecutor(2))
    np.testing.assert_array_equal(results[0], zarrdask.open_array(path)[0:3])


def test_the_placed_floor_places_what_the_array_holds(tmp_path) -> None:
    """zstd_floor.py --placed decodes each unit into place: its untimed check (every block
    against zarrdask's read of it) passes on sharded and unsharded arrays, and catches
    frames placed in the wrong slots."""
    import zstd_floor

    data = np.random.default_rng(7).random((8, 32, 48), dtype=np.float32)
    for name, options in (("sharded", {"chunks": (2, 8, 16), "shards": (4, 16, 48)}), ("plain", {"chunks": (4, 16, 16)})):
        path = str(tmp_path / name)
        zarrdask.create_array(path, shape=data.shape, dtype=data.dtype,
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}], **options)[...] = data
        units = zstd_floor.inner_chunks(path)
        assert len(zstd_floor.placed_sums(path, units, 2, 2)) == 2
    shuffled = [list(reversed(frames)) for frames in zstd_floor.inner_chunks(str(tmp_path / "sharded"))]
    with pytest.raises(SystemExit, match="is not the array's"):
        zstd_floor.placed_sums(str(tmp_path / "sharded"), shuffled, 1, 2)


def test_the_counts_benchmark_asks_both_libraries_and_compares_their_answers(tmp_path) -> None:
    path = str(tmp_path / "a.zarr")
    a = zarrdask.create_array(path, shape=(20, 20), chunks=(5, 5), shards=(10, 10), dtype="u1", fill_value=0)
    a[0:10, 0:10] = 1
    lines = bench_counts.run_case("tiny", path, None, 1)
    assert [line.split()[1] for line in lines] == ["nchunks_initialized", "nbytes_stored", "info_complete"]
