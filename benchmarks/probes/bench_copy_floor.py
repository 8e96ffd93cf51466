"""The floor of a warm 64-step slab pass through the decoded-chunk cache (issue 26): the
same copies in numpy alone, beside zarrdask's pass through its cache and its pass without.

    python benchmarks/probes/bench_copy_floor.py [--size-mib 512] [--repeat 7] [--step 64]

The array is bench_cache.py's (written once by zarr-python). A warm pass copies every
shard out of the cache into one result per slab; numpy alone makes the same copies from
the shards held in the array's axis order (the cheapest layout to copy out of: rows as
long as a shard's), in mappings without huge pages, into two alternating results, in
4 MiB slabs on two threads. Rounds interleaved; medians (min). What is printed: the three
passes and the ratio of the uncached pass to each of the others (issue 26's target for
the cache is 5x).
"""

from __future__ import annotations

import argparse
import mmap
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/probes
BENCH = HERE.parent  # bench_cache, harness
if __name__ == "__main__":
    sys.path.insert(0, str(BENCH))
    sys.path.insert(1, str(BENCH.parent))  # the working tree's zarrdask

import numpy as np  # noqa: E402

from bench_cache import climate_array, geometry  # noqa: E402
from harness import make_data  # noqa: E402

SLAB_BYTES = 4 << 20


def mapping(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 array over a private mapping of its own (no huge-page advice), written once."""
    nbytes = int(np.prod(shape)) * 4
    array = np.frombuffer(mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS), np.float32)
    array[:] = 1.0
    return array.reshape(shape)


def copy_pass(shards: dict[tuple[int, ...], np.ndarray], results: list[np.ndarray], step: int,
              shard_shape: tuple[int, ...], t_n: int, pool: ThreadPoolExecutor) -> None:
    """Every slab of ``step`` of the ``t_n`` steps assembled from the held shards, in 4 MiB
    slabs on the pool."""
    for n, t in enumerate(range(0, t_n, step)):
        result = results[n % 2]
        jobs = []
        for (ct, cy, cx), shard in shards.items():
            lo, hi = max(t, ct * shard_shape[0]), min(t + step, (ct + 1) * shard_shape[0])
            if lo >= hi:
                continue
            target = result[lo - t: hi - t, cy * shard_shape[1]: (cy + 1) * shard_shape[1],
                            cx * shard_shape[2]: (cx + 1) * shard_shape[2]]
            source = shard[lo - ct * shard_shape[0]: hi - ct * shard_shape[0]]
            rows = max(1, SLAB_BYTES * len(target) // max(target.nbytes, 1))
            jobs += [(target[a: a + rows], source[a: a + rows]) for a in range(0, len(target), rows)]
        list(pool.map(lambda job: job[0].__setitem__(Ellipsis, job[1]), jobs))


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--step", type=int, default=64)
    p.add_argument("--data-dir", default=str(BENCH / "data"))
    args = p.parse_args(argv)
    import zarrdask

    shape, layout = geometry(args.size_mib)
    path = climate_array(make_data(shape), layout, args.data_dir)
    cached = zarrdask.open_array(path, cache_bytes=2 * args.size_mib << 20)
    plain = zarrdask.open_array(path)
    shard_shape = tuple(layout.shards)
    grid = [-(-n // s) for n, s in zip(shape, shard_shape)]
    shards = {c: mapping(shard_shape) for c in np.ndindex(*grid)}
    results = [mapping((args.step, *shape[1:])) for _ in range(2)]
    pool = ThreadPoolExecutor(2)

    def zarrdask_pass(a: zarrdask.Array) -> None:
        for t in range(0, shape[0], args.step):
            a[t: t + args.step]

    passes = {"numpy copies alone": lambda: copy_pass(shards, results, args.step, shard_shape, shape[0], pool),
              "zarrdask through its cache (warm)": lambda: zarrdask_pass(cached),
              "zarrdask without a cache": lambda: zarrdask_pass(plain)}
    zarrdask_pass(cached)  # (fills the cache)
    times: dict[str, list[float]] = {name: [] for name in passes}
    for _ in range(args.repeat):
        for name, run in passes.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    print(f"{args.step}-step slabs through {shape} float32, shards {shard_shape}; medians (min) of {args.repeat}")
    median = {name: float(np.median(ts)) for name, ts in times.items()}
    for name, ts in times.items():
        print(f"  {name:36s} {median[name] * 1e3:8.1f} ms ({min(ts) * 1e3:.1f})")
    uncached = median["zarrdask without a cache"]
    for name in ("numpy copies alone", "zarrdask through its cache (warm)"):
        print(f"  without a cache / {name}: {uncached / median[name]:.2f}x")
    return times


if __name__ == "__main__":
    main()
