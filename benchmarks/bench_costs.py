#!/usr/bin/env python
"""The constants of the cost model in docs/scaling.md, measured, and the extrapolation.

    python benchmarks/bench_costs.py [--quick] [--repeat 3] [--json costs.json]
    python benchmarks/bench_costs.py --model costs.json      # the table from saved constants

Per task: no-op tasks (n, and n/4, the slope is the cost per task) on the threaded
scheduler and on ``LocalCluster(processes=True, n_workers=2, threads_per_worker=1)``;
zarrdask's and dask + zarr-python's write and read tasks of 16 KiB shards (64 x 64
float32, inner chunks 32 x 32, zstd) on that cluster, the source persisted first
(slope between 1,024 and 4,096 shards). Per shard: one such shard written and read by
direct calls (no dask), to local files and to S3 (moto on 127.0.0.1). Per request: s3fs
PUT/GET of 1 KiB-16 MiB objects through zarrdask's store. Per byte: zstd (level 3,
zarrdask's default) per core on two kinds of float32 data, and memcpy. Graph bytes per
task: the pickled size of one write and one read task spec, and the size distributed
reports when it sends the graph ("Sending large graph"), per task.

Every figure is the median of ``--repeat`` runs; the load average is printed before
each section (the machine is shared). moto is a slow pure-Python server: the S3 figures
measure it; the model takes AWS's published request-rate limits as the ceiling.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the working tree's zarrdask
sys.path.insert(1, str(HERE.parent / "tests"))
sys.path.insert(2, str(HERE))

os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                  AWS_EC2_METADATA_DISABLED="true")

import dask  # noqa: E402
import dask.threaded  # noqa: E402
import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
from bench_memory import fill, generated  # noqa: E402

MiB = 2**20
TB = 10**12
SHARD = (64, 64)  # 16 KiB of float32
INNER = (32, 32)
AWS_PUT_PER_S = 3500  # per partitioned prefix (AWS S3 performance guidelines)
AWS_GET_PER_S = 5500


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def slope(small: float, big: float, n_small: int, n_big: int) -> float:
    """Cost per item between two sizes (the fixed cost cancels)."""
    return (big - small) / (n_big - n_small)


# ----------------------------------------------------------------- per task


def noop(*_args: Any) -> None:
    """A task that does nothing."""


def noop_graph(n: int) -> tuple[dict, str]:
    """``n`` independent no-op tasks gathered by a tree of fan-in 64 (zarrdask's write
    graph's shape) to one final key."""
    from dask._task_spec import List, Task, TaskRef

    token = uuid.uuid4().hex[:8]
    dsk: dict = {(f"noop-{token}", i): Task((f"noop-{token}", i), noop) for i in range(n)}
    level, depth = [(f"noop-{token}", i) for i in range(n)], 0
    while len(level) > 1:
        depth += 1
        nxt = []
        for j in range(0, len(level), 64):
            key = (f"gather-{token}", depth, j // 64)
            dsk[key] = Task(key, noop, List(*(TaskRef(k) for k in level[j:j + 64])))
            nxt.append(key)
        level = nxt
    return dsk, level[0]


def per_task(run: Callable[[dict, str], Any], n: int, repeat: int) -> float:
    """Seconds per no-op task through ``run(graph, final_key)``."""
    small = median_time(lambda: run(*noop_graph(n // 4)), repeat)
    big = median_time(lambda: run(*noop_graph(n)), repeat)
    return slope(small, big, n // 4, n)


def noop_worker_cpu(client: Any, n: int, repeat: int) -> float:
    """Worker CPU seconds per no-op task on the cluster (what distributed itself costs a
    worker per task: receiving, running, reporting), slope between n/4 and n tasks."""
    def cpu_of(m: int) -> float:
        runs = []
        for _ in range(repeat):
            dsk, key = noop_graph(m)
            before = workers_cpu(client)
            client.get(dsk, key, sync=True)
            runs.append(workers_cpu(client) - before)
        return statistics.median(runs)

    return slope(cpu_of(n // 4), cpu_of(n), n // 4, n)


class TinyRun(NamedTuple):
    write_s: float
    read_s: float
    write_graph_bytes: int
    read_graph_bytes: int


def sent_graph_bytes(caught: list) -> int:
    """The size in distributed's "Sending large graph of size ..." warning (0 if none)."""
    from dask.utils import parse_bytes

    for w in caught:
        m = re.search(r"Sending large graph of size ([0-9.]+ [A-Za-z]+)", str(w.message))
        if m:
            return int(parse_bytes(m.group(1)))
    return 0


def timed_compute(client: Any, collection: Any, persist: bool = False) -> tuple[float, int]:
    """(seconds, graph bytes sent) of computing (or persisting) ``collection``."""
    import distributed

    with warnings.catch_warnings(record=True) as caught, \
            dask.config.set({"distributed.admin.large-graph-warning-threshold": "1B"}):
        warnings.simplefilter("always")
        start = time.perf_counter()
        if persist:
            out = client.persist(collection)
            distributed.wait(out)
        else:
            out = client.compute(collection)
            distributed.wait(out)
        seconds = time.perf_counter() - start
    del out
    return seconds, sent_graph_bytes(caught)


def tiny_shards(client: Any, n: int, lib: str, root: Path) -> TinyRun:
    """Write then read ``n`` shards of 16 KiB on the cluster with ``lib`` ("zarrdask" or
    "zarr-python": dask.array.to_zarr / from_zarr on a zarr-python array)."""
    import distributed

    shape = (SHARD[0] * 16, SHARD[1] * (n // 16))
    source = client.persist(generated(shape, da.core.normalize_chunks(SHARD, shape), 3))
    distributed.wait(source)
    url = str(root / f"{uuid.uuid4().hex}.zarr")
    if lib == "zarrdask":
        import zarrdask

        job = zarrdask.to_zarr(source, url, path="t", chunks=INNER, shards=SHARD, compute=False)
        write_s, write_bytes = timed_compute(client, job)
        back = zarrdask.from_zarr(url, path="t")
    else:
        import zarr

        z = zarr.create_array(zarr.storage.LocalStore(url), shape=shape, chunks=INNER, shards=SHARD, dtype="f4")
        job = da.to_zarr(source, z, compute=False)
        write_s, write_bytes = timed_compute(client, job)
        back = da.from_zarr(zarr.open_array(zarr.storage.LocalStore(url, read_only=True)), chunks=SHARD)
    read_s, read_bytes = timed_compute(client, back, persist=True)
    assert client.compute((back != source).any()).result() == False  # noqa: E712 (bit-exact: no NaN here)
    client.cancel(source)
    shutil.rmtree(url, ignore_errors=True)
    return TinyRun(write_s, read_s, write_bytes, read_bytes)


def task_spec_bytes(lib: str, root: Path) -> dict[str, int]:
    """Pickled size of one write task and one read task (as distributed pickles them)."""
    from dask._task_spec import convert_legacy_graph
    from distributed.protocol.pickle import dumps

    shape = (SHARD[0] * 16, SHARD[1] * 16)
    source = generated(shape, da.core.normalize_chunks(SHARD, shape), 3)
    url = str(root / f"{uuid.uuid4().hex}.zarr")
    if lib == "zarrdask":
        import zarrdask

        job = zarrdask.to_zarr(source, url, path="t", chunks=INNER, shards=SHARD, compute=False)
        zarrdask.to_zarr(source, url, path="t", chunks=INNER, shards=SHARD, mode="w")
        back = zarrdask.from_zarr(url, path="t")
    else:
        import zarr

        z = zarr.create_array(zarr.storage.LocalStore(url), shape=shape, chunks=INNER, shards=SHARD, dtype="f4")
        job = da.to_zarr(source, z, compute=False)
        back = da.from_zarr(zarr.open_array(zarr.storage.LocalStore(url, read_only=True)), chunks=SHARD)

    def one(collection: Any, exclude: set) -> int:
        graph = collection.__dask_graph__()
        dsk = convert_legacy_graph(dict(graph.to_dict() if hasattr(graph, "to_dict") else graph))
        sizes = [len(dumps(task)) for key, task in dsk.items() if key not in exclude]
        return int(statistics.median(sizes))

    source_keys = set(dict(source.__dask_graph__()))
    result = {"write_task": one(job, source_keys), "read_task": one(back, set())}
    shutil.rmtree(url, ignore_errors=True)
    return result


# ----------------------------------------------------------------- per shard, per request


def per_shard(url: str, options: dict | None, n: int, repeat: int, lib: str) -> dict[str, float]:
    """Seconds to write and to read one 16 KiB shard by direct calls, no dask."""
    block = fill(((0, SHARD[0]), (0, SHARD[1])), 5)
    if lib == "zarrdask":
        import zarrdask

        a = zarrdask.create_array(url, shape=(SHARD[0], SHARD[1] * n), dtype="f4", chunks=INNER, shards=SHARD,
                                  storage_options=options)
    else:
        import zarr

        store = zarr.storage.FsspecStore.from_url(url, storage_options=options) if url.startswith("s3://") \
            else zarr.storage.LocalStore(url)
        a = zarr.create_array(store, shape=(SHARD[0], SHARD[1] * n), dtype="f4", chunks=INNER, shards=SHARD)

    def write() -> None:
        for j in range(n):
            a[:, j * SHARD[1]:(j + 1) * SHARD[1]] = block

    def read() -> None:
        for j in range(n):
            assert a[:, j * SHARD[1]:(j + 1) * SHARD[1]][0, 0] == block[0, 0]

    return {"write": median_time(write, repeat) / n, "read": median_time(read, repeat) / n}


def per_request(url: str, options: dict, repeat: int) -> dict[str, dict[str, float]]:
    """Seconds per PUT and per GET of objects of several sizes through zarrdask's store."""
    import zarrdask

    store = zarrdask.open_store(url, mode="a", storage_options=options)
    out = {}
    for size, n in ((1024, 50), (16 * 1024, 50), (MiB, 10), (16 * MiB, 3)):
        payload = np.random.default_rng(size).bytes(size)

        def put() -> None:
            for i in range(n):
                store.set(f"r{size}/{i}", payload)

        def get() -> None:
            for i in range(n):
                assert len(store.get(f"r{size}/{i}")) == size

        out[str(size)] = {"put": median_time(put, repeat) / n, "get": median_time(get, repeat) / n}
    return out


def local_file_bytes(root: Path, repeat: int) -> dict[str, float]:
    """Bytes per second writing and reading one 64 MiB file (page cache)."""
    payload = np.random.default_rng(1).bytes(64 * MiB)
    path = root / "file.bin"
    write = median_time(lambda: path.write_bytes(payload), repeat)
    read = median_time(lambda: path.read_bytes(), repeat)
    return {"write": 64 * MiB / write, "read": 64 * MiB / read}


# ----------------------------------------------------------------- per byte


def smooth_field(shape: tuple[int, int]) -> np.ndarray:
    """Temperature-like float32: a smooth field plus noise, kept to 0.01 K."""
    y, x = np.ogrid[:shape[0], :shape[1]]
    noise = np.random.default_rng(2).standard_normal(shape)
    return (280 + 15 * np.sin(y / 90.0) * np.cos(x / 140.0) + 0.5 * noise).round(2).astype("f4")


def per_byte(repeat: int) -> dict[str, Any]:
    """zstd level 3 compress/decompress bytes per second on one core, per 1 MiB chunk, on
    two float32 data sets; memcpy bytes per second."""
    import zstandard

    shape = (4096, 2048)  # 32 MiB, as 32 chunks of 512 x 512
    out: dict[str, Any] = {}
    for name, data in (("random mantissa (bench_memory)", fill(((0, shape[0]), (0, shape[1])), 7)),
                       ("smooth field + noise, 0.01", smooth_field(shape))):
        chunks = [np.ascontiguousarray(data[i:i + 512, j:j + 512]).tobytes()
                  for i in range(0, shape[0], 512) for j in range(0, shape[1], 512)]
        cctx, dctx = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
        frames = [cctx.compress(c) for c in chunks]
        enc = median_time(lambda: [cctx.compress(c) for c in chunks], repeat)
        dec = median_time(lambda: [dctx.decompress(f) for f in frames], repeat)
        out[name] = {"encode": data.nbytes / enc, "decode": data.nbytes / dec,
                     "ratio": data.nbytes / sum(len(f) for f in frames)}
    big = np.ones(64 * MiB // 4, dtype="f4")
    dst = np.empty_like(big)
    out["memcpy"] = big.nbytes / median_time(lambda: np.copyto(dst, big), repeat)
    return out


# ----------------------------------------------------------------- validation


VALIDATE_SHAPE = (8192, 32768)  # 1 GiB of float32
VALIDATE_SHARD = (512, 512)  # 1 MiB: 1,024 shards
VALIDATE_INNER = (256, 256)


def predict_here(measured: dict, op: str, workers: int = 2) -> float:
    """Seconds for the validation job (1 GiB in 1 MiB shards, aligned, local files) on this
    cluster: per task, the tiny-shard slope measured on it; per byte, zstd + memcpy + the
    page cache, spread over the ``workers`` single-thread workers."""
    total = 4 * math.prod(VALIDATE_SHAPE)
    tasks = total // (4 * math.prod(VALIDATE_SHARD))
    pb = measured["per_byte"]["random mantissa (bench_memory)"]
    memcpy, file = measured["per_byte"]["memcpy"], measured["local_file"]
    if op == "write":
        per_byte = 1 / pb["encode"] + 1 / memcpy + 1 / file["write"]
    else:
        per_byte = 1 / pb["decode"] + 1 / memcpy + 1 / file["read"]
    return tasks * measured["per_task"][f"cluster zarrdask {op}"] + total * per_byte / workers


def predict_cpu(measured: dict, op: str) -> float:
    """Worker CPU seconds for the validation job: per shard (direct one-shard cost, local
    files, less its bytes), per task (distributed's, on the worker) and per byte (zstd +
    memcpy + page cache)."""
    total = 4 * math.prod(VALIDATE_SHAPE)
    shards = total // (4 * math.prod(VALIDATE_SHARD))
    pb = measured["per_byte"]["random mantissa (bench_memory)"]
    memcpy, file = measured["per_byte"]["memcpy"], measured["local_file"]
    codec, disk = (pb["encode"], file["write"]) if op == "write" else (pb["decode"], file["read"])
    shard = measured["per_shard"]["zarrdask local"][op] - 16384 * (1 / codec + 1 / memcpy)
    per_task = measured["per_task"].get("cluster no-op, worker CPU", 0.0)
    return shards * (shard + per_task) + total * (1 / codec + 1 / memcpy + 1 / disk)


def workers_cpu(client: Any) -> float:
    """User + system CPU seconds the worker processes have used so far."""
    def cpu() -> float:
        import psutil

        t = psutil.Process().cpu_times()
        return t.user + t.system

    return sum(client.run(cpu).values())


def validate(client: Any, root: Path, repeat: int) -> dict[str, float]:
    """The validation job, measured: median seconds to write and to read (persist) it,
    and the worker CPU seconds each used (the machine is shared: CPU time does not
    depend on how much of the cores the other processes took)."""
    import distributed

    import zarrdask

    source = client.persist(generated(VALIDATE_SHAPE, da.core.normalize_chunks(VALIDATE_SHARD, VALIDATE_SHAPE), 9))
    distributed.wait(source)
    runs: dict[str, list[float]] = {"write": [], "read": [], "write_cpu": [], "read_cpu": []}
    for _ in range(repeat):
        url = str(root / f"{uuid.uuid4().hex}.zarr")
        job = zarrdask.to_zarr(source, url, path="t", chunks=VALIDATE_INNER, shards=VALIDATE_SHARD, compute=False)
        cpu = workers_cpu(client)
        runs["write"].append(timed_compute(client, job)[0])
        runs["write_cpu"].append(workers_cpu(client) - cpu)
        back = zarrdask.from_zarr(url, path="t")
        cpu = workers_cpu(client)
        runs["read"].append(timed_compute(client, back, persist=True)[0])
        runs["read_cpu"].append(workers_cpu(client) - cpu)
        assert not client.compute((back.view("u4") != source.view("u4")).any()).result()
        shutil.rmtree(url, ignore_errors=True)
    client.cancel(source)
    return {k: statistics.median(v) for k, v in runs.items()}


def validate_again(path: Path, repeat: int) -> None:
    """Rerun the validation (and the workers' CPU per no-op task) against constants saved
    with --json, and store them there."""
    import distributed

    measured = json.loads(path.read_text())
    root = Path(tempfile.mkdtemp(prefix="bench-costs-"))
    try:
        with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None,
                                      local_directory=str(root / "workers")) as cluster, \
                distributed.Client(cluster) as client:
            measured.setdefault("load", {})["validate"] = loadavg()
            measured["per_task"]["cluster no-op, worker CPU"] = noop_worker_cpu(client, 4096, repeat)
            measured["validate"] = validation(client, root, repeat, measured)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    path.write_text(json.dumps(measured, indent=1))
    print("validation (1 GiB, 1 MiB shards, local files, 2 workers x 1 thread):", json.dumps(measured["validate"]))


def validation(client: Any, root: Path, repeat: int, measured: dict) -> dict[str, Any]:
    """Predicted and measured wall and worker CPU seconds of the validation job."""
    return {"measured": validate(client, root, repeat),
            "predicted": {**{op: predict_here(measured, op) for op in ("write", "read")},
                          **{f"{op}_cpu": predict_cpu(measured, op) for op in ("write", "read")}}}


# ----------------------------------------------------------------- the model


class Estimate(NamedTuple):
    """Expected cost of one job: ``tasks`` (one per shard), the floors set by the
    scheduler and by one prefix's request rate, the worker core-hours, the threads at
    which adding more stops helping, and the wall time there."""

    tasks: int
    scheduler_s: float
    requests_s: float
    core_hours: float
    threads_useful: int
    wall_s: float
    graph_mib: float


def estimate(total_bytes: float, shard_bytes: float, c: dict[str, float], op: str, prefixes: int = 1,
             tasks: float | None = None) -> Estimate:
    """The model: wall = max(tasks x scheduler cost, requests / (rate x prefixes),
    worker core-seconds / threads). Worker core-seconds = shards x worker cost per shard
    + tasks x distributed's CPU per task on the worker + bytes x (codec + memcpy +
    network) per byte. ``c`` holds the constants (keys in :func:`constants_for`);
    ``tasks`` defaults to one per shard (fewer: shards grouped into tasks)."""
    shards = math.ceil(total_bytes / shard_bytes)
    tasks = shards if tasks is None else tasks
    scheduler = tasks * c["scheduler_per_task"]
    rate = AWS_PUT_PER_S if op == "write" else AWS_GET_PER_S
    requests = shards / (rate * prefixes)
    per_byte = c[f"{op}_core_s_per_byte"]
    core_s = shards * c["worker_per_shard"] + tasks * c.get("worker_per_task", 0.0) + total_bytes * per_byte
    floor = max(scheduler, requests)
    useful = max(1, math.ceil(core_s / floor)) if floor else 1
    return Estimate(int(tasks), scheduler, requests, core_s / 3600, useful, max(floor, core_s / useful),
                    tasks * c["graph_bytes_per_task"] / MiB)


def constants_for(measured: dict, lib: str) -> dict[str, float]:
    """The model's constants for ``lib`` from the measurements: the scheduler's cost per
    task is the no-op slope on the cluster; the worker's per shard is the one-shard direct
    cost (local files) minus its bytes' share; per byte: zstd, memcpy, and a 10 Gbit/s network per core
    (an assumption: 1.25 GB/s shared by the node's cores is not modelled)."""
    pb = measured["per_byte"]["smooth field + noise, 0.01"]
    memcpy = measured["per_byte"]["memcpy"]
    net = 1.25e9
    shard = measured["per_shard"][f"{lib} local"]
    return {
        "scheduler_per_task": measured["per_task"]["cluster no-op"],
        "worker_per_task": measured["per_task"].get("cluster no-op, worker CPU", 0.0),
        "worker_per_shard": max(shard["write"], shard["read"]) - 16384 * (1 / pb["encode"] + 1 / memcpy),
        "write_core_s_per_byte": 1 / pb["encode"] + 1 / memcpy + 1 / net,
        "read_core_s_per_byte": 1 / pb["decode"] + 1 / memcpy + 1 / net,
        # bytes sent per task beyond zarrdask's (whose layers are compact: their per-task bytes
        # are the persisted source's references, which both graphs carry)
        "graph_bytes_per_task": measured["graph"][lib]["write_sent_per_task"]
        - measured["graph"]["zarrdask"]["write_sent_per_task"],
    }


def model_table(measured: dict) -> str:
    """Markdown rows: size, shard size, op, then zarrdask's and dask + zarr-python's estimates."""
    rows = ["| data | shard | op | tasks | scheduler floor | 1-prefix request floor | core-hours (zarrdask / zarr-python) "
            "| useful threads | wall there | graph bytes beyond zarrdask's (zarr-python) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    ours, theirs = constants_for(measured, "zarrdask"), constants_for(measured, "zarr-python")
    for total, label in ((TB, "1 TB"), (100 * TB, "100 TB"), (1000 * TB, "1 PB")):
        for shard_mib, task_mib in ((16, None), (64, None), (256, None), (16, 1024)):
            for op in ("write", "read"):
                tasks = None if task_mib is None else math.ceil(total / (task_mib * MiB))
                a = estimate(total, shard_mib * MiB, ours, op, tasks=tasks)
                b = estimate(total, shard_mib * MiB, theirs, op)
                shard = f"{shard_mib} MiB" + ("" if task_mib is None else f", tasks of {task_mib // 1024} GiB")
                rows.append(f"| {label} | {shard} | {op} | {a.tasks:,} | {human(a.scheduler_s)} | "
                            f"{human(a.requests_s)} | {a.core_hours:,.0f} / {b.core_hours:,.0f} | {a.threads_useful:,} | "
                            f"{human(a.wall_s)} | {b.graph_mib:,.0f} MiB |")
    return "\n".join(rows)


def human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ----------------------------------------------------------------- the run


def measure(args: argparse.Namespace) -> dict:
    import distributed
    import s3fs
    from _s3 import s3_storage_options
    from moto.server import ThreadedMotoServer

    n = 1024 if args.quick else 4096
    repeat = args.repeat
    root = Path(tempfile.mkdtemp(prefix="bench-costs-"))
    out: dict[str, Any] = {"repeat": repeat, "load": {}}
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = s3_storage_options(f"http://{host}:{port}")
    s3fs.S3FileSystem(**options, skip_instance_cache=True).mkdir("costs")
    try:
        out["load"]["per_byte"] = loadavg()
        out["per_byte"] = per_byte(repeat)
        out["local_file"] = local_file_bytes(root, repeat)
        print("per byte:", json.dumps(out["per_byte"]), out["local_file"], flush=True)
        out["load"]["per_shard"] = loadavg()
        shards_n = 64 if args.quick else 256
        out["per_shard"] = {}
        for lib in ("zarrdask", "zarr-python"):
            out["per_shard"][f"{lib} local"] = per_shard(str(root / f"{lib}-{uuid.uuid4().hex}.zarr"), None, shards_n,
                                                       repeat, lib)
            out["per_shard"][f"{lib} s3"] = per_shard(f"s3://costs/{uuid.uuid4().hex}.zarr", options, shards_n // 4,
                                                    repeat, lib)
        print("per shard:", json.dumps(out["per_shard"]), flush=True)
        out["load"]["per_request"] = loadavg()
        out["per_request"] = per_request(f"s3://costs/{uuid.uuid4().hex}", options, repeat)
        print("per request:", json.dumps(out["per_request"]), flush=True)
        out["load"]["per_task"] = loadavg()
        out["per_task"] = {"threaded no-op": per_task(lambda dsk, key: dask.threaded.get(dsk, key), 4 * n, repeat)}
        out["graph"] = {}
        with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None,
                                      local_directory=str(root / "workers")) as cluster, \
                distributed.Client(cluster) as client:
            out["per_task"]["cluster no-op"] = per_task(lambda dsk, key: client.get(dsk, key, sync=True), n, repeat)
            out["per_task"]["cluster no-op, worker CPU"] = noop_worker_cpu(client, n, repeat)
            for lib in ("zarrdask", "zarr-python"):
                runs = {m: [tiny_shards(client, m, lib, root) for _ in range(repeat)] for m in (n // 4, n)}
                med = {m: TinyRun(*(statistics.median(getattr(r, f) for r in rs) for f in TinyRun._fields))
                       for m, rs in runs.items()}
                lo, hi = med[n // 4], med[n]
                out["per_task"][f"cluster {lib} write"] = slope(lo.write_s, hi.write_s, n // 4, n)
                out["per_task"][f"cluster {lib} read"] = slope(lo.read_s, hi.read_s, n // 4, n)
                out["per_task"][f"cluster {lib} times"] = {str(m): r._asdict() for m, r in med.items()}
                out["graph"][lib] = {
                    "write_sent_per_task": max(0.0, slope(lo.write_graph_bytes, hi.write_graph_bytes, n // 4, n)),
                    "read_sent_per_task": max(0.0, slope(lo.read_graph_bytes, hi.read_graph_bytes, n // 4, n)),
                    **task_spec_bytes(lib, root),
                }
            out["load"]["validate"] = loadavg()
            out["validate"] = validation(client, root, repeat, out)
        print("per task:", json.dumps(out["per_task"]), "\ngraph:", json.dumps(out["graph"]), flush=True)
        print("validation (1 GiB, 1 MiB shards, local files, 2 workers x 1 thread):", json.dumps(out["validate"]),
              flush=True)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smaller counts (a smoke run)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", type=Path, help="save the constants here")
    p.add_argument("--model", type=Path, help="print the table from constants saved with --json, measure nothing")
    p.add_argument("--validate", type=Path, help="rerun only the validation against constants saved with --json")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    if args.validate:
        validate_again(args.validate, args.repeat)
        return
    measured = json.loads(args.model.read_text()) if args.model else measure(args)
    if args.json and not args.model:
        args.json.write_text(json.dumps(measured, indent=1))
    print(model_table(measured))


if __name__ == "__main__":
    main()
