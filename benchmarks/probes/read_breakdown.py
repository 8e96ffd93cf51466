#!/usr/bin/env python
"""Where a dask read's time goes, per layout: inside the read tasks and between them.

    python benchmarks/probes/read_breakdown.py [--rounds 7] [--layouts unsharded,big-inner,small-inner]

For each layout of ``bench_layouts.py`` (its cached arrays; run that first or let this
write them) and the threaded scheduler with one worker per core:

* **dask, interleaved with dask + TensorStore**: the wall time of ``.sum().compute()``,
  the mean read call inside a task (``BlockReader.__getitem__`` /
  ``TSDaskAdapter.__getitem__``) and the mean gap between one worker's consecutive read
  calls (the block's ``sum``, dask's scheduling, waits for the GIL);
* **one unit read on its own** (one thread, the other core idle: the executor may use it),
  split by taking parts away: the fetch (the unit's bytes from the store), the read into
  an output whose pages are already mapped (``out=``: fetch + decode + place), and the read
  into a fresh output (+ allocation and page faults). Serial figures: ``threads=1``.

Medians over the rounds; each round reads every unit once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/probes
BENCH = HERE.parent  # the suites and their helpers (harness, libs, reference)
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(BENCH))
sys.path.insert(2, str(BENCH.parent))  # the working tree's zarrdask


def unit_stages(path: str, rounds: int) -> dict[str, float]:
    """Per unit (ms): the fetch, the read into a warm output, the read into a fresh one;
    serial (``threads=1``) and helped (the executor's default)."""
    import numpy as np

    import zarrdask

    array = zarrdask.open_array(path)
    unit = array.shards or array.chunks
    counts = [-(-s // u) for s, u in zip(array.shape, unit)]
    coords = list(np.ndindex(*counts))
    regions = [tuple(slice(c * u, min((c + 1) * u, s)) for c, u, s in zip(idx, unit, array.shape)) for idx in coords]
    keys = [array.units.key(idx) for idx in coords]
    warm = np.zeros(unit, array.dtype)
    serial = array.with_options(threads=1)
    out: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        t = time.perf_counter()
        for key in keys:
            array.store.get(key)
        out["fetch"].append(time.perf_counter() - t)
        for label, arr in (("serial", serial), ("helped", array)):
            t = time.perf_counter()
            for r in regions:
                arr.get_basic_selection(r, out=warm)
            out[f"warm output, {label}"].append(time.perf_counter() - t)
            t = time.perf_counter()
            for r in regions:
                arr[r]
            out[f"fresh output, {label}"].append(time.perf_counter() - t)
    return {k: statistics.median(v) / len(regions) * 1e3 for k, v in out.items()}


def dask_calls(path: str, rounds: int, pause: float) -> dict[str, dict[str, float]]:
    """zarrdask and dask + TensorStore, interleaved: wall, tasks, read call and gap (medians)."""
    import dask
    import dask.array as da
    import tensorstore as ts

    import zarrdask
    from dask_task_gaps import CallTimes
    from libs import TSDaskAdapter, ts_spec
    from zarrdask.nodes.block_reader import BlockReader

    array = zarrdask.open_array(path)
    unit = array.shards or array.chunks
    runs = {
        "zarrdask": lambda: zarrdask.from_zarr(path).sum().compute(),
        "dask+tensorstore": lambda: da.from_array(
            TSDaskAdapter(ts.open(ts_spec(path), read=True).result()), chunks=unit,
            name="ts-" + uuid.uuid4().hex).sum().compute(),
    }
    timers = {"zarrdask": CallTimes(), "dask+tensorstore": CallTimes()}
    timers["zarrdask"].wrap(BlockReader)
    timers["dask+tensorstore"].wrap(TSDaskAdapter)
    results: dict[str, list[dict[str, float]]] = defaultdict(list)
    with dask.config.set(scheduler="threads"):
        for fn in runs.values():
            fn()
        names = list(runs)
        for r in range(rounds):
            for name in names[r % 2:] + names[:r % 2]:
                timers[name].calls.clear()
                time.sleep(pause)
                start = time.perf_counter()
                runs[name]()
                results[name].append(timers[name].summary(time.perf_counter() - start))
    return {name: {k: statistics.median(row[k] for row in rows) for k in rows[0]} for name, rows in results.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--pause", type=float, default=0.3, help="seconds idle before each timed dask run")
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--data-dir", default=str(BENCH / "data"))
    p.add_argument("--layouts", default="unsharded,big-inner,small-inner")
    args = p.parse_args()

    from bench_layouts import LAYOUTS, describe, layout_array, scaled
    from harness import Geometry, make_data

    geom = Geometry.from_size(args.size_mib)
    data = make_data(geom.shape)  # (the cached arrays are checked against its shape)
    for name in args.layouts.split(","):
        layout = scaled(LAYOUTS[name], geom.shape)
        path = layout_array(name, layout, data, args.data_dir)
        calls = dask_calls(path, args.rounds, args.pause)
        stages = unit_stages(path, args.rounds)
        print(f"\n[{name}: {describe(layout)}] {geom.shape} float32, medians of {args.rounds}")
        print(f"  {'dask .sum()':18} {'wall':>8} {'tasks':>6} {'read call':>10} {'gap':>8}")
        for lib, m in calls.items():
            print(f"  {lib:18} {m['wall_s']:7.3f}s {m['calls']:6.0f} {m['call_ms']:8.2f}ms {m['gap_ms']:6.2f}ms")
        print("  one unit on its own (ms per unit): "
              + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
