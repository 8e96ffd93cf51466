#!/usr/bin/env python
"""Run one benchmark operation in a loop, for a profiler to watch; then summarise hotspots.

    python benchmarks/probes/profile_op.py OP [--lib zarrdask] [--seconds 15] [--size-mib 512]
    python benchmarks/probes/profile_op.py OP --py-spy            # sample it with py-spy, print self-time by file:line

OP is one of: core-read, core-write, sharded-read, sharded-write, windows-cold, windows-warm,
dask-read, dask-write-aligned, dask-write-misaligned, xarray-mean, open50.

With ``--py-spy`` the script re-runs itself under ``py-spy record --format raw`` (all
threads; sleeping threads are not sampled) and prints the frames with the most self samples and the
functions with the most inclusive samples, each as ``function (file:line)``. py-spy is not a
project dependency: ``pip install py-spy`` somewhere and put it on PATH (or pass --py-spy-bin).
Uses the arrays the benchmark wrote under benchmarks/data (writing them if missing).
"""

from __future__ import annotations

import argparse
import collections
import re
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/probes
BENCH = HERE.parent  # the suites and their helpers (harness, libs, reference)
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(BENCH))
sys.path.insert(2, str(BENCH.parent))  # the working tree's zarrdask

OPS = (
    "core-read", "core-write", "sharded-read", "sharded-write", "windows-cold", "windows-warm",
    "dask-read", "dask-write-aligned", "dask-write-misaligned", "xarray-mean", "open50",
)


def make_op(op: str, lib: str, size_mib: int, data_dir: str):
    from harness import Geometry, make_data, random_windows
    from libs import LIB_OBJECTS, Layout
    import libs
    import reference

    geom = Geometry.from_size(size_mib)
    L = LIB_OBJECTS[lib]
    data = make_data(geom.shape) if "write" in op else None
    if op in ("core-read", "core-write"):
        path = os.path.join(data_dir, "core", lib)
        layout = Layout(geom.chunks)
        if op == "core-write" or not os.path.isdir(path):
            data = make_data(geom.shape)
            L.write(path, data, layout)
        if op == "core-read":
            return lambda: L.read_all(L.open(path))
        return lambda: L.write(path, data, layout)
    if op in ("sharded-read", "sharded-write", "windows-cold", "windows-warm"):
        layout = Layout(geom.inner, geom.shard)
        if op == "sharded-write":
            path = os.path.join(data_dir, "sharded", lib)
            return lambda: L.write(path, data, layout)
        path = reference.sharded_array(geom, data_dir)
        if op == "sharded-read":
            return lambda: L.read_all(L.open(path))
        windows = random_windows(geom, 200)
        if op == "windows-cold":
            def cold():
                for sel in windows:
                    L.read(L.open(path), sel)
            return cold
        h = L.open(path)

        def warm():
            for sel in windows:
                L.read(h, sel)
        return warm
    if op in ("dask-read", "dask-write-aligned", "dask-write-misaligned"):
        import dask
        import dask.array as da
        import zarrdask

        dask.config.set(scheduler="threads")
        if op == "dask-read":
            path = reference.sharded_array(geom, data_dir)
            return lambda: zarrdask.from_zarr(path).sum().compute()
        x = da.from_array(data, chunks=geom.misaligned if op.endswith("-misaligned") else geom.shard)
        out = os.path.join(data_dir, "dask_write", "profile-" + lib)
        if lib == "zarrdask":
            return lambda: zarrdask.to_zarr(
                x, out, chunks=geom.inner, shards=geom.shard, compressors=[libs.ZSTD1], mode="w")
        if lib == "tensorstore":
            import tensorstore as ts

            def ts_write():
                arr = ts.open(libs.ts_spec(out, shape=geom.shape, layout=Layout(geom.inner, geom.shard)),
                              create=True, delete_existing=True).result()
                da.store(x, libs.TSDaskAdapter(arr), lock=False)
            return ts_write
        raise SystemExit("dask-write ops: --lib zarrdask or tensorstore")
    if op in ("xarray-mean", "open50"):
        import dask
        import xarray as xr

        dask.config.set(scheduler="threads")
        engine = "zarrdask" if lib == "zarrdask" else "zarr"
        if op == "xarray-mean":
            path = reference.climate_dataset(geom, data_dir)
            return lambda: xr.open_dataset(path, engine=engine, chunks={}).mean("time").compute()
        path = reference.many_variables_dataset(data_dir)
        return lambda: xr.open_dataset(path, engine=engine)
    raise SystemExit(f"unknown op {op}")


def summarise(raw_path: str, top: int) -> None:
    self_counts: collections.Counter = collections.Counter()
    incl_counts: collections.Counter = collections.Counter()
    total = 0
    with open(raw_path) as f:
        for line in f:
            line = line.rstrip()
            if not line:
                continue
            stack, _, n = line.rpartition(" ")
            try:
                n = int(n)
            except ValueError:
                continue
            frames = [fr for fr in stack.split(";") if fr]
            # skip idle worker threads waiting for work
            if frames and any(w in frames[-1] for w in ("wait (threading.py", "_worker (concurrent", "select (", "get (queue.py")):
                continue
            total += n
            if frames:
                self_counts[frames[-1]] += n
            seen = set()
            for fr in frames:
                fn = re.sub(r":\d+\)$", ")", fr)  # the function, whatever line it is on
                if fn not in seen:
                    incl_counts[fn] += n
                    seen.add(fn)
    print(f"\n{total} busy samples (idle thread waits excluded)")
    print(f"\n-- top {top} frames by self samples (function (file:line))")
    for fr, n in self_counts.most_common(top):
        print(f"{100.0 * n / max(total, 1):5.1f}%  {fr}")
    print(f"\n-- top {top} functions by inclusive samples")
    for fr, n in incl_counts.most_common(top):
        print(f"{100.0 * n / max(total, 1):5.1f}%  {fr}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("op", choices=OPS)
    p.add_argument("--lib", default="zarrdask", choices=("zarrdask", "zarr-python", "tensorstore"))
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--data-dir", default=str(BENCH / "data"))
    p.add_argument("--py-spy", action="store_true", help="sample with py-spy and print hotspots")
    p.add_argument("--py-spy-bin", default=shutil.which("py-spy") or "py-spy")
    p.add_argument("--native", action="store_true", help="py-spy --native (C frames too)")
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()

    if args.py_spy:
        raw = tempfile.mktemp(suffix=".txt", prefix="pyspy-")
        cmd = [args.py_spy_bin, "record", "--format", "raw", "-o", raw, "--threads", "-r", "200"]
        if args.native:
            cmd.append("--native")
        cmd += ["--", sys.executable, __file__, args.op, "--lib", args.lib, "--seconds", str(args.seconds),
                "--size-mib", str(args.size_mib), "--data-dir", args.data_dir]
        subprocess.run(cmd, check=True)
        summarise(raw, args.top)
        return 0

    fn = make_op(args.op, args.lib, args.size_mib, args.data_dir)
    fn()  # warm-up
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        fn()
        n += 1
    dt = time.perf_counter() - t0
    print(f"{args.op} {args.lib}: {n} runs in {dt:.1f}s = {dt / max(n, 1):.4f}s per run", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
