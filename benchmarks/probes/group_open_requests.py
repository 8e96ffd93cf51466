#!/usr/bin/env python
"""The unconsolidated group open over a slow link: how fast can 51 sequential requests be?

    python benchmarks/probes/group_open_requests.py [--rounds 7] [--delay-ms 25]

``bench_remote.py``'s "group open, unconsolidated" row: ``open_group(url,
use_consolidated=False)`` and ``g[f"v{i}"]`` for 50 arrays is 51 requests one after
another (the group's ``zarr.json``, then each array's, as the user asks for them), where
TensorStore, which has no groups, opens the 50 arrays: 50 requests. The loopback server
(``tests/_http.py``, a process of its own, ``--delay-ms`` added to each request) serves
the same group of 50 small arrays to, alternated round by round:

* **raw 51 / raw 50**: the least a Python client can do: ``http.client`` on one kept-alive
  connection, each response read and nothing else (51 = the group's document and the 50
  arrays', 50 = the arrays' only);
* **fsspec cat_file x 50**: fsspec's HTTP filesystem fetching the 50 arrays' documents
  (what zarrdask's reads go through);
* **zarrdask group**: the row as ``bench_remote.py`` times it;
* **zarrdask open_array x 50**: each array opened by its URL, as TensorStore does;
* **tensorstore x 50**: ``ts.open`` of each array by its URL.

Medians and minimums of the rounds (ms). If "raw 51" is not below "tensorstore x 50", no
reader that makes the user's 51 requests one after another can pass the row.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent  # benchmarks/probes
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))  # the working tree's zarrdask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--delay-ms", type=float, default=25.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    import fsspec
    import tensorstore as ts

    import zarrdask

    root = tempfile.mkdtemp(prefix="zarrdask-group-open-")
    group = zarrdask.create_group(os.path.join(root, "g.zarr"))
    for i in range(50):
        group.create_array(f"v{i}", shape=(10, 20), dtype="f4", chunks=(10, 20), attributes={"units": "K", "i": i})
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "_http.py"), root, str(args.delay_ms / 1000)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        host = urlsplit(url).netloc
        fs = fsspec.filesystem("http")

        def raw(with_group: bool) -> None:
            connection = http.client.HTTPConnection(host)
            try:
                paths = ["/g.zarr/zarr.json"] * with_group + [f"/g.zarr/v{i}/zarr.json" for i in range(50)]
                for path in paths:
                    connection.request("GET", path)
                    answer = connection.getresponse()
                    answer.read()
                    assert answer.status == 200, (path, answer.status)
            finally:
                connection.close()

        def zarrdask_group() -> list:
            g = zarrdask.open_group(f"{url}/g.zarr", use_consolidated=False)
            return [g[f"v{i}"].shape for i in range(50)]

        def tensorstore_arrays() -> list:
            return [ts.open({"driver": "zarr3", "kvstore": {"driver": "http", "base_url": f"{url}/g.zarr/v{i}/"}})
                    .result().shape for i in range(50)]

        readers = {
            "raw 51": lambda: raw(True),
            "raw 50": lambda: raw(False),
            "fsspec cat_file x 50": lambda: [fs.cat_file(f"{url}/g.zarr/v{i}/zarr.json") for i in range(50)],
            "zarrdask group": zarrdask_group,
            "zarrdask open_array x 50": lambda: [zarrdask.open_array(f"{url}/g.zarr/v{i}").shape for i in range(50)],
            "tensorstore x 50": tensorstore_arrays,
        }
        times: dict[str, list[float]] = {name: [] for name in readers}
        for round_ in range(args.rounds + 1):  # round 0 warms up
            names = list(readers)
            names = names[round_ % len(names):] + names[: round_ % len(names)]
            for name in names:
                start = time.perf_counter()
                readers[name]()
                if round_:
                    times[name].append(time.perf_counter() - start)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    print(f"HTTP on 127.0.0.1, {args.delay_ms:g} ms per request; {args.rounds} rounds (ms):")
    for name, runs in times.items():
        print(f"  {name:26s} median {statistics.median(runs) * 1e3:8.1f}  min {min(runs) * 1e3:8.1f}")


if __name__ == "__main__":
    main()
