#!/usr/bin/env python
"""Reads over HTTP with latency: zarrdask vs TensorStore vs zarr-python, and request counts.

    python benchmarks/bench_remote.py [--repeat R] [--delay-ms 25] [--only "group open"]

A loopback HTTP server (tests/_http.py, 127.0.0.1 only, in a process of its own) serves one copy of a 128 MiB
float32 array (32, 1024, 1024), shards (8, 512, 512) = 16 shards of 8 MiB, inner chunks
(4, 64, 64), zstd-1 (the layout of benchmarks/libs.py), and a consolidated group of 50
small arrays, adding ``delay`` to every request. Each library reads the same bytes:

* full read: open + read the whole array;
* 40 windows: 40 reads of 1 x 64 x 64 at random offsets, the array opened once;
* region: ``a[0:8, 100:400, 100:400]``, part of one shard (through its index);
* group open: open the group and the metadata of its 50 arrays (TensorStore, without
  consolidated metadata, opens each array);
* group open, unconsolidated: the same with the consolidated metadata ignored
  (``use_consolidated=False``): zarrdask and zarr-python read each array's ``zarr.json``
  on ``g[name]``, one after another as TensorStore's opens, after the group's own.

The full read's floor, measured in the same rounds: no reader that decodes the array on
this machine's cores can end before the open's round trip (the metadata says which keys to
ask for), then a request's round trip (the first byte of data), then libzstd over every
inner chunk on all cores (bytes already in memory, no output written): the sum of the three.

Medians of R interleaved repetitions (times), and the requests the server answered in one
repetition. zarr-python reads through its FsspecStore (fsspec's HTTP filesystem).
The DataTree-write request counts come from ``--datatree`` (S3, moto behind the server).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # the working tree's zarrdask
sys.path.insert(2, str(HERE.parent / "tests"))  # the loopback server

import numpy as np  # noqa: E402
import zstd_floor  # noqa: E402
from _http import LoopbackServer  # noqa: E402
from harness import make_data  # noqa: E402
from libs import Layout  # noqa: E402

import zarrdask  # noqa: E402

SHAPE, SHARDS, INNER = (32, 1024, 1024), (8, 512, 512), (4, 64, 64)
REGION = (slice(0, 8), slice(100, 400), slice(100, 400))


def write_data(root: str) -> np.ndarray:
    data = make_data(SHAPE)
    layout = Layout(chunks=INNER, shards=SHARDS)
    a = zarrdask.create_array(os.path.join(root, "a.zarr"), shape=SHAPE, dtype="f4", chunks=SHARDS,
                              codecs=layout.v3_codecs(), fill_value=0, overwrite=True)
    a[...] = data
    g = zarrdask.create_group(os.path.join(root, "g.zarr"), overwrite=True)
    for i in range(50):
        g.create_array(f"v{i}", shape=(10, 20), dtype="f4", chunks=(10, 20), attributes={"units": "K", "i": i})
    zarrdask.consolidate_metadata(os.path.join(root, "g.zarr"))
    return data


def windows(n: int) -> list[tuple[slice, ...]]:
    rng = np.random.default_rng(3)
    out = []
    for _ in range(n):
        t, y, x = (int(rng.integers(0, SHAPE[0])), int(rng.integers(0, SHAPE[1] - 64)),
                   int(rng.integers(0, SHAPE[2] - 64)))
        out.append((slice(t, t + 1), slice(y, y + 64), slice(x, x + 64)))
    return out


def zarrdask_ops(url: str) -> dict[str, Callable[[], object]]:
    def group_open(consolidated: bool):
        g = zarrdask.open_group(f"{url}/g.zarr", use_consolidated=consolidated)
        return [g[f"v{i}"].shape for i in range(50)]

    return {
        "full read": lambda: zarrdask.open_array(f"{url}/a.zarr")[...],
        "40 windows": lambda: (lambda a: [a[w] for w in windows(40)])(zarrdask.open_array(f"{url}/a.zarr")),
        "region": lambda: zarrdask.open_array(f"{url}/a.zarr")[REGION],
        "group open (50 arrays)": lambda: group_open(True),
        "group open, unconsolidated": lambda: group_open(False),
    }


def tensorstore_ops(url: str) -> dict[str, Callable[[], object]]:
    import tensorstore as ts

    def open_array(name: str):
        return ts.open({"driver": "zarr3", "kvstore": {"driver": "http", "base_url": f"{url}/{name}/"}}).result()

    return {
        "full read": lambda: open_array("a.zarr").read().result(),
        "40 windows": lambda: (lambda a: [a[w].read().result() for w in windows(40)])(open_array("a.zarr")),
        "region": lambda: open_array("a.zarr")[REGION].read().result(),
        "group open (50 arrays)": lambda: [open_array(f"g.zarr/v{i}").shape for i in range(50)],
        "group open, unconsolidated": lambda: [open_array(f"g.zarr/v{i}").shape for i in range(50)],
    }


def zarr_python_ops(url: str) -> dict[str, Callable[[], object]]:
    import zarr
    from zarr.storage import FsspecStore

    def store(name: str):
        return FsspecStore.from_url(f"{url}/{name}", read_only=True)

    def group_open(consolidated: bool):
        g = zarr.open_group(store("g.zarr"), mode="r", use_consolidated=consolidated)
        return [g[f"v{i}"].shape for i in range(50)]

    return {
        "full read": lambda: zarr.open_array(store("a.zarr"), mode="r")[...],
        "40 windows": lambda: (lambda a: [a[w] for w in windows(40)])(zarr.open_array(store("a.zarr"), mode="r")),
        "region": lambda: zarr.open_array(store("a.zarr"), mode="r")[REGION],
        "group open (50 arrays)": lambda: group_open(True),
        "group open, unconsolidated": lambda: group_open(False),
    }


def datatree_write(repeat: int, delay: float) -> None:
    """A 12-node DataTree (each node: two variables and a coordinate of 3 values) written to
    S3 (moto, behind the server) by zarrdask and by xarray's own writer (zarr-python), then
    opened by both engines."""
    import logging
    import uuid

    import s3fs
    import xarray as xr
    from _s3 import s3_storage_options
    from moto.server import ThreadedMotoServer

    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                      AWS_EC2_METADATA_DISABLED="true")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    nodes = {"/": xr.Dataset(attrs={"title": "tree"})}
    for i in range(12):
        nodes[f"/n{i}"] = xr.Dataset({"a": ("x", np.arange(3.0) + i), "b": ("x", np.ones(3))}, coords={"x": [1, 2, 3]})
    tree = xr.DataTree.from_dict(nodes)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    s3fs.S3FileSystem(**s3_storage_options(f"http://{host}:{port}"), skip_instance_cache=True).mkdir("bench")
    writers = {"zarrdask": lambda url, o: tree.zarrdask.to_zarr(url, storage_options=o, mode="w"),
               "zarr-python": lambda url, o: tree.to_zarr(url, storage_options=o, mode="w")}
    engines = {"zarrdask": "zarrdask", "zarr-python": "zarr"}
    results: dict[tuple[str, str], list[tuple[float, int]]] = {}
    try:
        with LoopbackServer(upstream=f"http://{host}:{port}", delay=delay) as server:
            options = s3_storage_options(server.url)
            for _ in range(repeat):
                for lib, write in writers.items():
                    url = f"s3://bench/{uuid.uuid4().hex}/tree.zarr"
                    for op, run in (("write", lambda: write(url, options)),
                                    ("open_datatree", lambda: xr.open_datatree(url, engine=engines[lib],
                                                                               storage_options=options))):
                        server.reset()
                        start = time.perf_counter()
                        run()
                        results.setdefault((lib, op), []).append((time.perf_counter() - start,
                                                                  sum(server.counts.values())))
    finally:
        moto.stop()
    print(f"DataTree of 12 nodes on S3 (moto behind the server, {delay * 1000:g} ms per request); "
          f"medians of {repeat}; requests of one run")
    for (lib, op), runs in results.items():
        print(f"  {lib:12s} {op:14s} {statistics.median(t for t, _ in runs):7.2f} s  {runs[0][1]:4d} requests")


def full_read_floor(url: str, root: str) -> Callable[[], tuple[float, float, float]]:
    """A function timing the full read's floor (see the module docstring): the open's round
    trip, a data request's round trip (one byte of the first shard, on the same connection),
    and libzstd over every inner chunk in memory on one thread per core."""
    import http.client
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import urlsplit

    frames = zstd_floor.inner_chunks(os.path.join(root, "a.zarr"))
    pool = ThreadPoolExecutor(os.cpu_count() or 1)
    host = urlsplit(url).netloc

    def get(connection: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> None:
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        answer.read()
        assert answer.status in (200, 206), answer.status

    def measure() -> tuple[float, float, float]:
        connection = http.client.HTTPConnection(host)
        try:
            t0 = time.perf_counter()
            get(connection, "/a.zarr/zarr.json", {})
            t1 = time.perf_counter()
            get(connection, "/a.zarr/c/0/0/0", {"Range": "bytes=0-0"})
            t2 = time.perf_counter()
        finally:
            connection.close()
        list(pool.map(zstd_floor.decode_frames, frames))
        return t1 - t0, t2 - t1, time.perf_counter() - t2

    return measure


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--delay-ms", type=float, default=25.0)
    p.add_argument("--datatree", action="store_true", help="the DataTree write/open on S3 instead")
    p.add_argument("--only", default="", help="only the workloads whose names contain this text")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    if args.datatree:
        datatree_write(args.repeat, args.delay_ms / 1000)
        return
    root = tempfile.mkdtemp(prefix="zarrdask-remote-")
    try:
        data = write_data(root)
        server = subprocess.Popen([sys.executable, str(HERE.parent / "tests" / "_http.py"), root,
                                   str(args.delay_ms / 1000)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            url = server.stdout.readline().strip()

            def take_counts() -> dict[str, int]:
                with urllib.request.urlopen(f"{url}/_loopback/counts") as answer:
                    return json.loads(answer.read())

            libs = {lib: {op: run for op, run in ops(url).items() if args.only in op}
                    for lib, ops in (("zarrdask", zarrdask_ops), ("tensorstore", tensorstore_ops),
                                     ("zarr-python", zarr_python_ops))}
            times = {(lib, op): [] for lib, ops in libs.items() for op in ops}
            counts = {}
            floor, floors = full_read_floor(url, root), []
            for rep in range(args.repeat + 1):  # round 0 warms up and checks
                if "full read" in libs["zarrdask"]:
                    parts = floor()
                    if rep:
                        floors.append(parts)
                order = list(libs)[rep % 3:] + list(libs)[: rep % 3]
                for op in libs["zarrdask"]:
                    for lib in order:
                        take_counts()
                        start = time.perf_counter()
                        result = libs[lib][op]()
                        elapsed = time.perf_counter() - start
                        if rep == 0:
                            counts[lib, op] = take_counts()
                            if op == "full read":
                                assert np.array_equal(np.asarray(result), data), lib
                            if op == "region":
                                assert np.array_equal(np.asarray(result), data[REGION]), lib
                            if op.startswith("group open"):
                                assert [tuple(s) for s in result] == [(10, 20)] * 50, lib
                        else:
                            times[lib, op].append(elapsed)
        finally:
            server.stdin.close()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"HTTP on 127.0.0.1, {args.delay_ms:g} ms per request; medians of {args.repeat} (s); "
          "ratio = peer / zarrdask; requests of one run")
    print(f"  {'workload':27s} {'zarrdask':>9s} {'tensorstore':>12s} {'ratio':>6s} {'zarr-python':>12s} {'ratio':>6s}"
          f"   requests zarrdask / tensorstore / zarr-python")
    for op in libs["zarrdask"]:
        med = {lib: statistics.median(times[lib, op]) for lib in libs}
        reqs = " / ".join(str(sum(counts[lib, op].values())) for lib in libs)
        print(f"  {op:27s} {med['zarrdask']:9.3f} {med['tensorstore']:12.3f} {med['tensorstore'] / med['zarrdask']:5.2f}x"
              f" {med['zarr-python']:12.3f} {med['zarr-python'] / med['zarrdask']:5.2f}x   {reqs}")
    if not floors:
        return
    opening, first, decoding = (statistics.median(p[k] for p in floors) for k in range(3))
    least = statistics.median(sum(p) for p in floors)
    target = min(statistics.median(times[lib, "full read"]) for lib in ("tensorstore", "zarr-python")) / 1.2
    print(f"  full read floor: {least:.3f} s = open {opening * 1e3:.1f} ms + first data {first * 1e3:.1f} ms + "
          f"libzstd on {os.cpu_count()} threads {decoding * 1e3:.1f} ms (medians); 1.2x the best peer would be "
          f"{target:.3f} s ({'below' if target < least else 'above'} the floor)")


if __name__ == "__main__":
    main()
