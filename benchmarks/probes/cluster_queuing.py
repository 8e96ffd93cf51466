#!/usr/bin/env python
"""What a read graph of many tiny shards costs on a process cluster, against its floors.

    python benchmarks/probes/cluster_queuing.py [--saturation 1.1] [--rounds 5]

On ``LocalCluster(n_workers=2, threads_per_worker=1)``, the read + sum of the array of
1,024 shards of 16 KiB that ``bench_layouts.py --workloads cluster`` writes (run that
first), through zarrdask and through dask + zarr-python, against two floors: a reader that
returns ``np.ones`` without any I/O (what any one-task-per-block read graph costs) and the
same sum over blocks persisted in worker memory. ``--saturation`` sets distributed's
``distributed.scheduler.worker-saturation`` before the cluster starts (``inf``: root tasks
are not queued on the scheduler). Medians over the rounds after one warm-up round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/probes
BENCH = HERE.parent
sys.path.insert(0, str(BENCH.parent))  # the working tree's zarrdask


class Ones:
    """A block reader that reads nothing: every block is ones."""

    shape, ndim = (2048, 2048), 2

    def __init__(self) -> None:
        import numpy as np

        self.dtype = np.dtype("float32")

    def __getitem__(self, key):
        import numpy as np

        return np.ones(tuple(s.stop - s.start for s in key), self.dtype)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--saturation", type=float, default=1.1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--path", default=str(BENCH / "data" / "ref" / "layout_cluster1024.zarr"))
    args = p.parse_args()

    import dask
    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster, wait

    import zarrdask

    dask.config.set({"distributed.scheduler.worker-saturation": args.saturation})
    shard = zarrdask.open_array(args.path).shards
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        held = da.from_array(np.ones((2048, 2048), "float32"), chunks=shard).persist()
        wait(held)
        graphs = {
            "zarrdask from_zarr(p).sum()": lambda: zarrdask.from_zarr(args.path).sum(),
            "dask + zarr-python from_zarr(p, chunks=shard).sum()": lambda: da.from_zarr(args.path, chunks=shard).sum(),
            "a reader that reads nothing, .sum()": lambda: da.from_array(Ones(), chunks=shard, asarray=False).sum(),
            "blocks held in worker memory, .sum()": lambda: held.sum(),
        }
        times: dict[str, list[float]] = {k: [] for k in graphs}
        for r in range(args.rounds + 1):
            for name, graph in graphs.items():
                x = graph()
                start = time.perf_counter()
                x.compute()
                if r:
                    times[name].append(time.perf_counter() - start)
    print(f"worker-saturation {args.saturation}; medians of {args.rounds}")
    for name, ts in times.items():
        print(f"  {name:55} {statistics.median(ts):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
