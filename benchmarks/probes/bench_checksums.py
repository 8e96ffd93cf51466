"""Reading with and without crc32c verification (``verify_checksums``), zarrdask only.

Two sharded float32 arrays (shards (16, 512, 512), inner chunks (4, 64, 64)) whose inner
chunks and shard index carry a crc32c: ``bytes + crc32c`` (no compression: the checksum's
largest share of a read) and ``bytes + zstd-1 + crc32c``. Each is read whole, R times
each way, interleaved; prints the median and min seconds and GiB/s.

    .venv/bin/python benchmarks/probes/bench_checksums.py --size-mib 256 --repeat 7
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time

import numpy as np

import zarrdask

CHAINS = {
    "bytes+crc32c": [{"name": "crc32c"}],
    "bytes+zstd1+crc32c": [{"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    depth = max(16, args.size_mib // 16 * 16)  # (depth, 512, 512) float32 = depth MiB
    shape = (depth, 512, 512)
    rng = np.random.default_rng(0)
    data = (np.sin(np.arange(depth)[:, None, None] / 7.0) + rng.standard_normal(shape) * 0.01).astype("float32")
    with tempfile.TemporaryDirectory() as tmp:
        for name, compressors in CHAINS.items():
            path = f"{tmp}/{name}.zarr"
            zarrdask.create_array(path, shape=shape, dtype="float32", chunks=(4, 64, 64), shards=(16, 512, 512),
                                  compressors=compressors)[...] = data
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.repeat):
                for verify in (True, False):
                    array = zarrdask.open_array(path, verify_checksums=verify)
                    gc.collect()
                    start = time.perf_counter()
                    out = array[...]
                    times[verify].append(time.perf_counter() - start)
                    assert np.array_equal(out, data)
            for verify in (True, False):
                med = statistics.median(times[verify])
                print(f"{name:20s} verify_checksums={verify!s:5s} median {med:.3f} s  min {min(times[verify]):.3f} s  "
                      f"{data.nbytes / med / 2**30:.2f} GiB/s")


if __name__ == "__main__":
    main()
