"""Where a dask read's wall time goes: inside the read tasks, or between them.

Runs ``.sum().compute()`` over the shared sharded array (``reference.sharded_array``, as
``run.py dask`` reads it) through zarrdask and through TensorStore, interleaved, and times
every library read call inside the tasks (``BlockReader.__getitem__`` /
``TSDaskAdapter.__getitem__``) on each worker thread. Per run it reports the wall time,
the mean read call, and the mean gap between one worker's consecutive read calls, which
holds the chunk's ``sum``, dask's scheduling and any wait for the GIL. A ``--control`` row
replaces the read with a GIL-free sleep plus a page-touching fill of the same output, to
show the gap that dask and ``sum`` alone leave.

    python benchmarks/probes/dask_task_gaps.py [--rounds 9] [--pause 0.3] [--control]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/probes
BENCH = HERE.parent  # the suites and their helpers (harness, libs, reference)
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(BENCH))
sys.path.insert(2, str(BENCH.parent))  # the working tree's zarrdask


class CallTimes:
    """Start and end of every call of a wrapped method that returns data, per thread."""

    def __init__(self) -> None:
        self.calls: dict[int, list[tuple[float, float]]] = defaultdict(list)

    def wrap(self, cls: type, name: str = "__getitem__") -> None:
        inner = getattr(cls, name)
        calls = self.calls

        def timed(obj, key):
            start = time.perf_counter()
            out = inner(obj, key)
            if getattr(out, "size", 1):  # not dask's zero-size probe for the meta
                calls[threading.get_ident()].append((start, time.perf_counter()))
            return out

        setattr(cls, name, timed)

    def summary(self, wall: float) -> dict[str, float]:
        spans = [s for per in self.calls.values() for s in per]
        gaps = [b[0] - a[1] for per in self.calls.values() for a, b in zip(sorted(per), sorted(per)[1:])]
        return {
            "wall_s": wall,
            "calls": len(spans),
            "threads": len(self.calls),
            "call_ms": statistics.fmean(e - s for s, e in spans) * 1e3,
            "gap_ms": statistics.fmean(gaps) * 1e3 if gaps else 0.0,
        }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--pause", type=float, default=0.3, help="seconds idle before each timed run")
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--data-dir", default=str(BENCH / "data"))
    p.add_argument("--control", action="store_true", help="also a row with the read replaced by a sleep")
    args = p.parse_args()

    import dask
    import dask.array as da
    import numpy as np
    import tensorstore as ts

    import reference
    import zarrdask
    from harness import Geometry
    from libs import TSDaskAdapter, ts_spec
    from zarrdask.nodes.block_reader import BlockReader

    geom = Geometry.from_size(args.size_mib)
    path = reference.sharded_array(geom, args.data_dir)

    class Control:
        """A read that takes the GIL-free time of a zarrdask read and touches the same output."""

        shape, dtype, ndim = geom.shape, np.dtype("float32"), len(geom.shape)

        def __getitem__(self, key):
            out = np.empty([s.stop - s.start for s in key], self.dtype)
            out.fill(1)
            time.sleep(0.018)
            return out

    runs = {
        "zarrdask": lambda: zarrdask.from_zarr(path).sum().compute(),
        "tensorstore": lambda: da.from_array(
            TSDaskAdapter(ts.open(ts_spec(path), read=True).result()), chunks=geom.shard,
            name="ts-" + uuid.uuid4().hex).sum().compute(),
    }
    if args.control:
        runs["control (sleep 18 ms)"] = lambda: da.from_array(
            Control(), chunks=geom.shard, name="control-" + uuid.uuid4().hex).sum().compute()
    timers = {name: CallTimes() for name in runs}
    timers["zarrdask"].wrap(BlockReader)
    timers["tensorstore"].wrap(TSDaskAdapter)
    if args.control:
        timers["control (sleep 18 ms)"].wrap(Control)

    results: dict[str, list[dict[str, float]]] = defaultdict(list)
    with dask.config.set(scheduler="threads"):
        for fn in runs.values():
            fn()
        names = list(runs)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                timer = timers[name]
                timer.calls.clear()
                time.sleep(args.pause)
                start = time.perf_counter()
                runs[name]()
                results[name].append(timer.summary(time.perf_counter() - start))

    print(f"{path}: {geom.shape} float32, one task per shard {geom.shard}; medians of {args.rounds} runs")
    print(f"{'':24} {'wall':>8} {'tasks':>6} {'read call':>10} {'gap between calls':>18}")
    for name, rows in results.items():
        med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
        print(f"{name:24} {med['wall_s']:7.3f}s {med['calls']:6.0f} {med['call_ms']:8.2f}ms {med['gap_ms']:16.2f}ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
