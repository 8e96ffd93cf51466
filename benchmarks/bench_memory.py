#!/usr/bin/env python
"""Peak worker memory of a big misaligned write on a process cluster, against its bound.

    python benchmarks/bench_memory.py [--gib 8] [--threads 1 2] [--stores local s3]
                                      [--graph zarrdask before] [--ordered no yes both]
                                      [--block 4900] [--memory-limit 6GiB] [--json out.json]

A float32 array of ``gib`` GiB (``gib * 8192`` x 32,768) is written with
``zarrdask.to_zarr`` into shards of 4,096 x 2,048 (32 MiB, inner chunks 512 x 512, zstd)
from dask blocks of ``block`` x ``block`` (4,900: 91.6 MiB) that cut every shard on
both axes. The source is generated on the workers, block by block, from the global
indices (:func:`fill`): nothing of it travels in the graph, and the same values come out
whatever the chunking, so the check regenerates them in the read's chunks.

Cluster: ``distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=T)``
for each ``T`` of ``--threads``, with ``memory_limit`` per worker; stores: a local
directory, and S3 served by moto on 127.0.0.1 in a process of its own (moto spools
objects over 5 MiB to temporary files, so its memory stays small). Per job:

* the cluster total, with ``distributed.diagnostics.MemorySampler`` (0.1 s);
* per worker, a thread in the worker process sampling its RSS every 10 ms (peak), its
  RSS before the job (the worker's own footprint, after a small warm-up write), whether
  it was ever paused, the bytes spilled (``worker.data``) and the bytes it sent to other
  workers;
* the bound ``2 x (largest block + shard) x T + footprint``;
* afterwards, untimed: the array read back with ``from_zarr`` and compared with the
  regenerated source bit for bit on the cluster (number of differing elements).

Graphs (``--graph``): ``zarrdask``, the library's (misaligned blocks of 16 MiB and more
are cut into piece tasks that feed the write tasks, which run at a priority above the
source's), and ``before``, the graph zarrdask made before that, and still makes for
smaller blocks (:func:`direct_job`: every write task reads whole blocks, no priorities). ``--ordered yes``: the source's blocks carry
priorities that make them in C order (the caller's own ordering; zarrdask cannot reorder
a source it is given), and the write is annotated above them.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the working tree's zarrdask
sys.path.insert(1, str(HERE.parent / "tests"))

os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                  AWS_EC2_METADATA_DISABLED="true")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
from dask.highlevelgraph import HighLevelGraph  # noqa: E402

MiB = 2**20
COLS = 32768
SHARD = (4096, 2048)
INNER = (512, 512)


def fill(bounds: tuple[tuple[int, int], ...], seed: int) -> np.ndarray:
    """The float32 values at the global index ranges ``bounds`` (2-D): a hash of the row
    and one of the column, XORed, as 15 random mantissa bits in [1, 2) (about half
    compressible, like measured data). One block-sized allocation, no temporaries."""
    (r0, r1), (c0, c1) = bounds
    rows = _mix(np.arange(r0, r1, dtype=np.uint32) + np.uint32(seed))
    cols = _mix(np.arange(c0, c1, dtype=np.uint32) * np.uint32(0x9E3779B1))
    out = np.bitwise_xor.outer(rows, cols)
    out &= np.uint32(0x007FFF00)
    out |= np.uint32(0x3F800000)
    return out.view(np.float32)


def _mix(x: np.ndarray) -> np.ndarray:
    """A 32-bit integer hash of every element (murmur3's finaliser)."""
    x = x ^ (x >> np.uint32(16))
    x *= np.uint32(0x85EBCA6B)
    x ^= x >> np.uint32(13)
    x *= np.uint32(0xC2B2AE35)
    x ^= x >> np.uint32(16)
    return x


def _fill_block(seed: int, block_info: dict | None = None) -> np.ndarray:
    """:func:`fill` at a ``map_blocks`` block's place."""
    assert block_info is not None
    return fill(tuple(block_info[None]["array-location"]), seed)


def generated(shape: tuple[int, int], chunks: tuple[tuple[int, ...], ...], seed: int, ordered: bool = False) -> da.Array:
    """A dask array of :func:`fill`'s values in blocks ``chunks``: one small task per block
    (its index ranges), computed where it runs: a ``map_blocks`` (blockwise) layer.
    ``ordered``: the blocks carry a scheduler priority that runs them in C order (first
    block highest), in a layer of their own."""
    name = f"generated-{uuid.uuid4().hex}"
    starts = [np.cumsum((0,) + c) for c in chunks]
    graph = {
        (name, i, j): (fill, ((int(starts[0][i]), int(starts[0][i + 1])), (int(starts[1][j]), int(starts[1][j + 1]))), seed)
        for i in range(len(chunks[0])) for j in range(len(chunks[1]))
    }
    assert sum(chunks[0]) == shape[0] and sum(chunks[1]) == shape[1]
    if not ordered:  # a blockwise layer, as most sources are (reads, map_blocks, arithmetic)
        return da.map_blocks(_fill_block, seed, chunks=chunks, dtype=np.float32, name=name,
                             meta=np.empty((0, 0), np.float32))
    columns = len(chunks[1])
    with dask.annotate(priority=lambda key: len(graph) - (key[1] * columns + key[2])):
        return da.Array(HighLevelGraph.from_collections(name, graph, dependencies=[]), name, chunks, dtype=np.float32)


class Layout(NamedTuple):
    """The array, its dask blocks and its shards, and the sizes the bound is made of."""

    shape: tuple[int, int]
    chunks: tuple[tuple[int, ...], ...]
    shard: tuple[int, int]
    block_bytes: int  # the largest dask block
    shard_bytes: int


def layout(gib: float, block: int) -> Layout:
    """``gib`` GiB of float32, ``gib * 8192`` x 32,768, in ``block`` x ``block`` blocks."""
    shape = (int(gib * 8192), COLS)
    chunks = da.core.normalize_chunks((block, block), shape)
    biggest = 4 * max(chunks[0]) * max(chunks[1])
    return Layout(shape, chunks, SHARD, biggest, 4 * math.prod(SHARD))


def bound(block_bytes: int, shard_bytes: int, threads: int, footprint: int) -> int:
    """The memory a worker should stay under: 2 x (block + shard) per thread, plus what
    the worker held before the job."""
    return 2 * (block_bytes + shard_bytes) * threads + footprint


def cut_everywhere(lay: Layout) -> bool:
    """Whether every interior shard boundary on both axes falls strictly inside a block
    (no block edge meets a shard edge, so every shard is cut or straddled)."""
    for axis in range(2):
        edges = set(np.cumsum(lay.chunks[axis])[:-1].tolist())
        if any(e % lay.shard[axis] == 0 for e in edges):
            return False
    return True


# ----------------------------------------------------------------- the graph, statically


def graph_of(job: Any) -> dict:
    """The materialised graph of a dask collection, as task objects."""
    return convert_graph(job.__dask_graph__())


def ordered_peak(dsk: dict, result_bytes: dict, working_bytes: dict, walk: dict | None = None) -> tuple[int, int]:
    """(peak bytes, most results alive) of running ``dsk`` on one thread in ``dask.order``'s
    priority order (or the priorities ``walk``): a result lives from its task until its last dependent has run, and a
    running task also holds its ``working_bytes`` (the region buffer and the encoded shard)."""
    from dask.order import order

    priority = order(dsk) if walk is None else walk
    waiting = {k: 0 for k in dsk}
    for k, task in dsk.items():
        for d in task.dependencies:
            waiting[d] += 1
    alive, live_bytes, peak, most = set(), 0, 0, 0
    for k in sorted(dsk, key=priority.__getitem__):
        peak = max(peak, live_bytes + working_bytes.get(k, 0) + result_bytes.get(k, 0))
        alive.add(k)
        live_bytes += result_bytes.get(k, 0)
        for d in dsk[k].dependencies:
            waiting[d] -= 1
            if waiting[d] == 0:
                alive.discard(d)
                live_bytes -= result_bytes.get(d, 0)
        most = max(most, len([a for a in alive if result_bytes.get(a, 0)]))
    return peak, most


def ready_peak(dsk: dict, result_bytes: dict, working_bytes: dict, user: Any) -> int:
    """Peak bytes of running ``dsk`` on one thread the way distributed picks tasks: of the
    tasks whose inputs are ready, the highest ``user(key)`` priority first, then
    ``dask.order``'s (the prototype's annotations, simulated)."""
    import heapq

    from dask.order import order

    priority = order(dsk)
    dependents: dict = {k: [] for k in dsk}
    for k, task in dsk.items():
        for d in task.dependencies:
            dependents[d].append(k)
    waiting = {k: len(task.dependencies) for k, task in dsk.items()}
    left = {k: len(v) for k, v in dependents.items()}
    heap = [((-user(k), priority[k]), n, k) for n, k in enumerate(dsk) if not waiting[k]]
    heapq.heapify(heap)
    live = peak = 0
    while heap:
        *_, k = heapq.heappop(heap)
        peak = max(peak, live + working_bytes.get(k, 0) + result_bytes.get(k, 0))
        live += result_bytes.get(k, 0)
        for d in dsk[k].dependencies:
            left[d] -= 1
            if not left[d]:
                live -= result_bytes.get(d, 0)
        for y in dependents[k]:
            waiting[y] -= 1
            if not waiting[y]:
                heapq.heappush(heap, ((-user(y), priority[y]), id(y), y))
    return peak


def sizes(dsk: dict, source: da.Array, plan: Any, itemsize: int = 4) -> tuple[dict, dict]:
    """Result and working bytes per key of a write graph made from ``source`` and ``plan``:
    source blocks weigh their size, pieces theirs, a (fused) stage task holds its block
    while it runs and leaves a small record, a write task holds its region twice."""
    result, working = {}, {}
    block_sizes = {(source.name, *index): itemsize * math.prod(source.chunks[a][i] for a, i in enumerate(index))
                   for index in np.ndindex(*source.numblocks)}
    for k, task in dsk.items():
        if k in block_sizes:
            result[k] = block_sizes[k]
        elif isinstance(k, tuple) and str(k[0]).startswith("zarrdask-piece-"):
            result[k] = itemsize * math.prod(s.stop - s.start for s in task.args[1])
        elif isinstance(k, tuple) and str(k[0]).startswith("zarrdask-stage-"):  # (fused) makes a block, stages it
            working[k] = block_sizes[(source.name, *k[1:])]
        elif isinstance(k, tuple) and str(k[0]).startswith("zarrdask-write-") and "done" not in str(k[0]):
            region = plan.task(k[1:]).region
            working[k] = 2 * itemsize * math.prod(s.stop - s.start for s in region)
    return result, working


# ----------------------------------------------------------------- the graph before pieces


def direct_graph(source: da.Array, target: Any, plan: Any) -> tuple[dict, str]:
    """The write of ``plan`` as zarrdask made it before piece tasks (and as it still makes
    it for blocks under ``CUT_BYTES``): every write task reads the whole source blocks it
    needs, nothing annotated. Returns (graph, final key)."""
    job = _direct(source, target, plan)
    return convert_graph(job.__dask_graph__()), job.key


def _direct(source: da.Array, target: Any, plan: Any) -> Any:
    from zarrdask.dask_io.write_graph import write_graph

    return write_graph(source, target, plan, cut_bytes=2**62)


def convert_graph(graph: Any) -> dict:
    """A graph (a HighLevelGraph or a dict) as a dict of task objects."""
    from dask._task_spec import convert_legacy_graph

    return convert_legacy_graph(dict(graph.to_dict() if hasattr(graph, "to_dict") else graph))


def direct_job(source: da.Array, url: str, options: dict[str, Any] | None, lay: Layout) -> Any:
    """A ``Delayed`` writing ``source`` into a new array ``t`` at ``url`` through
    :func:`direct_graph`'s layers (they take the annotations in effect)."""
    import zarrdask
    from zarrdask.plan import make_write_plan

    zarrdask.create_group(url, storage_options=options)
    target = zarrdask.create_array(url, name="t", shape=lay.shape, dtype="f4", chunks=INNER, shards=lay.shard,
                                   storage_options=options).with_options(threads=1)
    return _direct(source, target, make_write_plan(lay.shape, lay.chunks, lay.shard))


def write_order(dsk: dict, writes: list) -> dict:
    """Priorities that run the write tasks ``writes`` in that order, each right after the
    tasks it still needs (depth first), then the rest."""
    priority: dict = {}

    def visit(k: Any) -> None:
        stack = [(k, False)]
        while stack:
            key, expanded = stack.pop()
            if key in priority:
                continue
            if expanded:
                priority[key] = len(priority)
                continue
            stack.append((key, True))
            stack.extend((d, False) for d in sorted(dsk[key].dependencies, key=str, reverse=True) if d not in priority)

    for k in writes:
        visit(k)
    for k in dsk:
        visit(k)
    return priority


def order_report(lay: Layout, seed: int = 7) -> dict[str, tuple[int, int]]:
    """One-thread peaks of zarrdask's write graph and of the graph before pieces: in
    dask.order's order (the threaded scheduler), with the writes in C order, and as
    distributed picks ready tasks under the graph's priorities with the source as given
    and with the source in C order."""
    import zarrdask
    from zarrdask.plan import make_write_plan

    source = generated(lay.shape, lay.chunks, seed)
    plan = make_write_plan(lay.shape, lay.chunks, lay.shard)
    with tempfile.TemporaryDirectory() as tmp:
        job = zarrdask.to_zarr(source, f"{tmp}/a.zarr", path="t", chunks=INNER, shards=lay.shard, compute=False)
        ours = graph_of(job)
        target = zarrdask.create_array(f"{tmp}/b.zarr", shape=lay.shape, dtype="f4", chunks=INNER, shards=lay.shard)
        before, _ = direct_graph(source, target, plan)
    report = {}
    for what, dsk in (("zarrdask (to_zarr's graph)", ours), ("before (write tasks on whole blocks)", before)):
        writes = sorted((k for k in dsk if isinstance(k, tuple) and "write" in str(k[0]) and "done" not in str(k[0])),
                        key=lambda k: k[1:])
        report[f"{what}, dask.order"] = ordered_peak(dsk, *sizes(dsk, source, plan))
        report[f"{what}, writes in C order"] = ordered_peak(dsk, *sizes(dsk, source, plan), walk=write_order(dsk, writes))
        report[f"{what}, priorities, source as given"] = (
            ready_peak(dsk, *sizes(dsk, source, plan), user=lambda k: prioritised(k, source, ordered=False)), 0)
        report[f"{what}, priorities, source in C order"] = (
            ready_peak(dsk, *sizes(dsk, source, plan), user=lambda k: prioritised(k, source, ordered=True)), 0)
    return report


def prioritised(key: Any, source: da.Array, ordered: bool) -> int:
    """Scheduler priorities: writes and pieces above every block (zarrdask's annotation),
    and with ``ordered`` the blocks in C order (the caller's)."""
    blocks = math.prod(source.numblocks)
    if isinstance(key, tuple) and key[0] == source.name:
        return blocks - int(np.ravel_multi_index(key[1:], source.numblocks)) if ordered else 0
    if isinstance(key, tuple) and str(key[0]).startswith(("zarrdask-write-", "zarrdask-piece-")):
        return blocks + 1
    return 0


# ----------------------------------------------------------------- on the workers


def _start_sampler(dask_worker: Any, interval: float = 0.01) -> int:
    """Start sampling this worker's RSS (peak), pause and spill in a thread; returns the
    RSS now (the footprint)."""
    import threading

    import psutil
    from distributed.core import Status

    proc = psutil.Process()
    rss = proc.memory_info().rss
    state = {"base": rss, "peak": rss, "paused": False, "spilled": 0, "stop": threading.Event(),
             "sent0": dask_worker.transfer_outgoing_bytes_total}

    def spilled() -> int:
        total = getattr(dask_worker.data, "spilled_total", None)
        return int(total.memory) if total is not None else 0

    def loop() -> None:
        while not state["stop"].is_set():
            now = proc.memory_info().rss
            if now > state["peak"]:
                state["peak"] = now
            if dask_worker.status == Status.paused:
                state["paused"] = True
            state["spilled"] = max(state["spilled"], spilled())
            state["stop"].wait(interval)

    dask_worker._bench_memory = state
    threading.Thread(target=loop, name="bench-memory-sampler", daemon=True).start()
    return rss


def _stop_sampler(dask_worker: Any) -> dict[str, Any]:
    state = dask_worker._bench_memory
    state["stop"].set()
    disk = {str(k): v for k, v in dask_worker.digests_total.items() if "disk" in str(k)}
    return {"footprint": state["base"], "peak": state["peak"], "paused": state["paused"],
            "spilled_bytes": state["spilled"], "disk_digests": disk,
            "sent_bytes": dask_worker.transfer_outgoing_bytes_total - state["sent0"]}


# ----------------------------------------------------------------- the job


def mismatches(url: str, seed: int, options: dict[str, Any] | None) -> int:
    """Elements of the stored array whose bits differ from the source (on the cluster)."""
    import zarrdask

    back = zarrdask.from_zarr(url, path="t", storage_options=options)
    expected = generated(back.shape, back.chunks, seed)
    return int((back.view(np.uint32) != expected.view(np.uint32)).sum().compute())


def run_one(client: Any, lay: Layout, threads: int, url: str, options: dict[str, Any] | None, seed: int,
            ordered: bool = False, graph: str = "zarrdask") -> dict:
    """One write of ``lay`` into ``url``: times, memory and the check. ``ordered``: the
    source's blocks prioritised in C order and the write annotated above them, with
    ``dask.annotate(priority=...)``; ``graph="before"``: the graph before piece tasks
    (:func:`direct_job`) instead of ``zarrdask.to_zarr``'s."""
    import distributed
    from distributed.diagnostics import MemorySampler

    import zarrdask

    # warm-up: imports, the store's client, the codec contexts, on both workers
    warm = f"{url}-warm"
    zarrdask.to_zarr(generated((512, 4096), ((256, 256), (2048, 2048)), seed), warm, path="t", chunks=(128, 128),
                     shards=(256, 2048), storage_options=options, compute=True)
    client.run(lambda: __import__("gc").collect())
    footprints = client.run(_start_sampler)
    sampler = MemorySampler()
    source = generated(lay.shape, lay.chunks, seed, ordered=ordered)
    start = time.perf_counter()
    with sampler.sample("write", interval=0.1):
        with dask.annotate(priority=math.prod(source.numblocks) + 1) if ordered else contextlib.nullcontext():
            if graph == "before":
                job = direct_job(source, url, options, lay)
            else:
                job = zarrdask.to_zarr(source, url, path="t", chunks=INNER, shards=lay.shard, storage_options=options,
                                       compute=False, staging=None if graph == "zarrdask" else False)
        distributed.wait(client.compute(job))
        seconds = time.perf_counter() - start
    workers = client.run(_stop_sampler)
    total = sampler.to_pandas()["write"]
    check_start = time.perf_counter()
    bad = mismatches(url, seed, options)
    result = {
        "threads": threads, "ordered": ordered, "graph": graph, "seconds": seconds, "gib_per_s": lay.shape[0] * lay.shape[1] * 4 / 2**30 / seconds,
        "cluster_peak": int(total.max()), "cluster_before": int(total.iloc[0]),
        "mismatched_elements": bad, "check_seconds": time.perf_counter() - check_start, "workers": {},
    }
    for address, w in workers.items():
        limit = bound(lay.block_bytes, lay.shard_bytes, threads, footprints[address])
        result["workers"][address] = {**w, "bound": limit, "within": w["peak"] <= limit,
                                      "above_footprint": w["peak"] - w["footprint"]}
    return result


def describe(store: str, r: dict) -> str:
    lines = [f"  {store:5s} T={r['threads']} {r['graph']} {'C-ordered' if r['ordered'] else 'as is'}: write {r['seconds']:.1f} s ({r['gib_per_s']:.2f} GiB/s), "
             f"cluster peak {r['cluster_peak'] / MiB:.0f} MiB (before {r['cluster_before'] / MiB:.0f} MiB), "
             f"bit-exact: {r['mismatched_elements'] == 0} ({r['mismatched_elements']} differ); "
             f"loadavg after {r.get('loadavg_after')}"]
    for address, w in sorted(r["workers"].items()):
        lines.append(
            f"      worker {address.rsplit(':', 1)[-1]}: peak {w['peak'] / MiB:.0f} MiB = footprint "
            f"{w['footprint'] / MiB:.0f} + {w['above_footprint'] / MiB:.0f}; bound {w['bound'] / MiB:.0f} MiB "
            f"-> {'within' if w['within'] else 'ABOVE'}; paused {w['paused']}, spilled {w['spilled_bytes']} B, "
            f"sent to the other worker {w['sent_bytes'] / MiB:.0f} MiB")
    return "\n".join(lines)


def moto_process() -> tuple[Any, str]:
    """moto's S3 server in a process of its own on 127.0.0.1 (not in the process of the
    client and the scheduler, where its work would delay the scheduler's answers), and its
    endpoint, once it answers."""
    import socket
    import subprocess
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(endpoint, timeout=1).close()
            return server, endpoint
        except OSError:
            time.sleep(0.05)
    server.terminate()
    raise RuntimeError(f"moto_server did not answer on {endpoint}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gib", type=float, default=8)
    p.add_argument("--block", type=int, default=4900)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--stores", nargs="+", default=["local", "s3"], choices=["local", "s3"])
    p.add_argument("--memory-limit", default="6GiB")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--ordered", choices=["no", "yes", "both"], default="both",
                   help="yes: the source's blocks prioritised in C order, the writes above them (default: both runs)")
    p.add_argument("--graph", nargs="+", choices=["zarrdask", "unstaged", "before"], default=["zarrdask"],
                   help="zarrdask: to_zarr's graph (pieces staged through the store); unstaged: the same with "
                        "staging=False (pieces wait in memory); before: every write task on whole blocks, no "
                        "priorities")
    p.add_argument("--stealing", choices=["on", "off"], default="on",
                   help="distributed's work stealing (distributed.scheduler.work-stealing); on is its default")
    p.add_argument("--order-only", action="store_true", help="print dask.order's one-thread peaks and exit")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    import distributed

    lay = layout(args.gib, args.block)
    if args.order_only:
        for what, (peak, alive) in order_report(lay, args.seed).items():
            print(f"  {what}: one-thread peak {peak / MiB:.0f} MiB" + (f", {alive} results alive at most" if alive else ""))
        return
    print(f"work stealing {args.stealing}; {lay.shape[0]} x {lay.shape[1]} float32 ({args.gib:g} GiB); dask blocks up to {lay.block_bytes / MiB:.1f} MiB "
          f"({len(lay.chunks[0])} x {len(lay.chunks[1])}), shards {lay.shard} ({lay.shard_bytes / MiB:.0f} MiB, inner "
          f"{INNER}, zstd), every shard cut: {cut_everywhere(lay)}; 2 workers, memory_limit {args.memory_limit} each; "
          f"loadavg {open('/proc/loadavg').read().split()[:3]}", flush=True)
    orders = {"no": [False], "yes": [True], "both": [False, True]}[args.ordered]
    server = None
    results: dict[str, list[dict]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    try:
        for store in args.stores:
            options = None
            if store == "s3":
                import s3fs
                from _s3 import s3_storage_options

                server, endpoint = moto_process()
                options = s3_storage_options(endpoint)
                s3fs.S3FileSystem(**options, skip_instance_cache=True).mkdir("bench")
            for threads in args.threads:
                with dask.config.set({"distributed.scheduler.work-stealing": args.stealing == "on"}), \
                        distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=threads,
                                                 memory_limit=args.memory_limit, dashboard_address=None,
                                                 local_directory=str(scratch / "workers")) as cluster, \
                        distributed.Client(cluster) as client:
                    for _, graph, ordered in itertools.product(range(args.repeat), args.graph, orders):
                        url = f"s3://bench/{uuid.uuid4().hex}.zarr" if store == "s3" else str(scratch / f"{uuid.uuid4().hex}.zarr")
                        load = open('/proc/loadavg').read().split()[:3]
                        print(f"  [{store} T={threads} graph={graph} ordered={ordered}] loadavg {load}", flush=True)
                        r = run_one(client, lay, threads, url, options, args.seed, ordered, graph)
                        r["loadavg_before"] = load
                        r["loadavg_after"] = open('/proc/loadavg').read().split()[:3]
                        results.setdefault(f"{store} T={threads} ordered={ordered} graph={graph}", []).append(r)
                        print(describe(store, r), flush=True)
                        if store == "local":
                            shutil.rmtree(url, ignore_errors=True)
                            shutil.rmtree(f"{url}-warm", ignore_errors=True)
            if server is not None:
                server.terminate()
                server.wait()
                server = None
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    if args.repeat > 1:
        print("medians:")
        for what, rs in results.items():
            peak = statistics.median(max(w["peak"] for w in r["workers"].values()) for r in rs)
            print(f"  {what}: write {statistics.median(r['seconds'] for r in rs):.1f} s, "
                  f"largest worker peak {peak / MiB:.0f} MiB")
    if args.json:
        args.json.write_text(json.dumps({"layout": lay._asdict(), "memory_limit": args.memory_limit,
                                         "results": results}, indent=1, default=str))


if __name__ == "__main__":
    main()
