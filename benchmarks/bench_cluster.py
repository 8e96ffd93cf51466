#!/usr/bin/env python
"""A process cluster writing to and reading from S3 (moto's server on 127.0.0.1): wall times.

    python benchmarks/bench_cluster.py [--size-mib 64] [--repeat 3]

``distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=2)``. One job
writes a float32 array (N x N) into shards of 512 x 512 (inner chunks 128 x 128, zstd)
from dask chunks of 500 x 500 that cut through every shard; a second job reads it back
with ``from_zarr(...).compute()``, a third through ``xr.open_dataset(engine="zarrdask",
chunks={})``. Both reads are compared bit for bit. moto is a pure-Python S3 server
(a correctness tool, ~100-200 objects/s): these times measure it as much as zarrdask.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import uuid
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the working tree's zarrdask
sys.path.insert(1, str(HERE.parent / "tests"))

os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                  AWS_EC2_METADATA_DISABLED="true")

import dask.array as da  # noqa: E402
import distributed  # noqa: E402
import numpy as np  # noqa: E402
import s3fs  # noqa: E402
import xarray as xr  # noqa: E402
from _s3 import s3_storage_options  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

import zarrdask  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mib", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    n = int((args.size_mib * 2**20 / 4) ** 0.5)
    data = np.random.default_rng(0).standard_normal((n, n)).astype("f4").round(2)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = s3_storage_options(f"http://{host}:{port}")
    s3fs.S3FileSystem(**options, skip_instance_cache=True).mkdir("bench")
    times: dict[str, list[float]] = {"write (misaligned chunks)": [], "read: from_zarr": [], "read: xarray": []}
    try:
        with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=2,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            for _ in range(args.repeat):
                url = f"s3://bench/{uuid.uuid4().hex}.zarr"
                zarrdask.create_group(url, storage_options=options)
                source = client.persist(da.from_array(data, chunks=(500, 500)))  # on the workers, untimed
                distributed.wait(source)
                start = time.perf_counter()
                client.compute(zarrdask.to_zarr(source, url, path="t", chunks=(128, 128), shards=(512, 512),
                                                dimension_names=["y", "x"], storage_options=options,
                                                compute=False)).result()
                times["write (misaligned chunks)"].append(time.perf_counter() - start)
                start = time.perf_counter()
                back = client.compute(zarrdask.from_zarr(url, path="t", storage_options=options)).result()
                times["read: from_zarr"].append(time.perf_counter() - start)
                assert np.array_equal(back, data)
                start = time.perf_counter()
                ds = xr.open_dataset(url, engine="zarrdask", chunks={}, storage_options=options, consolidated=False)
                back = client.compute(ds["t"].data).result()
                times["read: xarray"].append(time.perf_counter() - start)
                assert np.array_equal(back, data)
    finally:
        server.stop()
    shards = (-(-n // 512)) ** 2
    print(f"LocalCluster(processes=True, 2 workers x 2 threads) <-> moto S3 on 127.0.0.1: {n} x {n} float32 "
          f"({args.size_mib} MiB), {shards} shards; medians of {args.repeat}; reads bit-exact")
    for what, ts in times.items():
        print(f"  {what:28s} {statistics.median(ts):7.2f} s  (min {min(ts):.2f})")


if __name__ == "__main__":
    main()
