#!/usr/bin/env python
"""xarray's materialised read, every engine and the floor alternated, run by run.

    python benchmarks/probes/xarray_materialise.py [--rounds 6] [--layouts unsharded,big-inner]
                                                   [--readers zarrdask,zarr,floor] [--load]

``xr.open_dataset(ds, engine=E, chunks={})["v"].values`` (``.load()`` of the dataset with
``--load``) on ``bench_layouts.py``'s cached datasets, for engine="zarrdask" and
engine="zarr" (zarr-python), and the dask-compute floor (a dask array of libzstd tasks, one
per stored unit, ``.compute()``d: no Zarr code), in rotated order each round on the threaded
scheduler, every result compared with the data. Each run prints its time and the kernel's
counters over it (``materialise.vmstat``: huge pages faulted and fallen back, compaction
stalls, this process's minor faults), so an outlier can be told from a reader's own cost:
a slow run with the same faults as a fast one is the machine's fresh memory, not the reader.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(BENCH))
sys.path.insert(2, str(BENCH.parent))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--layouts", default="unsharded,big-inner")
    p.add_argument("--readers", default="zarrdask,zarr,floor")
    p.add_argument("--load", action="store_true", help="time .load() of the dataset instead of ['v'].values")
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--data-dir", default=str(BENCH / "data"))
    args = p.parse_args(argv)

    import dask
    import numpy as np
    import xarray as xr

    import zstd_floor
    from bench_layouts import LAYOUTS, layout_array, layout_dataset, scaled
    from harness import Geometry, make_data
    from materialise import delta, vmstat

    geom = Geometry.from_size(args.size_mib)
    data = make_data(geom.shape)
    for name in args.layouts.split(","):
        layout = scaled(LAYOUTS[name], geom.shape)
        path = layout_array(name, layout, data, args.data_dir)
        ds_path = layout_dataset(name, path)

        def materialise(engine: str, ds_path: str = ds_path) -> np.ndarray:
            ds = xr.open_dataset(ds_path, engine=engine, chunks={})
            return ds.load()["v"].values if args.load else ds["v"].values

        readers = {"zarrdask": lambda: materialise("zarrdask"), "zarr": lambda: materialise("zarr"),
                   "floor": zstd_floor.dask_floor(path)}
        readers = {k: readers[k] for k in args.readers.split(",")}
        times: dict[str, list[float]] = {k: [] for k in readers}
        with dask.config.set(scheduler="threads"):
            for k in readers:  # warm-up
                readers[k]()
            for r in range(args.rounds):
                order = list(readers)
                order = order[r % len(order):] + order[: r % len(order)]
                for k in order:
                    gc.collect()
                    before = vmstat()
                    t = time.perf_counter()
                    out = readers[k]()
                    times[k].append(time.perf_counter() - t)
                    counters = delta(before, vmstat())
                    assert np.array_equal(out, data), k
                    del out
                    print(f"{name} round {r} {k:8s} {times[k][-1]:.3f} s  [{counters}]", flush=True)
        for k, t in times.items():
            print(f"{name} {k:8s} med {statistics.median(t):.3f} s [{min(t):.3f}..{max(t):.3f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
