#!/usr/bin/env python
"""What is stored, asked of a large sparse array: zarrdask against zarr-python, in one run.

    python benchmarks/bench_counts.py [--repeat 5] [--s3-chunks 1000]

Two arrays, each written once by zarrdask (untimed), then opened and asked by each library
in turn, ``--repeat`` rounds interleaved (a fresh open per call, untimed):

* **local**: a (1000, 1000, 1000) uint8 array on local files of 10**6 shards (10, 10, 10)
  of inner chunks (5, 5, 5), of which 8 shards (64 inner chunks) are written, and the same
  unsharded (chunks (10, 10, 10), 10**6 of them, 8 written): ``nchunks_initialized``,
  ``nbytes_stored()``, ``info_complete()``.
* **s3**: a (``--s3-chunks``, 100) float32 array of one chunk per row, every chunk written,
  on a moto S3 server on 127.0.0.1 (each request a loopback round trip):
  ``nchunks_initialized``, ``nbytes_stored()``, ``info_complete()``.

Every answer is compared between the libraries (chunk counts and bytes stored; zarr-python
counts the inner chunks of a sharded array as its shards times the chunks per shard, which
equals zarrdask's count when every stored shard is full, as here). Medians and the ratio
zarr-python / zarrdask (above 1: zarrdask is faster).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the working tree's zarrdask

import numpy as np  # noqa: E402

import zarrdask  # noqa: E402

_S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}


def local_arrays(root: str) -> dict[str, str]:
    """The two local arrays (sharded, unsharded), written once; their paths by name."""
    paths = {}
    for name, chunks, shards in [("sharded", (5, 5, 5), (10, 10, 10)), ("unsharded", (10, 10, 10), None)]:
        path = os.path.join(root, name)
        a = zarrdask.create_array(path, shape=(1000, 1000, 1000), chunks=chunks, shards=shards, dtype="u1",
                                  fill_value=0)
        a[0:20, 0:20, 0:20] = 1
        paths[name] = path
    return paths


def s3_array(endpoint: str, rows: int) -> tuple[str, dict]:
    """The S3 array (every chunk written) and the storage options that reach it."""
    import s3fs

    options = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint}}
    s3fs.S3FileSystem(**options, skip_instance_cache=True).mkdir("bench-counts")
    url = "s3://bench-counts/a.zarr"
    a = zarrdask.create_array(url, shape=(rows, 100), chunks=(1, 100), dtype="f4", storage_options=options)
    a[...] = np.arange(rows * 100, dtype="f4").reshape(rows, 100)
    return url, options


def questions(lib: str) -> dict[str, Callable[..., object]]:
    """What is asked of an open array, per library: the answer compared across libraries."""
    def info(a: object) -> object:
        text = str(a.info_complete())  # type: ignore[attr-defined]
        return None if lib == "zarr-python" else len(text)  # (the texts differ; each must build)

    return {"nchunks_initialized": lambda a: a.nchunks_initialized,
            "nbytes_stored": lambda a: a.nbytes_stored(),
            "info_complete": info}


def openers(url: str, options: dict | None) -> dict[str, Callable[[], object]]:
    import zarr

    return {"zarrdask": lambda: zarrdask.open_array(url, storage_options=options),
            "zarr-python": lambda: zarr.open_array(url, mode="r", storage_options=options)}


def run_case(name: str, url: str, options: dict | None, repeat: int) -> list[str]:
    """Each question, each library, ``repeat`` rounds interleaved; the table's lines."""
    opens = openers(url, options)
    lines = []
    for question, _ in questions("zarrdask").items():
        times: dict[str, list[float]] = {lib: [] for lib in opens}
        answers: dict[str, object] = {}
        for _ in range(repeat):
            for lib, open_array in opens.items():
                ask = questions(lib)[question]
                a = open_array()
                t0 = time.perf_counter()
                answer = ask(a)
                times[lib].append(time.perf_counter() - t0)
                answers.setdefault(lib, answer)
        if question != "info_complete" and answers["zarrdask"] != answers["zarr-python"]:
            raise SystemExit(f"{name} {question}: zarrdask says {answers['zarrdask']}, "
                             f"zarr-python {answers['zarr-python']}")
        zd, zp = (statistics.median(times[lib]) for lib in ("zarrdask", "zarr-python"))
        lines.append(f"{name:10s} {question:20s} zarrdask {zd * 1e3:9.1f} ms  zarr-python {zp * 1e3:9.1f} ms  "
                     f"ratio {zp / zd:6.2f}x")
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--s3-chunks", type=int, default=1000)
    args = p.parse_args(argv)
    root = tempfile.mkdtemp(prefix="bench-counts-")
    try:
        for name, path in local_arrays(root).items():
            run_case(f"local {name}", path, None, args.repeat)
        os.environ.update(_S3_ENV)
        import moto.server

        server = moto.server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            url, options = s3_array(f"http://{host}:{port}", args.s3_chunks)
            run_case("s3", url, options, args.repeat)
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
