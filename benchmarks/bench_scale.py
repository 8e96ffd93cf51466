#!/usr/bin/env python
"""Scale: a 1 PB write planned on the client, tiny shards on a process cluster, many workers.

    python benchmarks/bench_scale.py plan     [--shards 1e6 1e7 1e8]
    python benchmarks/bench_scale.py pieces
    python benchmarks/bench_scale.py task     [--repeat 5] [--dir /dev/shm]
    python benchmarks/bench_scale.py cluster  [--repeat 3] [--flat 1024 4096 16384] [--grouped 65536]
                                              [--task-size 16384] [--dir DIR] [--keep | --delete-each] [--source]
    python benchmarks/bench_scale.py workers  [--repeat 3] [--shards 4096] [--many 16]

``plan``: builds, without running, ``zarrdask.to_zarr(x, path, compute=False)`` of a lazy
``da.zeros`` of 10^15 bytes (float32, 10^7 x 2.5*10^7) into 10^6, 10^7 or 10^8 shards,
from dask blocks equal to the shards ("aligned") or shifted by half a shard, so that
every shard is cut along both axes ("cut", four blocks per shard), ungrouped and with
``task_size="auto"``; then ``plan_write`` (the summary) and ``from_zarr`` of the same
array (default blocks and ``chunks="auto"``). Each configuration runs in its own process
twice: once timed (peak RSS from ``VmHWM``), once under ``tracemalloc`` (peak Python
allocations per phase). Only metadata touches the disk.

``pieces``: the client and worker cost of one grouped write task of 8,192 source blocks
(``PlanWrites.task`` building it, ``write_region`` assembling its buffer), against one copy.

``task``: one task of the grouped row below in this process: its source block (8,100
shards) computed fresh, then written on one thread; the time per shard.

``cluster``: ``distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1)``.
Float32 arrays of shards of 64 x 64 (16 KiB, inner chunks 32 x 32, default codecs) whose
values are computed on the workers (``(i * ncols + j) mod 2**24``, no data in the graph).
Ungrouped: source blocks = shards, ``from_zarr(path).sum()`` for the read (one task per
shard). Grouped: a source of ``array.chunk-size`` blocks of whole shards (dask's ``"auto"``
with the shards as previous chunks: 5760 x 5760 at 65,536 shards, one write task each) and
``from_zarr(path, chunks="auto").sum()``; also a shard-sized source written with
``task_size="auto"`` (``--task-size`` shards: its source is still one task per shard). Every written array is compared bit for bit on the cluster
(untimed). Every row is warmed up first, then the rows run in turn, ``--repeat`` rounds.
Reports medians over the rounds with min and max, each row against the first ungrouped one, per shard costs, and
the graph bytes the client sends (distributed's "Sending large graph" size), and the
workers' CPU seconds (user + system) per write and read. ``--dir``:
where the arrays go (default the temp dir; ``/dev/shm`` takes the disk out). The arrays
are deleted together at the end of the invocation; ``--keep`` deletes nothing (the
directory is printed; delete it yourself, later), ``--delete-each`` deletes each array
right after its run. Why not after each run by default: on an ext4 without a journal
(this project's benchmark machine), creating a file within minutes of many deletes in the
same block groups first walks the freed inodes (the kernel's check for recently deleted
ones, up to 6 minutes while their inode table block is dirty), so a run right after a
65,536-file delete, its own or another program's, pays for it (``--delete-each`` shows
it); the end-of-invocation delete still slows the next invocation's first minutes. ``--source`` also times computing the source alone (its sum) before each write.

``workers``: the same ungrouped write and read on ``--many`` single-thread worker
processes against 2.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the working tree's zarrdask

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402

from dask.array.core import PerformanceWarning, normalize_chunks  # noqa: E402

import zarrdask  # noqa: E402
from zarrdask.nodes.block_reader import BlockReader  # noqa: E402

warnings.filterwarnings("ignore", category=PerformanceWarning)  # the broadcast in values() multiplies blocks

PB_SHAPE = (10**7, 25 * 10**6)  # float32: 10^15 bytes
PB_LAYOUTS = {  # shards -> (shard shape, inner chunk shape)
    10**6: ((10_000, 25_000), (1_000, 1_000)),
    10**7: ((5_000, 5_000), (1_000, 1_000)),
    10**8: ((1_000, 2_500), (500, 500)),
}
SHARD = (64, 64)  # float32: 16 KiB
INNER = (32, 32)


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[:3].__str__()


def vm_hwm_mib() -> float:
    """This process's peak resident memory so far (MiB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# ---------------------------------------------------------------------------------- plan


