"""engine="zarrdask"'s two open shortcuts against xarray's own functions (issue 24).

The shortcuts: the direct decode of plain variables (``xarray_backend/decode.py``) and the
Dataset assembled through ``compat.xarray.construct_dataset`` (``backend._dataset``). The
house rule keeps a shortcut only when it saves at least 10 %; this measures the
50-variable open of ``bench_xarray.py`` four ways, interleaved round by round: both
shortcuts, each alone, and neither (xarray's ``decode_cf_variables`` and ``Dataset``).

    .venv/bin/python benchmarks/probes/xarray_fast_paths.py [--rounds 15] [--opens 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from unittest import mock

_BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # benchmarks/ (this file is in benchmarks/probes)
sys.path.insert(0, os.path.dirname(_BENCH))  # the working tree's zarrdask
sys.path.insert(0, _BENCH)  # harness, reference

import reference  # noqa: E402

from zarrdask.xarray_backend import backend, decode  # noqa: E402


def _mode(decode_fast: bool, construct_fast: bool) -> list[mock._patch]:
    patches = []
    if not decode_fast:
        patches.append(mock.patch.object(decode, "is_plain", lambda variable, use_cftime=None: False))
    if not construct_fast:
        patches.append(mock.patch.object(backend, "construct_dataset", lambda *args: None))
    return patches


def _median_open(path: str, opens: int, chunks: dict | None) -> float:
    import xarray as xr

    times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(opens):
            t0 = time.perf_counter()
            ds = xr.open_dataset(path, engine="zarrdask", chunks=chunks)
            times.append(time.perf_counter() - t0)
            ds.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--opens", type=int, default=20)
    parser.add_argument("--data-dir", default=os.path.join(_BENCH, "data"))
    args = parser.parse_args()
    path = reference.many_variables_dataset(args.data_dir, 50)
    modes = {"both shortcuts": (True, True), "decode only": (True, False),
             "construct only": (False, True), "neither (xarray's)": (False, False)}
    for chunks, label in ((None, "lazy"), ({}, "chunks={}")):
        results: dict[str, list[float]] = {name: [] for name in modes}
        for r in range(args.rounds + 1):  # round 0: warm-up
            names = list(modes)
            names = names[r % len(names):] + names[:r % len(names)]
            for name in names:
                patches = _mode(*modes[name])
                for p in patches:
                    p.start()
                try:
                    t = _median_open(path, args.opens, chunks)
                finally:
                    for p in patches:
                        p.stop()
                if r:
                    results[name].append(t)
        base = statistics.median(results["neither (xarray's)"])
        print(f"open_dataset 50 variables ({label}), median of {args.rounds} rounds x {args.opens} opens")
        for name, times in results.items():
            med = statistics.median(times)
            print(f"  {name:<20} {med * 1e3:7.2f} ms  min {min(times) * 1e3:7.2f} ms  "
                  f"{(base - med) / base:+.1%} vs xarray's")


if __name__ == "__main__":
    main()
