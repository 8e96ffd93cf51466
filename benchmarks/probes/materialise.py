#!/usr/bin/env python
"""Where a materialised dask read's time goes: the blocks, then dask's assembly of them.

    python benchmarks/probes/materialise.py [--rounds 5] [--layouts small-inner] [--hugepages on|off]

For each layout of ``bench_layouts.py`` (its cached arrays), alternating zarrdask's
``from_zarr(p)`` with ``da.from_array(TensorStore)`` round by round, on the threaded
scheduler: the wall time of ``.compute()``; the same graph computed as its blocks only
(``dask.compute(*blocks)``, nothing assembled) followed by numpy's concatenation of those
blocks into one array, timed apart; and the kernel's counters (``/proc/vmstat``) over each
``.compute()``: transparent huge pages faulted in and fallen back to 4 KiB pages, direct
compaction stalls, and the minor page faults of this process.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(BENCH))
sys.path.insert(2, str(BENCH.parent))

COUNTERS = ("thp_fault_alloc", "thp_fault_fallback", "compact_stall", "compact_fail")


def vmstat() -> dict[str, int]:
    values = {}
    with open("/proc/vmstat") as f:
        for line in f:
            name, value = line.split()
            values[name] = int(value)
    values["minflt"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    return values


def delta(before: dict[str, int], after: dict[str, int]) -> str:
    return " ".join(f"{k}={after.get(k, 0) - before.get(k, 0)}" for k in (*COUNTERS, "minflt"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--layouts", default="small-inner")
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--hugepages", choices=("on", "off"), default="on")
    p.add_argument("--data-dir", default=str(BENCH / "data"))
    args = p.parse_args(argv)

    import dask
    import dask.array as da
    import numpy as np
    import tensorstore as ts

    import zarrdask
    from bench_layouts import LAYOUTS, layout_array, scaled
    from harness import Geometry, make_data
    from libs import TSDaskAdapter, ts_spec

    if args.hugepages == "off":
        np._core.multiarray._set_madvise_hugepage(False)
    geom = Geometry.from_size(args.size_mib)
    data = make_data(geom.shape)
    for name in args.layouts.split(","):
        layout = scaled(LAYOUTS[name], geom.shape)
        path = layout_array(name, layout, data, args.data_dir)
        makers = {
            "zarrdask": lambda: zarrdask.from_zarr(path),
            "dask+ts": lambda: da.from_array(TSDaskAdapter(ts.open(ts_spec(path), read=True).result()),
                                             chunks=layout.grid, name="ts-" + uuid.uuid4().hex),
        }
        times: dict[str, dict[str, list[float]]] = {k: {"compute": [], "blocks": [], "assemble": []} for k in makers}
        with dask.config.set(scheduler="threads"):
            for lib in makers:  # warm-up
                makers[lib]().compute()
            for r in range(args.rounds):
                for lib in (makers if r % 2 == 0 else reversed(makers)):
                    before = vmstat()
                    t = time.perf_counter()
                    out = makers[lib]().compute()
                    times[lib]["compute"].append(time.perf_counter() - t)
                    counters = delta(before, vmstat())
                    assert np.array_equal(out, data)
                    del out
                    x = makers[lib]()
                    t = time.perf_counter()
                    blocks = dask.compute(*x.to_delayed().ravel())
                    times[lib]["blocks"].append(time.perf_counter() - t)
                    nested = np.empty(x.numblocks, dtype=object)
                    for i, b in zip(np.ndindex(*x.numblocks), blocks):
                        nested[i] = b
                    t = time.perf_counter()
                    out = np.block(nested.tolist())
                    times[lib]["assemble"].append(time.perf_counter() - t)
                    del out, blocks, nested
                    print(f"{name} round {r} {lib:9s} compute {times[lib]['compute'][-1]:.3f} s  "
                          f"blocks {times[lib]['blocks'][-1]:.3f} s  assemble {times[lib]['assemble'][-1]:.3f} s"
                          f"  [{counters}]", flush=True)
        for lib, t in times.items():
            print(f"{name} {lib:9s} " + "  ".join(
                f"{k} med {statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}]" for k, v in t.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