def pb_chunks(shard: tuple[int, int], blocks: str) -> tuple[tuple[int, ...], ...]:
    """Dask chunks over the 1 PB shape: the shards, or the shards shifted by half a shard."""
    out = []
    for n, s in zip(PB_SHAPE, shard):
        count = n // s
        out.append((s,) * count if blocks == "aligned" else (s // 2,) + (s,) * (count - 1) + (s - s // 2,))
    return tuple(out)


def plan_one(shards: int, blocks: str, task_size: str | None, trace: bool) -> dict[str, Any]:
    """One configuration of ``plan``, in this process: phase times, memory and counts."""
    shard, inner = PB_LAYOUTS[shards]
    where = tempfile.mkdtemp(prefix="bench-scale-")
    path = os.path.join(where, "pb.zarr")
    phases: dict[str, dict[str, float]] = {}
    out: dict[str, Any] = {"shards": shards, "blocks": blocks, "task_size": task_size, "phases": phases}

    def phase(name: str, fn: Callable[[], Any]) -> Any:
        if trace:
            tracemalloc.reset_peak()
        t0 = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - t0
        phases[name] = {"s": seconds, "rss_peak_mib": vm_hwm_mib()}
        if trace:
            phases[name]["traced_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        return result

    if trace:
        tracemalloc.start()
    try:
        x = phase("lazy source (da.zeros)", lambda: da.zeros(PB_SHAPE, chunks=pb_chunks(shard, blocks), dtype="f4"))
        out["source_blocks"] = int(np.prod(x.numblocks, dtype=object))
        phase("create metadata", lambda: zarrdask.create_array(path, shape=PB_SHAPE, dtype="f4", chunks=inner,
                                                                shards=shard, fill_value=0))
        writes = phase("to_zarr graph (open, plan, graph)",
                       lambda: zarrdask.to_zarr(x, path, mode="r+", compute=False, task_size=task_size))
        out["graph_layers"] = {name: len(layer) for name, layer in writes.dask.layers.items()}
        summary = phase("plan_write summary", lambda: zarrdask.plan_write(x, path, task_size=task_size))
        out["write_tasks"] = summary.write_tasks
        out["units_per_task"] = [summary.max_units_per_task, summary.median_units_per_task]
        out["max_task_bytes"] = summary.max_task_bytes
        read = phase("from_zarr graph", lambda: zarrdask.from_zarr(path))
        out["read_blocks"] = int(np.prod(read.numblocks, dtype=object))
        auto = phase('from_zarr(chunks="auto") graph', lambda: zarrdask.from_zarr(path, chunks="auto"))
        out["auto_read_blocks"] = int(np.prod(auto.numblocks, dtype=object))
        out["auto_read_block"] = [c[0] for c in auto.chunks]
        out["rss_peak_mib"] = vm_hwm_mib()
    finally:
        shutil.rmtree(where, ignore_errors=True)
    return out


def run_plan(args: argparse.Namespace) -> None:
    print(f"loadavg {loadavg()}")
    rows = []
    for shards in (int(float(s)) for s in args.shards):
        for blocks in ("aligned", "cut"):
            for task_size in (None, "auto"):
                runs = {}
                for trace in (False, True):
                    cmd = [sys.executable, __file__, "plan-one", str(shards), blocks, str(task_size), str(int(trace))]
                    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
                    runs[trace] = json.loads(done.stdout.strip().splitlines()[-1])
                timed, traced = runs[False], runs[True]
                rows.append((timed, traced))
                print(f"\n{shards:.0e} shards, {blocks} blocks ({timed['source_blocks']:,} source blocks), "
                      f"task_size={task_size}: {timed['write_tasks']:,} write tasks "
                      f"(units per task max/median {timed['units_per_task']}, largest {timed['max_task_bytes'] / 2**20:.0f} MiB); "
                      f"read blocks {timed['read_blocks']:,}, auto {timed['auto_read_blocks']:,} of {timed['auto_read_block']}; "
                      f"peak RSS {timed['rss_peak_mib']:.0f} MiB")
                for name, ph in timed["phases"].items():
                    print(f"  {name:36s} {ph['s'] * 1000:9.1f} ms   traced peak "
                          f"{traced['phases'][name]['traced_peak_mib']:8.2f} MiB   RSS after {ph['rss_peak_mib']:6.0f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps([r for r in rows], indent=1))


# -------------------------------------------------------------------------------- task


def run_task(args: argparse.Namespace) -> None:
    """One grouped write task's work in this process, as a worker does it: the source block
    of the 65,536-shard row (5760 x 5760, 8,100 shards) computed fresh, then written with
    ``a[...] = block`` on one thread (a worker of one thread encodes 4 KiB inner chunks
    serially too)."""
    n = side(8100)
    x = values((n, n), (n, n))
    where = tempfile.mkdtemp(prefix="bench-scale-task-", dir=args.dir)
    print(f"loadavg {loadavg()}  arrays in {where} ({file_system(where)})")
    try:
        for i in range(args.repeat):
            t0 = time.perf_counter()
            block = x.compute(scheduler="sync")
            t1 = time.perf_counter()
            a = zarrdask.create_array(os.path.join(where, f"a{i}.zarr"), shape=(n, n), dtype="f4", chunks=INNER,
                                      shards=SHARD, fill_value=0, threads=1)
            a[...] = block
            t2 = time.perf_counter()
            del block  # (the next block reuses its memory, as on a worker)
            print(f"source {t1 - t0:.3f} s   write {t2 - t1:.3f} s ({(t2 - t1) / 8100 * 1e6:.0f} us per shard)",
                  flush=True)
    finally:
        shutil.rmtree(where, ignore_errors=True)


# -------------------------------------------------------------------------------- pieces


def run_pieces(args: argparse.Namespace) -> None:
    from zarrdask.dask_io.write_graph import PlanWrites, write_region
    from zarrdask.plan import make_write_plan

    print(f"loadavg {loadavg()}")
    shape = (16384, 16384)
    x = da.zeros(shape, chunks=SHARD, dtype="f4")
    plan = make_write_plan(shape, x.chunks, SHARD, task_bytes=128 * 2**20, itemsize=4)
    writes = PlanWrites("w", x.name, None, plan)  # type: ignore[arg-type]
    key = next(iter(writes.keys()))
    t = best(lambda: writes.task(key), 5)
    task = writes.task(key)
    layout, refs = task.args[2], task.args[3]
    pieces = len(refs.dependencies)
    print(f"grouped task: {len(plan):,} tasks for {np.prod(x.numblocks):,} blocks; one task has {pieces:,} blocks")
    print(f"  PlanWrites.task (client/scheduler, per task): {t * 1000:.1f} ms = {t / pieces * 1e6:.2f} us per block")
    print(f"  pickled task arguments: layout {len(pickle.dumps(layout)):,} B, block references "
          f"{len(pickle.dumps(refs)):,} B")

    class Sink:  # write_region's target: stores nothing, so only the assembly is timed
        store = None

        def __setitem__(self, key: Any, value: Any) -> None:
            pass

    blocks = [np.full(SHARD, i, dtype="f4") for i in range(pieces)]
    region = plan.task(key[1:]).region
    t_assemble = best(lambda: write_region(Sink(), region, layout, blocks), 5)  # type: ignore[arg-type]
    whole = np.zeros([s.stop - s.start for s in region], dtype="f4")
    t_copy = best(lambda: whole.copy(), 5)
    print(f"  write_region assembly: {t_assemble * 1000:.1f} ms ({t_assemble / pieces * 1e6:.2f} us per block); "
          f"one copy of the same {whole.nbytes / 2**20:.0f} MiB: {t_copy * 1000:.1f} ms")


def best(fn: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# ------------------------------------------------------------------------------- cluster


def values(shape: tuple[int, int], chunks: Any) -> da.Array:
    """Deterministic float32 values computed on the workers, exact in float32, in blocks
    ``chunks`` (``"auto"``: dask's ``array.chunk-size`` blocks of whole shards)."""
    if isinstance(chunks, str):
        chunks = normalize_chunks(chunks, shape, dtype="f4", previous_chunks=SHARD)
    # (i * columns + j) mod 2**24, with the row term reduced first on the 1-D row index, so
    # a block is made through int32 temporaries (int64 ones tripled the source's cost)
    rows = (da.arange(shape[0], chunks=(chunks[0],), dtype="i8") * shape[1] % 2**24).astype("i4")
    j = da.arange(shape[1], chunks=(chunks[1],), dtype="i4")
    return ((rows[:, None] + j[None, :]) & (2**24 - 1)).astype("f4")


def side(shards: int) -> int:
    n = int(round(shards**0.5))
    assert n * n == shards, f"{shards} is not a square number of shards"
    return n * SHARD[0]


class GraphSize:
    """The bytes distributed's client sends for a graph (its "Sending large graph" size,
    caught by setting the warning threshold to one byte)."""

    def __init__(self) -> None:
        self.sizes: list[str] = []

    def compute(self, client: Any, collection: Any) -> Any:
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1B"}), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = client.compute(collection).result()
        for w in caught:
            text = str(w.message)
            if text.startswith("Sending large graph of size"):
                self.sizes.append(text.split("size ")[1].split(".\n")[0])
        return result


def worker_cpu() -> float:
    """This process's user + system CPU seconds (run on each worker)."""
    usage = os.times()
    return usage.user + usage.system


def cluster_cpu(client: Any) -> float:
    """The workers' CPU seconds so far, summed: less sensitive than wall time to what else
    runs on the machine."""
    return sum(client.run(worker_cpu).values())


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def write_read(client: Any, where: str, shards: int, mode: str, sizes: GraphSize, delete: bool = False,
               source: bool = False) -> dict[str, Any]:
    """One write and one read of ``shards`` shards; ``mode``: "ungrouped", "grouped"
    (big source blocks, auto read) or "task_size" (shard-sized source, grouped writes).
    ``delete``: delete the array after the run (else the caller does); ``source``: also
    time the source alone."""
    n = side(shards)
    path = os.path.join(where, f"{mode}-{shards}-{time.monotonic_ns()}.zarr")
    source_chunks = "auto" if mode == "grouped" else SHARD
    x = values((n, n), source_chunks)
    task_size = "auto" if mode == "task_size" else None
    writes = zarrdask.to_zarr(x, path, compute=False, chunks=INNER, shards=SHARD, fill_value=0, task_size=task_size)
    layer_tasks = {k.split("-")[1] + ("-done" if "done" in k else ""): len(v) for k, v in writes.dask.layers.items()
                   if k.startswith("zarrdask-write")}
    plan_writes = next(v.source for k, v in writes.dask.layers.items() if k.startswith("zarrdask-write-")
                       and "done" not in k)
    own = {"writer Array": len(pickle.dumps(plan_writes.target)), "plan": len(pickle.dumps(plan_writes.plan)),
           "reader": len(pickle.dumps(BlockReader(zarrdask.open_array(path))))}
    cpu_source = cluster_cpu(client)
    t_source = timed(lambda: client.compute(x.sum(dtype="f8")).result()) if source else float("nan")
    cpu0 = cluster_cpu(client)
    t_write = timed(lambda: sizes.compute(client, writes))
    cpu1 = cluster_cpu(client)
    read = zarrdask.from_zarr(path, chunks="auto" if mode != "ungrouped" else None)
    t_read = timed(lambda: sizes.compute(client, read.sum(dtype="f8")))
    cpu2 = cluster_cpu(client)
    # bit-exact check on the cluster, untimed: the read against the same values computed there
    same = client.compute((read == values((n, n), read.chunks)).all()).result()
    if not same:
        raise AssertionError(f"{mode} {shards}: the array read back differs from the source")
    if delete:
        shutil.rmtree(path, ignore_errors=True)
    return {"source": t_source, "write": t_write, "read": t_read, "source_cpu": cpu0 - cpu_source if source else float("nan"), "write_cpu": cpu1 - cpu0, "read_cpu": cpu2 - cpu1, "read_blocks": read.npartitions, "write_layers": layer_tasks,
            "own_pickled_bytes": own}


def summarize(label: str, runs: list[dict[str, Any]], shards: int) -> dict[str, Any]:
    row: dict[str, Any] = {"label": label, "shards": shards}
    for what in ("source", "write", "read", "source_cpu", "write_cpu", "read_cpu"):
        times = [r[what] for r in runs]
        row[what] = {"median": statistics.median(times), "min": min(times), "max": max(times)}
        row[what]["per_shard_ms"] = 1000 * row[what]["median"] / shards
    row["read_blocks"] = runs[0]["read_blocks"]
    row["write_layers"] = runs[0]["write_layers"]
    row["own_pickled_bytes"] = runs[0]["own_pickled_bytes"]
    print(f"{label:44s} write {row['write']['median']:7.2f} s [{row['write']['min']:.2f}-{row['write']['max']:.2f}] "
          f"({row['write']['per_shard_ms']:.2f} ms/shard)   read {row['read']['median']:7.2f} s "
          f"[{row['read']['min']:.2f}-{row['read']['max']:.2f}] ({row['read']['per_shard_ms']:.2f} ms/shard)   "
          f"tasks: write {row['write_layers']}, read {row['read_blocks']}   workers' CPU: write "
          f"{row['write_cpu']['median']:.2f} s [{row['write_cpu']['min']:.2f}-{row['write_cpu']['max']:.2f}], read "
          f"{row['read_cpu']['median']:.2f} s"
          + (f"   source alone {row['source']['median']:.2f} s [{row['source']['min']:.2f}-{row['source']['max']:.2f}]"
             f", workers' CPU {row['source_cpu']['median']:.2f} s"
             if row["source"]["median"] == row["source"]["median"] else ""), flush=True)
    return row


def cluster(n_workers: int) -> Any:
    import distributed

    return distributed.LocalCluster(processes=True, n_workers=n_workers, threads_per_worker=1,
                                    dashboard_address=":0", silence_logs=50)


def measure(client: Any, where: str, label: str, shards: int, mode: str, repeat: int,
            sizes: GraphSize, delete: bool = False, source: bool = False) -> dict[str, Any]:
    write_read(client, where, min(shards, 1024), mode, GraphSize(), delete)  # warm-up (imports, pools), untimed
    runs = [write_read(client, where, shards, mode, sizes, delete, source) for _ in range(repeat)]
    return summarize(label, runs, shards)


def file_system(path: str) -> str:
    """The type of the file system holding ``path`` (the longest mount point above it)."""
    path, best_mount = os.path.realpath(path), ("", "?")
    for line in Path("/proc/mounts").read_text().splitlines():
        _, mount, kind = line.split()[:3]
        if (path == mount or path.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best_mount[0]):
            best_mount = (mount, kind)
    return f"{best_mount[1]} at {best_mount[0]}"


def deletion(args: argparse.Namespace) -> str:
    if args.keep:
        return "kept (delete it later)"
    return "each deleted after its run" if args.delete_each else "deleted together at the end"


def run_cluster(args: argparse.Namespace) -> None:
    """Every row's warm-up, then ``--repeat`` rounds of one run of each row in turn (so a
    change in the machine's speed during the invocation reaches every row alike)."""
    import distributed

    where = tempfile.mkdtemp(prefix="bench-scale-", dir=args.dir)
    rows = [(n, "ungrouped", f"ungrouped {n} shards") for n in args.flat]
    rows += [(n, "grouped", f"grouped {n} shards (auto blocks)") for n in args.grouped]
    rows += [(n, "task_size", f"task_size='auto' {n} shards (shard blocks)") for n in args.task_size]
    results = []
    try:
        with cluster(2) as c, distributed.Client(c) as client:
            print(f"loadavg {loadavg()}  2 workers x 1 thread, repeat {args.repeat} (rows interleaved), arrays in "
                  f"{where} ({file_system(where)}), {deletion(args)}", flush=True)
            for shards, mode, _ in rows:  # warm-up (imports, pools), untimed
                write_read(client, where, min(shards, 1024), mode, GraphSize(), args.delete_each)
            sizes = [GraphSize() for _ in rows]
            runs: list[list[dict[str, Any]]] = [[] for _ in rows]
            for _ in range(args.repeat):
                for k, (shards, mode, _) in enumerate(rows):
                    runs[k].append(write_read(client, where, shards, mode, sizes[k], args.delete_each, args.source))
            for k, (shards, _, label) in enumerate(rows):
                results.append(summarize(label, runs[k], shards))
                results[-1]["graph_sizes"] = sizes[k].sizes[:2]
                print(f"  graph sent (write, read): {sizes[k].sizes[:2]}; zarrdask's own objects pickled (bytes, "
                      f"once per graph): {results[-1]['own_pickled_bytes']}", flush=True)
            base = next((r for r, (_, mode, _) in zip(results, rows) if mode == "ungrouped"), None)
            for r, (_, mode, label) in zip(results, rows):
                if base is not None and mode != "ungrouped":
                    print(f"{label} / {base['label']}: write {r['write']['median'] / base['write']['median']:.2f}x, "
                          f"read {r['read']['median'] / base['read']['median']:.2f}x", flush=True)
            print(f"loadavg {loadavg()}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def run_workers(args: argparse.Namespace) -> None:
    import distributed

    where = tempfile.mkdtemp(prefix="bench-scale-", dir=args.dir)
    rows = []
    try:
        for n_workers in (2, args.many):
            with cluster(n_workers) as c, distributed.Client(c) as client:
                client.wait_for_workers(n_workers)
                print(f"loadavg {loadavg()}  {n_workers} workers x 1 thread", flush=True)
                rows.append(measure(client, where, f"{n_workers} workers, {args.shards} shards ungrouped",
                                    args.shards, "ungrouped", args.repeat, GraphSize(), args.delete_each))
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    for what in ("write", "read"):
        ratio = rows[1][what]["median"] / rows[0][what]["median"]
        print(f"{what}: {args.many} workers / 2 workers = {ratio:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "plan-one":  # a child of ``plan``
        shards, blocks, task_size, trace = sys.argv[2:6]
        result = plan_one(int(shards), blocks, None if task_size == "None" else task_size, trace == "1")
        print(json.dumps(result))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan")
    plan.add_argument("--shards", nargs="+", default=["1e6", "1e7", "1e8"])
    sub.add_parser("pieces")
    task = sub.add_parser("task")
    task.add_argument("--repeat", type=int, default=5)
    task.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                      help="where the arrays are written (default: /dev/shm where there is one)")
    for name in ("cluster", "workers"):
        s = sub.add_parser(name)
        s.add_argument("--repeat", type=int, default=3)
        s.add_argument("--dir", default=None, help="where the arrays are written (default: the temp dir)")
        kept = s.add_mutually_exclusive_group()
        kept.add_argument("--keep", action="store_true",
                          help="delete no array (not after each run, not at the end): delete the printed directory later")
        kept.add_argument("--delete-each", action="store_true",
                          help="delete each array right after its run (default: all at the end)")
    sub.choices["cluster"].add_argument("--flat", type=int, nargs="*", default=[1024, 4096, 16384])
    sub.choices["cluster"].add_argument("--grouped", type=int, nargs="*", default=[65536])
    sub.choices["cluster"].add_argument("--task-size", type=int, nargs="*", default=[16384],
                                        help="shards written from shard-sized blocks with task_size='auto'")
    sub.choices["cluster"].add_argument("--source", action="store_true",
                                        help="also time the source alone (its sum on the cluster)")
    sub.choices["workers"].add_argument("--shards", type=int, default=4096)
    sub.choices["workers"].add_argument("--many", type=int, default=16)
    for s in sub.choices.values():
        s.add_argument("--json", default=None, help="also write the results here")
    args = p.parse_args()
    {"plan": run_plan, "pieces": run_pieces, "task": run_task, "cluster": run_cluster,
     "workers": run_workers}[args.command](args)


if __name__ == "__main__":
    main()
