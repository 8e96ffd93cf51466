"""The ways in, timed against another checkout of zarrdask (issue 42's before/after).

Times what the front door changed, each in a fresh process per round so nothing is
cached between trees: opening a group of 50 arrays (no consolidated metadata) and each
array in it, ``xr.open_dataset(engine="zarrdask")`` of 50 variables, ``from_zarr(url)``'s
graph, ``open_array(url)`` and ``to_zarr`` of a small new array. Rounds alternate the
trees (A B B A ...); medians, bests and the ratios A/B are printed. On the 2-vCPU VMs
this was written on, a process runs either fast or about 1.6x slower throughout, whichever
core it is pinned to; the bests compare the fast processes.

    .venv/bin/python benchmarks/probes/open_paths.py --tree OLD_CHECKOUT --tree . --rounds 10 --cpu 0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_CHILD = r'''
import json, sys, tempfile, timeit
import numpy as np, dask.array as da, xarray as xr
import zarrdask
where = sys.argv[1]
group, ds, arr = where + "/g.zarr", where + "/ds.zarr", where + "/g.zarr/a0"
def best(f, n=20):
    f()
    return min(timeit.repeat(f, number=1, repeat=n))
def group_open():
    g = zarrdask.open_group(group, mode="r", use_consolidated=False)
    [a for _, a in g.arrays()]
out = {
    "open_group + 50 arrays": best(group_open),
    "xr.open_dataset, 50 variables": best(lambda: xr.open_dataset(ds, engine="zarrdask").close()),
    "from_zarr(url) graph": best(lambda: zarrdask.from_zarr(arr)),
    "open_array(url)": best(lambda: zarrdask.open_array(arr)),
}
x = da.ones((64, 64), chunks=32)
count, fresh = iter(range(10**6)), tempfile.mkdtemp(dir=where)
out["to_zarr(x, new url)"] = best(lambda: zarrdask.to_zarr(x, f"{fresh}/new{next(count)}.zarr"))
print(json.dumps(out))
'''

_MAKE = r'''
import sys, numpy as np, xarray as xr, zarrdask
where = sys.argv[1]
g = zarrdask.open_group(where + "/g.zarr", mode="w")
for i in range(50):
    g.create_array(f"a{i}", shape=(64, 128, 128), chunks=(16, 64, 64), shards=(32, 128, 128), dtype="f4")
xr.Dataset({f"v{i}": (("t", "y", "x"), np.zeros((4, 8, 8), "f4")) for i in range(50)}).zarrdask.to_zarr(
    where + "/ds.zarr", consolidated=False)
'''


def _run(tree: str, code: str, where: str, cpu: int | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    done = subprocess.run([sys.executable, "-c", code, where], env=env, capture_output=True, text=True,
                          cwd=os.path.abspath(tree), preexec_fn=pin)
    if done.returncode:
        raise SystemExit(f"{tree}: {done.stderr.strip().splitlines()[-1]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="a checkout (twice: A then B)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--raw", action="store_true", help="print every round's times too")
    parser.add_argument("--cpu", type=int, default=None,
                        help="run every round on this core (a 2-vCPU VM's rounds are otherwise fast or slow by the core)")
    args = parser.parse_args()
    a, b = args.tree
    with tempfile.TemporaryDirectory() as where:
        _run(b, _MAKE, where)
        times: dict[str, dict[str, list[float]]] = {a: {}, b: {}}
        for r in range(args.rounds):
            for tree in ((a, b) if r % 2 == 0 else (b, a)):
                for name, t in json.loads(_run(tree, _CHILD, where, args.cpu)).items():
                    times[tree].setdefault(name, []).append(t)
    print(f"{'workload':32} {'A ms':>9} {'B ms':>9} {'A/B':>6} {'A best':>9} {'B best':>9} {'A/B':>6}"
          f"   (A: {a}, B: {b}; medians and bests of {args.rounds} processes each)")
    for name in times[a]:
        ma, mb = statistics.median(times[a][name]), statistics.median(times[b][name])
        ba, bb = min(times[a][name]), min(times[b][name])
        print(f"{name:32} {ma * 1e3:9.3f} {mb * 1e3:9.3f} {ma / mb:6.2f} {ba * 1e3:9.3f} {bb * 1e3:9.3f} {ba / bb:6.2f}")
        if args.raw:
            for tree in (a, b):
                print(f"    {tree}: " + " ".join(f"{t * 1e3:.3f}" for t in times[tree][name]))


if __name__ == "__main__":
    main()
