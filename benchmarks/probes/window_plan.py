#!/usr/bin/env python
"""What a cold window read's plan costs in its place, and the most planning could give.

    python benchmarks/probes/window_plan.py [--rounds 4] [--layout small-inner] [--data-dir benchmarks/data]

The 200 unaligned 1 x 64 x 64 windows of ``bench_layouts.py``'s window rows, on that
layout's cached array (run ``bench_layouts.py --layouts <layout> --workloads windows``
first). Window by window, each after a fresh ``zarrdask.open_array`` (untimed), as the cold
row reads them, alternated in one process:

* **planned**: the read as it is;
* **plan given**: the same read with its plan taken from a dict made beforehand (the probe
  patches ``ChunkSource.plan``): what is left when planning costs nothing;
* **floor**: ``zstd_floor.window_floor``'s cold read of the same window (no Zarr code).

Then the plan alone, in a loop of its own over the 200 windows (us per plan). Medians of the
per-read latencies (us) per round, then of the rounds; the order of the readers turns each
round. Planning costs two to three times its loop time in place: each read's decodes leave
the caches cold for the Python that follows the next open.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/probes
BENCH = HERE.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))  # the working tree's zarrdask


def main() -> None:
    from harness import window_probe

    args, path, windows = window_probe(__doc__)

    import zarrdask
    import zstd_floor
    from zarrdask.indexing import basic_selection
    from zarrdask.nodes.units.base import ChunkSource

    first = zarrdask.open_array(path)
    selections = [basic_selection(w, first.shape)[0] for w in windows]
    plans = {repr(w): first.units.plan(s) for w, s in zip(windows, selections)}
    floor_read = zstd_floor.window_floor(path, windows, True)[1]
    plan, current = ChunkSource.plan, [""]

    def given(self, selection):  # (the window being read's plan, made beforehand)
        return plans[current[0]]

    rows: dict[str, list[float]] = defaultdict(list)
    try:
        for r in range(args.rounds):
            lat: dict[str, list[float]] = defaultdict(list)
            order = ("planned", "plan given") if r % 2 == 0 else ("plan given", "planned")
            for w in windows:
                current[0] = repr(w)
                for mode in order:
                    ChunkSource.plan = plan if mode == "planned" else given
                    a = zarrdask.open_array(path)
                    t0 = time.perf_counter()
                    a[w]
                    lat[mode].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                floor_read(w)
                lat["floor"].append(time.perf_counter() - t0)
            for k, v in lat.items():
                rows[k].append(statistics.median(v) * 1e6)
            print("  round: " + ", ".join(f"{k} {v[-1]:.0f} us" for k, v in rows.items()), flush=True)
    finally:
        ChunkSource.plan = plan
    source = first.units
    t0 = time.perf_counter()
    for _ in range(20):
        for s in selections:
            source.plan(s)
    loop = (time.perf_counter() - t0) / (20 * len(selections)) * 1e6
    print(f"{args.layout}, 200 windows 1x64x64, medians of {args.rounds} rounds:")
    for k, v in rows.items():
        print(f"  {k:12s} {statistics.median(v):6.0f} us")
    planned, given_ = statistics.median(rows["planned"]), statistics.median(rows["plan given"])
    print(f"  the plan in place: {planned - given_:.0f} us; alone, in a loop: {loop:.1f} us per plan")


if __name__ == "__main__":
    main()
