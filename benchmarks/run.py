#!/usr/bin/env python
"""zarrdask benchmark harness: zarrdask vs zarr-python vs TensorStore, in the same run.

    python benchmarks/run.py [core|sharding|dask|xarray|layouts|all] [--size-mib N] [--repeat R]
                             [--json out.json] [--smoke] [--data-dir DIR]

Prints, per scenario, the median and min of R repetitions for each library and the ratio
peer time / zarrdask time (> 1: zarrdask is faster); for each row the best peer and the row's
floor (its work with no Zarr code, measured in the same run after the rows: harness.Floor) with
zarrdask's time / the floor's. ``all`` includes materialised reads: the ``dask`` scenario's
``.compute()`` of the whole array and the ``xarray`` scenario's ``["t2m"].values`` and
``.load()``; ``layouts`` runs bench_layouts' default workloads (dask-compute, xarray-values and
xarray-load among them). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # the working tree's zarrdask (same as an editable install)

import harness  # noqa: E402
from harness import Geometry, environment, render_scenario, rmtree, write_json  # noqa: E402
from libs import preload_zarrdask, zarrdask_status  # noqa: E402

SCENARIOS = ("core", "sharding", "dask", "xarray")
ON_REQUEST = ("layouts",)  # long (three layouts, a process cluster): not part of "all"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", nargs="?", default="all", choices=(*SCENARIOS, *ON_REQUEST, "all"))
    p.add_argument("--size-mib", type=int, default=None, help="array size in MiB (default 512)")
    p.add_argument("--repeat", type=int, default=None, help="repetitions per measurement (default 3)")
    p.add_argument("--windows", type=int, default=None, help="random window reads (default 200)")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument(
        "--data-dir",
        default=None,
        help="where arrays are written (default benchmarks/data, gitignored; --smoke: a temp dir)",
    )
    p.add_argument(
        "--idle-wait",
        type=float,
        default=None,
        help="before each timed call wait up to this many seconds for other processes to use "
        "< 0.25 cores (default 10; 0 = don't wait; --smoke: 0)",
    )
    p.add_argument(
        "--numpy-hugepages",
        choices=("on", "off"),
        default="on",
        help="numpy's madvise(MADV_HUGEPAGE) on large arrays (numpy's default: on). With THP "
        "defrag=madvise, a fresh 512 MiB output can stall in page-fault compaction; 'off' trades "
        "that for more 4 KiB faults. Affects libraries that allocate with numpy (zarrdask, zarr-python)",
    )
    p.add_argument("--no-cross", action="store_true", help="skip cross-library reads in core/sharding")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="tiny run (4 MiB, 1 repetition, 10 windows, temp dir) that checks the harness works",
    )
    args = p.parse_args(argv)
    if args.smoke:
        args.size_mib = args.size_mib or 4
        args.repeat = args.repeat or 1
        args.windows = args.windows or 10
        args.idle_wait = 0.0 if args.idle_wait is None else args.idle_wait
    args.idle_wait = 10.0 if args.idle_wait is None else args.idle_wait
    args.size_mib = args.size_mib or 512
    args.repeat = args.repeat or 3
    args.windows = args.windows or 200
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    preload_zarrdask()
    warnings.simplefilter("ignore")  # peers' FutureWarnings etc. would drown the table
    geom = Geometry.from_size(args.size_mib)
    harness.IDLE_WAIT_S = args.idle_wait
    if args.numpy_hugepages == "off":
        import numpy._core.multiarray as _ma

        _ma._set_madvise_hugepage(False)
    tmp = None
    if args.data_dir:
        data_dir = args.data_dir
    elif args.smoke:
        tmp = tempfile.mkdtemp(prefix="zarrdask-bench-")
        data_dir = tmp
    else:
        data_dir = str(HERE / "data")
    os.makedirs(data_dir, exist_ok=True)

    env = environment()
    print(f"zarrdask benchmarks  {env['time']}  commit {env['git_commit']}")
    print(f"  python {env['python']}, {env['cpu_count']} cores, {env['mem_total_gib']} GiB; versions {env['versions']}")
    print(f"  {zarrdask_status()}")
    print(f"  {geom.describe()}")
    print(f"  repeat {args.repeat} (median and min reported); data dir {data_dir}")
    print(f"  page cache: {env['page_cache']}")
    print(f"  numpy hugepage madvise: {args.numpy_hugepages}; THP: {env.get('thp')}")
    if env["OPENBLAS_CORETYPE"]:
        print(f"  OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']} (irrelevant here: no BLAS in these paths)")

    names = SCENARIOS if args.scenario == "all" else (args.scenario,)
    results = []
    try:
        for name in names:
            print(f"\n-- scenario {name}", flush=True)
            t0 = time.perf_counter()
            sc = run_scenario(name, geom, args, data_dir)
            sc.wall_s = time.perf_counter() - t0
            results.append(sc)
            print()
            print(render_scenario(sc), flush=True)
            if args.json:  # keep partial results if a later scenario dies
                write_json(args.json, env, vars(args), results)
    finally:
        if tmp is not None:
            rmtree(tmp)

    print("\n\n================ summary (ratio = peer time / zarrdask time; > 1 means zarrdask faster)")
    for sc in results:
        print()
        print(render_scenario(sc))
    harness.finish(env, args, results)
    return 0


def run_scenario(name: str, geom: Geometry, args, data_dir: str):
    if name == "core":
        import bench_core

        return bench_core.run(geom, args.repeat, data_dir, cross=not args.no_cross)
    if name == "sharding":
        import bench_sharding

        return bench_sharding.run(geom, args.repeat, data_dir, n_windows=args.windows, cross=not args.no_cross)
    if name == "dask":
        import bench_dask

        return bench_dask.run(geom, args.repeat, data_dir)
    if name == "xarray":
        import bench_xarray

        return bench_xarray.run(geom, args.repeat, data_dir)
    if name == "layouts":
        import bench_layouts

        return bench_layouts.run(geom, args.repeat, data_dir)
    raise ValueError(name)


if __name__ == "__main__":
    sys.exit(main())
