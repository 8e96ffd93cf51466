"""Whole-shard reads: the slab shortcut against per-chunk placement (issue 24).

A shard read whole has its inner chunks decoded a slab at a time straight into a stack and
placed with one copy per slab (``nodes/units/block_placement.py``); the general path
decodes and places each inner chunk on its own (the path partly read shards take). The
house rule keeps a shortcut only when it saves at least 10 %; this reads one array both
ways, interleaved round by round, on ``bench_sharding.py``'s layout (shards (16, 512, 512),
inner chunks (4, 64, 64), zstd level 1, ``harness.make_data``'s float32 field). Equal values:
``tests/nodes/test_block_placement.py::test_slabs_equal_values_and_chunk_by_chunk``.

    .venv/bin/python benchmarks/probes/shard_blocks.py [--size-mib 512] [--rounds 7] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

_BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # benchmarks/ (this file is in benchmarks/probes)
sys.path.insert(0, os.path.dirname(_BENCH))  # the working tree's zarrdask
sys.path.insert(0, _BENCH)  # harness, reference

from harness import make_data  # noqa: E402

import zarrdask  # noqa: E402


def _chunk_by_chunk(array: zarrdask.Array) -> zarrdask.Array:
    """``array`` reading every shard chunk by chunk (the plan's ``block`` turned off)."""
    units = array.units
    plan = units.plan

    def no_blocks(selection):  # type: ignore[no-untyped-def]
        p = plan(selection)
        return type(p)(tuple(u._replace(block=False) for u in p.units))

    units.plan = no_blocks  # type: ignore[method-assign]
    return array


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help="ArrayOptions.threads (default: one per core)")
    args = parser.parse_args()
    shape = (max(16, args.size_mib // 4), 1024, 1024)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "a.zarr")
        a = zarrdask.create_array(path, shape=shape, dtype="float32", chunks=(4, 64, 64), shards=(16, 512, 512),
                                  compressors=[{"name": "zstd", "configuration": {"level": 1}}])
        a[...] = make_data(shape)
        times: dict[str, list[float]] = {"slabs (shortcut)": [], "chunk by chunk": []}
        for _ in range(args.rounds):
            for name in times:
                array = zarrdask.open_array(path).with_options(threads=args.threads)
                if name == "chunk by chunk":
                    _chunk_by_chunk(array)
                start = time.perf_counter()
                array[...]
                times[name].append(time.perf_counter() - start)
    fast, slow = (statistics.median(t) for t in times.values())
    for name, t in times.items():
        print(f"{name:18s} median {statistics.median(t):.3f}s  min {min(t):.3f}s")
    print(f"shortcut saves {1 - fast / slow:.1%} of the median ({shape} float32, threads={args.threads})")


if __name__ == "__main__":
    main()
