"""One shard slab decoded on one thread: frame by frame, in runs, and libzstd's bare call.

A slab's zstd frames lie back to back in the shard and go to neighbouring slots, so
``decompress.zstd_into`` decodes them with one libzstd call once ``zstd_frames.exact_frames``
has walked their headers (see benchmarks/HISTORY.md, "zstd frames in one call"). This times,
over the first slab of the first shard of each sharded copy written by ``run.py sharding``:

* ``frame by frame``: the same frames as plain lists (no layout known, one call each);
* ``in runs``: as ``Frames`` / ``Slots`` (what a whole-shard read does), walk included;
* ``bare call``: one ``numcodecs.zstd.decompress`` over the slab's bytes, no checks;
* ``walk``: ``exact_frames`` alone.

    python benchmarks/probes/zstd_runs.py [--data-dir benchmarks/data] [--rounds 200]
"""

from __future__ import annotations

import argparse
import glob
import os
import time
from collections.abc import Callable
from pathlib import Path

import numcodecs.zstd
import numpy as np

import zarrdask
from zarrdask.codecs import decompress, zstd_frames
from zarrdask.codecs.base import Frames, Slots
from zarrdask.nodes.units.block_placement import slabs

HERE = Path(__file__).resolve().parent  # benchmarks/probes
BENCH = HERE.parent


def per_call_ms(fn: Callable[[], object], rounds: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - start) / rounds * 1e3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(BENCH / "data"))
    p.add_argument("--rounds", type=int, default=200)
    args = p.parse_args()
    for layout in ("sharded", "sharded_large"):
        path = os.path.join(args.data_dir, layout, "zarrdask")
        if not os.path.exists(path):
            print(f"{path}: missing (run `run.py sharding` first)")
            continue
        array = zarrdask.open_array(path)
        codec = array.units.pipeline.array_bytes  # the sharding codec
        shard = sorted(f for f in glob.glob(os.path.join(path, "c", "**"), recursive=True) if os.path.isfile(f))[0]
        blob = open(shard, "rb").read()
        view = memoryview(blob)
        slab = slabs(codec.grid_shape, codec.chunk_shape, array.dtype.itemsize)[0]
        spans = codec.index_of(blob, shard).spans(slab.start, slab.count)
        starts, ends = [s for s, _ in spans], [e for _, e in spans]
        size = int(np.prod(codec.chunk_shape)) * array.dtype.itemsize
        stack = bytearray(size * slab.count)
        memory = memoryview(stack)
        rows = {
            "frame by frame": lambda: decompress.zstd_into(
                [view[s:e] for s, e in spans], [memory[k * size: (k + 1) * size] for k in range(slab.count)]),
            "in runs": lambda: decompress.zstd_into(Frames(view, starts, ends), Slots(memory, size, range(slab.count))),
            "bare call": lambda: numcodecs.zstd.decompress(view[starts[0]: ends[-1]], memory),
            "walk": lambda: zstd_frames.exact_frames(np.frombuffer(view, np.uint8), np.array(starts),
                                                     np.array(ends), size),
        }
        print(f"{layout}: slab of {slab.count} x {size // 1024} KiB frames")
        for name, fn in rows.items():
            print(f"  {name:15} {per_call_ms(fn, args.rounds):7.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
