#!/usr/bin/env python
"""Scenario 'layouts' (issue 25): the read path at the limit, on three layouts, every peer in one run.

    python benchmarks/bench_layouts.py [--size-mib 512] [--repeat 5] [--layouts unsharded,big-inner,small-inner]
                                       [--workloads dask-sum,dask-mean,dask-compute,cluster-compute,xarray-values,
                                                    xarray-load,read,write,dask-write,windows,group-open,cluster]
                                       [--cluster-shards 1024] [--json F] [--idle-wait 10] [--data-dir DIR]
    python benchmarks/run.py layouts [--repeat 5] ...

A (128, 1024, 1024) float32 array at 512 MiB, bytes + zstd-1, in three layouts:
  unsharded    chunks (16, 256, 256)
  big-inner    shards (32, 512, 512) holding inner chunks (16, 256, 256)
  small-inner  shards (16, 512, 512) holding inner chunks (4, 64, 64)
Below 64 MiB harness.Geometry shrinks the spatial dims to 256; the layouts' spatial sides
shrink by the same factor (256 -> 64, 512 -> 128, 64 -> 16), so each layout keeps its count
of shards and inner chunks per spatial dim; time sides are capped at the array's length.

Each layout's array is written once by zarr-python (cached under ``<data>/ref`` with a stamp).
Workloads per layout, the peers interleaved round by round (harness.measure_many); "grid
unit" = the shard, or the chunk when unsharded:
  dask-sum    ``.sum().compute()``: zarrdask.from_zarr(path) / da.from_zarr(path, chunks=grid
              unit) on zarr-python, and with the zarrs pipeline / da.from_array(TensorStore, chunks=grid unit)
  dask-mean   the same four, ``.mean(axis=0).compute()``
  dask-compute  the same four, ``.compute()``: the whole array materialised (checked bit for bit)
  cluster-compute  ``.compute()`` as dask-compute, on a distributed.LocalCluster of 2 worker processes x
              1 thread (the default client; the result comes back to the client), by zarrdask, zarr-python
              and TensorStore (zarrs is left out: its pipeline is bound by zarr's config in the client's
              process, which the workers do not share); the floor is the dask-compute floor's graph on the
              same cluster
  xarray-values ``xr.open_dataset(ds, engine=E, chunks={})["v"].values``: engine="zarrdask" / engine="zarr"
              (zarr-python, and with the zarrs pipeline), on a group whose variable ``v`` is a symbolic link
              to the layout's array (written with dimension names (time, lat, lon))
  xarray-load   the same, ``.load()`` of the dataset
  read        open + ``a[...]`` into numpy (TensorStore: ``.read().result()``)
  write       create + write the whole numpy array into an emptied directory (libs adapters; before each
              write, untimed, the machine's dirty pages written out: harness.empty_for_write)
  dask-write  zarrdask.to_zarr / dask.array.to_zarr (zarr-python, and with the zarrs pipeline) /
              da.store into TensorStore, from da.from_array(data, chunks=grid unit)
  windows     200 random 1 x 64 x 64 windows at unaligned offsets (bench_sharding's), median
              latency per read; cold: the array opened anew (untimed) before each read, so
              every read fetches its shard's index; warm: one open, the windows read once
              untimed first
group-open (once): open a consolidated group of 50 small arrays and each array's shape
(zarrdask.open_group, zarr.open_group(use_consolidated=True); TensorStore has no group:
it opens each array).
Dask runs the threaded scheduler with its default worker count. Sums and means are checked
against numpy's, reads bit for bit, and every write repetition is read back and compared
(all untimed).

cluster (once): on distributed.LocalCluster(2 worker processes x 1 thread), read + sum of a
2-D float32 array of ``--cluster-shards`` shards of 64 x 64 (16 KiB; inner chunks 16 x 64):
zarrdask.from_zarr(path) vs da.from_zarr(path, chunks=shard) vs the same sum over the same
blocks persisted in the workers' memory (the floor a reader can approach).

Floors (harness.Floor; the table's "floor" and "zd/floor" columns): each row's work with no
Zarr code, measured in the same run on its own after the first row that uses it (the rows'
timing is unchanged): the dask rows, a dask array whose tasks decode a unit into a block
with libzstd, summed / averaged / ``.compute()``d (the decoding plus dask's own scheduling,
and for ``.compute()`` dask's assembly, which every dask reader pays alike; the assembly
alone, ``da.from_array(numpy, chunks=grid).compute()``, is in a note, and so are the sum
and mean without dask: libzstd decoding each unit into a block + the block's sum, over axis
0 for the mean, on a pool of one thread per core); the materialised xarray reads
(xarray-values, xarray-load), the dask ``.compute()`` floor; the direct read, libzstd
decoding every chunk into its place in one output; the writes, libzstd-1 compression of every
chunk (+ the shard index) and one file per unit; the group open, reading and parsing the
consolidated root ``zarr.json``; the windows, each touched chunk read from its file with
``os.pread`` at the offset of its shard's index (read from the file too when cold), libzstd,
and the overlap copied out; the cluster row, its in-memory sum.

Notes under the table give, for every row, the spread max/min over the repetitions and each
peer's spread / zarrdask's, and the best peer's ratio.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import uuid
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.path.insert(1, str(HERE.parent))  # the working tree's zarrdask, as run.py does

import numpy as np  # noqa: E402

import harness  # noqa: E402
import reference  # noqa: E402
from harness import (  # noqa: E402
    TENSORSTORE, ZARR_PYTHON, ZARRDASK, ZARRS, Cell, Geometry, Row, Scenario, Task, compare, empty_for_write,
    environment, fmt_time, make_data, measure_many, random_windows, render_scenario, rmtree,
)
from harness import _short  # noqa: E402 - the table's short library names (zd, zp, zs, ts)
from libs import LIB_OBJECTS, ZSTD1, Layout, TSDaskAdapter, preload_zarrdask, ts_spec  # noqa: E402

# At 512 MiB: (chunks, shards) of each layout.
LAYOUTS = {
    "unsharded": Layout((16, 256, 256)),
    "big-inner": Layout((16, 256, 256), (32, 512, 512)),
    "small-inner": Layout((4, 64, 64), (16, 512, 512)),
}
WORKLOADS = ("dask-sum", "dask-mean", "dask-compute", "cluster-compute", "xarray-values", "xarray-load", "read", "write", "dask-write",
             "windows", "group-open", "cluster")
DIMS = ("time", "lat", "lon")  # the layout arrays' dimension names
VAR = "v"  # the layout array's name in its xarray dataset (layout_dataset)
N_WINDOWS = 200
GROUP_ARRAYS = 50
IN_MEMORY = "in-memory"  # the cluster row's third cell: blocks persisted on the workers
CLUSTER_SHARD = (64, 64)  # float32: 16 KiB
CLUSTER_INNER = (16, 64)


def scaled(layout: Layout, shape: tuple[int, ...]) -> Layout:
    """``layout`` for an array of ``shape``: spatial sides scaled as Geometry scales the array's
    (1024 -> ``shape[1]``), the time side capped at ``shape[0]``."""

    def fit(block):
        if block is None:
            return None
        return (min(block[0], shape[0]), *(max(1, b * shape[1] // 1024) for b in block[1:]))

    return Layout(fit(layout.chunks), fit(layout.shards))


def describe(layout: Layout) -> str:
    chunks = "x".join(map(str, layout.chunks))
    if layout.shards is None:
        return f"chunks {chunks}"
    return f"shards {'x'.join(map(str, layout.shards))}, inner {chunks}"


def layout_array(name: str, layout: Layout, data: np.ndarray, data_dir: str) -> str:
    """The array of ``data`` in ``layout``, written once by zarr-python (as reference.py's are).
    A 3-D array gets the dimension names DIMS (xarray needs them; the stamp names them, so a
    copy cached without them is written again)."""
    path = os.path.join(data_dir, "ref", f"layout_{name}.zarr")
    params = {"v": reference.STAMP_VERSION, "shape": list(data.shape), "chunks": list(layout.chunks),
              "shards": None if layout.shards is None else list(layout.shards)}
    dims = DIMS if data.ndim == len(DIMS) else None
    if dims is not None:
        params["dims"] = list(dims)
    if not reference._fresh(path, params):
        print(f"  .. writing the {name} array with zarr-python: {path}", flush=True)
        rmtree(path)
        LIB_OBJECTS[ZARR_PYTHON].write(path, data, layout, dimension_names=dims)
        reference._stamp(path, params)
    return path


def layout_dataset(name: str, array_path: str) -> str:
    """A group holding the layout's array as variable VAR, for xarray: a consolidated group
    whose member ``VAR`` is a symbolic link to the cached array (the same bytes the other rows
    read, no second copy); made again whenever the array's stamp changes."""
    import zarr

    path = os.path.join(os.path.dirname(array_path), f"layout_{name}.xr.zarr")
    with open(array_path + ".stamp.json") as f:
        params = {"array": json.load(f), "var": VAR}
    if not reference._fresh(path, params):
        rmtree(path)
        os.makedirs(path)
        os.symlink(os.path.relpath(array_path, path), os.path.join(path, VAR))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zarr.create_group(path, zarr_format=3, attributes={"title": f"the {name} layout"})
            zarr.consolidate_metadata(path)
        reference._stamp(path, params)
    return path


def close_check(expected, what: str):
    """A check: the result within 1e-4 (relative) of ``expected`` everywhere."""

    def check(result):
        got = np.asarray(result, dtype=np.float64)
        if got.shape != np.shape(expected):
            return f"{what} has shape {got.shape}, not {np.shape(expected)}"
        if np.allclose(got, expected, rtol=1e-4, atol=0):
            return None
        return f"{what} differs from numpy's (max |diff| {np.max(np.abs(got - expected)):.3g})"

    return check


# --------------------------------------------------------------------------- dask reads


def dask_readers(path: str, grid: tuple[int, ...]) -> dict:
    """The four dask arrays over ``path``, each built anew per call (the open is timed)."""
    import dask.array as da
    import tensorstore as ts
    import zarr

    def zarrdask_array():
        import zarrdask

        return zarrdask.from_zarr(path)

    def zarrs_array():
        with zarr.config.set(LIB_OBJECTS[ZARRS].PIPELINE):  # the pipeline is bound at open
            return da.from_zarr(path, chunks=grid)

    def tensorstore_array():
        arr = ts.open(ts_spec(path), read=True).result()
        return da.from_array(TSDaskAdapter(arr), chunks=grid, name="ts-read-" + uuid.uuid4().hex)

    return {
        ZARRDASK: zarrdask_array,
        ZARR_PYTHON: lambda: da.from_zarr(path, chunks=grid),
        ZARRS: zarrs_array,
        TENSORSTORE: tensorstore_array,
    }


def dask_read_row(case: str, path: str, grid, reduce, check, nbytes: int, repeat: int) -> Row:
    tasks = {lib: Task(lambda make=make: reduce(make()).compute(), check=check)
             for lib, make in dask_readers(path, grid).items()}
    return Row(case, measure_many(case, tasks, repeat), nbytes=nbytes)


def cluster_compute_row(case: str, name: str, path: str, grid, data: np.ndarray, repeat: int) -> Row:
    """``.compute()`` of the whole array on a LocalCluster (2 worker processes x 1 thread, the
    default client while it runs), every reader but zarrs interleaved, and the materialised-read
    floor measured on the same cluster after them."""
    import logging

    import distributed
    import zstd_floor

    readers = dask_readers(path, grid)
    del readers[ZARRS]
    check = lambda r: compare(data, r)  # noqa: E731
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  env={"PYTHONPATH": str(HERE)}) as cluster, distributed.Client(cluster):
        tasks = {lib: Task(lambda make=make: make().compute(), check=check) for lib, make in readers.items()}
        row = Row(case, measure_many(case, tasks, repeat), nbytes=data.nbytes,
                  note="LocalCluster(2 processes x 1 thread); the result is sent to the client")
        row.floor = harness.measure_floor(
            f"{name}: on the same cluster, dask .compute() of tasks that each decode a unit into a block with "
            "libzstd (no Zarr), then dask's assembly", lambda: Task(zstd_floor.dask_floor(path), check=check),
            repeat)
    return row


def xarray_row(case: str, ds_path: str, materialise, check, nbytes: int, repeat: int) -> Row:
    """``materialise(xr.open_dataset(ds_path, engine=E, chunks={}))`` for engine="zarrdask" and
    engine="zarr" (zarr-python, and with the zarrs pipeline, bound at the open); open timed."""
    import xarray as xr
    import zarr

    def zarrs_open():
        with zarr.config.set(LIB_OBJECTS[ZARRS].PIPELINE):
            return xr.open_dataset(ds_path, engine="zarr", chunks={})

    opens = {ZARRDASK: lambda: xr.open_dataset(ds_path, engine="zarrdask", chunks={}),
             ZARR_PYTHON: lambda: xr.open_dataset(ds_path, engine="zarr", chunks={}),
             ZARRS: zarrs_open}
    tasks = {lib: Task(lambda op=op: materialise(op()), check=check) for lib, op in opens.items()}
    return Row(case, measure_many(case, tasks, repeat), nbytes=nbytes)


def layout_floors(name: str, layout: Layout, path: str, data: np.ndarray, total: float, mean0, out_dir: str,
                  repeat: int):
    """``floor(kind)``: the layout's floor of that kind (harness.Floor), measured at its first use."""
    import zstd_floor

    cores = os.cpu_count() or 1
    floor_out = os.path.join(out_dir, "floor")
    makers = {
        "read": (f"{name}: libzstd decoding every chunk into its place in one output, {cores} threads",
                 lambda: Task(zstd_floor.read_floor(path, cores), check=lambda r: compare(data, r))),
        "sum": (f"{name}: dask .sum() of tasks that each decode a unit into a block with libzstd (no Zarr)",
                lambda: Task(zstd_floor.dask_floor(path, lambda x: x.sum()), check=close_check(total, "sum"))),
        "mean": (f"{name}: dask .mean(axis=0) of tasks that each decode a unit into a block with libzstd (no Zarr)",
                 lambda: Task(zstd_floor.dask_floor(path, lambda x: x.mean(axis=0)),
                              check=None if mean0 is None else close_check(mean0, "mean"))),
        "sum without dask": (f"{name}: libzstd decoding each unit into a block + block.sum(), {cores} threads, "
                             "no dask", lambda: Task(zstd_floor.reduce_floor(path, lambda b: b.sum(), cores),
                                                     check=lambda r: close_check(total, "sum")(sum(r)))),
        "mean without dask": (f"{name}: libzstd decoding each unit into a block + block.sum(axis=0), {cores} "
                              "threads, no dask",
                              lambda: Task(zstd_floor.reduce_floor(path, lambda b: (b.sum(axis=0), b.shape[0]),
                                                                   cores))),
        "compute": (f"{name}: dask .compute() of tasks that each decode a unit into a block with libzstd (no Zarr), "
                    "then dask's assembly of the blocks",
                    lambda: Task(zstd_floor.dask_floor(path), check=lambda r: compare(data, r))),
        "write": (f"{name}: libzstd-1 compression of every chunk{' + shard index' if layout.shards else ''} + one "
                  f"file per {'shard' if layout.shards else 'chunk'}, {cores} threads",
                  lambda: Task(zstd_floor.write_floor(data, layout.chunks, layout.shards, floor_out, cores),
                               setup=lambda: empty_for_write(floor_out))),
    }
    floors = {}

    def floor(kind: str):
        if kind not in floors:
            title, make = makers[kind]
            floors[kind] = harness.measure_floor(title, make, repeat)
        return floors[kind]

    return floor


def window_row(case: str, path: str, geom: Geometry, data: np.ndarray, cold: bool, repeat: int) -> Row:
    """bench_sharding's window reads on ``path`` by every library, interleaved."""
    from bench_sharding import window_task

    windows = random_windows(geom, N_WINDOWS)
    tasks = {lib: window_task(LIB_OBJECTS[lib], path, windows, cold, data) for lib in LIB_OBJECTS}
    return Row(case, measure_many(case, tasks, repeat))


def group_open_row(data_dir: str, repeat: int, consolidated: bool = True) -> Row:
    """Open a group of ``GROUP_ARRAYS`` small arrays and every array's shape: with consolidated
    metadata (one document for all), or without (each array's ``zarr.json`` read on ``g[name]``,
    as TensorStore reads each)."""
    import tensorstore as ts
    import zarr

    import zarrdask

    path = os.path.join(data_dir, "layouts_group.zarr")
    rmtree(path)
    g = zarrdask.create_group(path)
    for i in range(GROUP_ARRAYS):
        g.create_array(f"v{i}", shape=(10, 20), dtype="f4", chunks=(10, 20), attributes={"units": "K", "i": i})
    if consolidated:
        zarrdask.consolidate_metadata(path)
    names = [f"v{i}" for i in range(GROUP_ARRAYS)]
    expected = [(10, 20)] * GROUP_ARRAYS

    def zarrdask_open():
        g = zarrdask.open_group(path)
        return [g[n].shape for n in names]

    def zarr_python_open():
        g = zarr.open_group(path, mode="r", use_consolidated=consolidated)
        return [g[n].shape for n in names]

    def tensorstore_open():
        return [tuple(ts.open(ts_spec(os.path.join(path, n)), read=True).result().shape) for n in names]

    def check(shapes):
        return None if [tuple(s) for s in shapes] == expected else f"shapes {shapes[:3]}..., not {expected[0]}"

    case = f"group open ({GROUP_ARRAYS} arrays, {'consolidated' if consolidated else 'unconsolidated'})"
    tasks = {ZARRDASK: Task(zarrdask_open, check=check), ZARR_PYTHON: Task(zarr_python_open, check=check),
             TENSORSTORE: Task(tensorstore_open, check=check)}
    try:
        return Row(case, measure_many(case, tasks, max(repeat, 7)))
    finally:
        rmtree(path)


def second_floor_note(row: Row, floor: harness.Floor) -> str | None:
    """A row's ratio to a floor other than its own, for the note under the table."""
    ours = row.cells.get(ZARRDASK)
    if floor.cell.median is None or ours is None or ours.median is None:
        return None
    return (f"{row.case}: against {floor.name}: med {fmt_time(floor.cell.median)}, zarrdask / it "
            f"{ours.median / floor.cell.median:.2f}")


def assembly_note(name: str, data: np.ndarray, grid, repeat: int) -> str | None:
    """dask's assembly alone, for the note under the table: ``da.from_array(numpy, chunks=grid).compute()``
    (blocks that are views of an array in memory, concatenated into a fresh one)."""
    import zstd_floor

    f = harness.measure_floor(f"{name}: dask's assembly alone", lambda: Task(zstd_floor.assembly_floor(data, grid),
                                                                              check=lambda r: compare(data, r)),
                              repeat)
    if f.cell.median is None:
        return None
    return (f"{name}: dask's assembly alone, da.from_array(numpy, chunks={tuple(grid)}).compute(): med "
            f"{fmt_time(f.cell.median)} (min {fmt_time(f.cell.min)}) [{f.cell.check_summary()}] (part of the "
            ".compute() floor)")


def group_open_floor(data_dir: str, repeat: int, consolidated: bool = True):
    """The group open's floor: read and json-parse the root ``zarr.json`` of a group of
    ``GROUP_ARRAYS`` arrays like group_open_row's: consolidated, it holds every array's
    document; else each array's own ``zarr.json`` is read and parsed too."""
    import zarrdask
    import zstd_floor

    path = os.path.join(data_dir, "layouts_group_floor.zarr")

    def make():
        rmtree(path)
        g = zarrdask.create_group(path)
        for i in range(GROUP_ARRAYS):
            g.create_array(f"v{i}", shape=(10, 20), dtype="f4", chunks=(10, 20),
                           attributes={"units": "K", "i": i})
        if not consolidated:
            return Task(zstd_floor.metadata_floor(path, tuple(f"v{i}" for i in range(GROUP_ARRAYS))),
                        check=lambda doc: None if doc.get("node_type") == "group" else "the root is no group")
        zarrdask.consolidate_metadata(path)

        def check(doc):
            n = len(doc.get("consolidated_metadata", {}).get("metadata", {}))
            return None if n == GROUP_ARRAYS else f"{n} documents in the root, not {GROUP_ARRAYS}"

        return Task(zstd_floor.metadata_floor(path), check=check)

    what = (f"the consolidated root zarr.json ({GROUP_ARRAYS} arrays' documents in it)" if consolidated else
            f"the root zarr.json and each of the {GROUP_ARRAYS} arrays' own")
    try:
        return harness.measure_floor(f"read + json.loads of {what}", make, max(repeat, 7))
    finally:
        rmtree(path)


# --------------------------------------------------------------------------- writes


def readback(data: np.ndarray, path: str, reader: str):
    """A check reading ``path`` back with ``reader`` and comparing it with ``data``."""
    lib = LIB_OBJECTS[reader]
    return lambda _result: compare(data, lib.read_all(lib.open(path)))


def numpy_write_row(case: str, data, layout: Layout, out: dict, repeat: int) -> Row:
    def task(lib):
        L, path = LIB_OBJECTS[lib], out[lib]
        reader = ZARR_PYTHON if lib == TENSORSTORE else TENSORSTORE
        return Task(lambda: L.write(path, data, layout), setup=lambda: empty_for_write(path),
                    check=readback(data, path, reader), check_every=True)

    return Row(case, measure_many(case, {lib: task(lib) for lib in out}, repeat), nbytes=data.nbytes)


def dask_write_row(case: str, data, layout: Layout, out: dict, repeat: int) -> Row:
    import dask.array as da
    import tensorstore as ts
    import zarr
    from zarr.codecs import ZstdCodec

    x = da.from_array(data, chunks=layout.grid, name="src-" + uuid.uuid4().hex)

    def zarrdask_write():
        import zarrdask

        zarrdask.to_zarr(x, out[ZARRDASK], chunks=layout.chunks, shards=layout.shards, compressors=[ZSTD1],
                         fill_value=0, mode="w")

    def zarr_python_write(lib):
        # mode="w-": a new array (mode="w" would make dask take a global lock)
        write = lambda: da.to_zarr(x, out[lib], mode="w-", chunks=layout.chunks, shards=layout.shards,  # noqa: E731
                                   compressors=ZstdCodec(level=1, checksum=False), fill_value=0)
        if lib == ZARRS:
            with zarr.config.set(LIB_OBJECTS[ZARRS].PIPELINE):  # bound when dask creates the array
                return write()
        return write()

    def tensorstore_write():
        arr = ts.open(ts_spec(out[TENSORSTORE], shape=data.shape, layout=layout), create=True,
                      delete_existing=True).result()
        da.store(x, TSDaskAdapter(arr), lock=False)

    fns = {ZARRDASK: zarrdask_write, ZARR_PYTHON: lambda: zarr_python_write(ZARR_PYTHON),
           ZARRS: lambda: zarr_python_write(ZARRS), TENSORSTORE: tensorstore_write}

    def task(lib):
        reader = ZARR_PYTHON if lib == TENSORSTORE else TENSORSTORE
        return Task(fns[lib], setup=lambda: empty_for_write(out[lib]), check=readback(data, out[lib], reader),
                    check_every=True)

    return Row(case, measure_many(case, {lib: task(lib) for lib in fns}, repeat), nbytes=data.nbytes)


# --------------------------------------------------------------------------- cluster


def cluster_shape(n_shards: int) -> tuple[int, int]:
    """A near-square 2-D array of exactly ``n_shards`` shards of CLUSTER_SHARD."""
    cols = math.isqrt(n_shards)
    while n_shards % cols:
        cols -= 1
    return (n_shards // cols * CLUSTER_SHARD[0], cols * CLUSTER_SHARD[1])


def cluster_row(n_shards: int, data_dir: str, repeat: int) -> Row:
    """Read + sum of ``n_shards`` small shards on a 2-process LocalCluster, and the same sum over
    the blocks persisted in worker memory, interleaved."""
    import logging

    import dask.array as da
    import distributed

    shape = cluster_shape(n_shards)
    data = make_data((1, *shape))[0]
    path = layout_array(f"cluster{n_shards}", Layout(CLUSTER_INNER, CLUSTER_SHARD), data, data_dir)
    check = close_check(float(data.sum(dtype=np.float64)), "sum")
    logging.getLogger("distributed").setLevel(logging.ERROR)
    case = f"cluster: read + sum of {n_shards} shards of 16 KiB"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        held = client.persist(da.from_array(data, chunks=CLUSTER_SHARD, name="held-" + uuid.uuid4().hex))
        distributed.wait(held)

        def zarrdask_sum():
            import zarrdask

            return zarrdask.from_zarr(path).sum().compute()

        tasks = {
            ZARRDASK: Task(zarrdask_sum, check=check),
            ZARR_PYTHON: Task(lambda: da.from_zarr(path, chunks=CLUSTER_SHARD).sum().compute(), check=check),
            IN_MEMORY: Task(lambda: held.sum().compute(), check=check),
        }
        cells = measure_many(case, tasks, repeat)
    return Row(case, cells, nbytes=data.nbytes,
               note=f"array {shape} float32, shards {CLUSTER_SHARD}, inner {CLUSTER_INNER}; LocalCluster(2 processes "
                    "x 1 thread); its background load ('!', bg) counts the cluster's own worker processes")


# --------------------------------------------------------------------------- report


def spread(cell: Cell) -> float | None:
    return max(cell.times) / min(cell.times) if cell.times and min(cell.times) > 0 else None


def spread_note(row: Row) -> str:
    """Every cell's max and spread (max/min; the table has median and min), and each peer's
    spread over zarrdask's (< 1: the peer's repetitions are the tighter)."""
    base = row.cells.get(ZARRDASK)
    base_spread = spread(base) if base is not None else None
    parts = []
    for lib, cell in row.cells.items():
        s = spread(cell)
        if s is None:
            parts.append(f"{_short(lib)} n/a")
            continue
        text = f"{_short(lib)} {s:.2f} (max {fmt_time(max(cell.times))})"
        if lib != ZARRDASK and base_spread:
            text += f" = {s / base_spread:.2f}x zd's"
        parts.append(text)
    return f"spread max/min {row.case}: " + "; ".join(parts)


def best_peer_note(row: Row, peers: tuple[str, ...]) -> str:
    ratios = {lib: row.ratio(lib) for lib in peers if row.ratio(lib) is not None}
    if not ratios:
        return f"{row.case}: no peer ratio"
    lib = min(ratios, key=ratios.get)
    return f"{row.case}: best peer {lib}, ratio {ratios[lib]:.2f}x"


# --------------------------------------------------------------------------- scenario


def run(geom: Geometry, repeat: int, data_dir: str, layouts=tuple(LAYOUTS), workloads=WORKLOADS,
        cluster_shards: int | None = None) -> Scenario:
    """The scenario; ``cluster_shards`` defaults to 1024, or 64 when Geometry shrinks the array (< 64 MiB)."""
    import dask

    sc = Scenario(
        name="layouts",
        title=f"the read path at the limit: three layouts of {geom.shape} float32, bytes+zstd-1 (issue 25)",
        columns={
            ZARRDASK: "zarrdask: from_zarr / Array API / to_zarr",
            ZARR_PYTHON: "zarr-python: da.from_zarr(chunks=grid unit) / Array API / da.to_zarr",
            ZARRS: "zarr-python with the zarrs pipeline: the same",
            TENSORSTORE: "TensorStore: da.from_array(chunks=grid unit) / .read() / .write() / da.store",
        },
    )
    data = make_data(geom.shape)
    total = float(data.sum(dtype=np.float64))
    mean0 = data.mean(axis=0, dtype=np.float64) if "dask-mean" in workloads else None
    dask_rows, direct_rows, write_rows, ts_rows, xarray_rows = [], [], [], [], []
    with dask.config.set(scheduler="threads"):
        for name in layouts:
            layout = scaled(LAYOUTS[name], geom.shape)
            label = f"[{name}: {describe(layout)}]"
            path = layout_array(name, layout, data, data_dir)
            out_dir = os.path.join(data_dir, "layouts_write")
            out = {lib: os.path.join(out_dir, lib) for lib in (ZARRDASK, ZARR_PYTHON, ZARRS, TENSORSTORE)}
            floor = layout_floors(name, layout, path, data, total, mean0, out_dir, repeat)
            if "dask-sum" in workloads:
                dask_rows.append(dask_read_row(f"{label} dask .sum()", path, layout.grid, lambda x: x.sum(),
                                               close_check(total, "sum"), geom.nbytes, repeat))
                sc.rows.append(dask_rows[-1])
                dask_rows[-1].floor = floor("sum")
                sc.notes.extend(filter(None, [second_floor_note(dask_rows[-1], floor("sum without dask"))]))
            if "dask-mean" in workloads:
                dask_rows.append(dask_read_row(f"{label} dask .mean(axis=0)", path, layout.grid,
                                               lambda x: x.mean(axis=0), close_check(mean0, "mean"), geom.nbytes,
                                               repeat))
                sc.rows.append(dask_rows[-1])
                dask_rows[-1].floor = floor("mean")
                sc.notes.extend(filter(None, [second_floor_note(dask_rows[-1], floor("mean without dask"))]))
            if "dask-compute" in workloads:
                dask_rows.append(dask_read_row(f"{label} dask .compute()", path, layout.grid, lambda x: x,
                                               lambda r: compare(data, r), geom.nbytes, repeat))
                sc.rows.append(dask_rows[-1])
                dask_rows[-1].floor = floor("compute")
                assembly = assembly_note(name, data, layout.grid, repeat)
                if assembly:
                    sc.notes.append(assembly)
            if "cluster-compute" in workloads:
                dask_rows.append(cluster_compute_row(f"{label} dask .compute() on a LocalCluster", name, path,
                                                     layout.grid, data, repeat))
                sc.rows.append(dask_rows[-1])
            if "xarray-values" in workloads or "xarray-load" in workloads:
                ds_path = layout_dataset(name, path)
            if "xarray-values" in workloads:
                xarray_rows.append(xarray_row(f'{label} xarray open_dataset(chunks={{}})["{VAR}"].values', ds_path,
                                              lambda ds: ds[VAR].values, lambda r: compare(data, r), geom.nbytes,
                                              repeat))
                sc.rows.append(xarray_rows[-1])
                xarray_rows[-1].floor = floor("compute")
            if "xarray-load" in workloads:
                xarray_rows.append(xarray_row(f"{label} xarray open_dataset(chunks={{}}).load()", ds_path,
                                              lambda ds: ds.load(), lambda ds: compare(data, ds[VAR].values),
                                              geom.nbytes, repeat))
                sc.rows.append(xarray_rows[-1])
                xarray_rows[-1].floor = floor("compute")
            if "read" in workloads:
                tasks = {lib: Task(lambda L=LIB_OBJECTS[lib]: L.read_all(L.open(path)),
                                   check=lambda r: compare(data, r)) for lib in out}
                case = f"{label} read a[...]"
                direct_rows.append(Row(case, measure_many(case, tasks, repeat), nbytes=geom.nbytes))
                sc.rows.append(direct_rows[-1])
                direct_rows[-1].floor = floor("read")
            if "write" in workloads:
                write_rows.append(numpy_write_row(f"{label} write numpy", data, layout, out, repeat))
                sc.rows.append(write_rows[-1])
                write_rows[-1].floor = floor("write")
            if "dask-write" in workloads:
                write_rows.append(dask_write_row(f"{label} dask write", data, layout, out, repeat))
                sc.rows.append(write_rows[-1])
                write_rows[-1].floor = floor("write")
            if "windows" in workloads:
                from bench_sharding import window_floor

                for cold in (True, False):
                    mode = "cold index" if cold else "warm index"
                    ts_rows.append(window_row(f"{label} {N_WINDOWS} windows 1x64x64, {mode}", path, geom, data,
                                              cold, repeat))
                    sc.rows.append(ts_rows[-1])
                for row, cold in zip(ts_rows[-2:], (True, False)):  # (after both rows)
                    row.floor = window_floor(path, random_windows(geom, N_WINDOWS), cold, data, repeat, name)
            rmtree(out_dir)
    if "group-open" in workloads:
        for consolidated in (True, False):
            ts_rows.append(group_open_row(data_dir, repeat, consolidated))
            sc.rows.append(ts_rows[-1])
            ts_rows[-1].floor = group_open_floor(data_dir, repeat, consolidated)
    if "cluster" in workloads:
        n = cluster_shards or (1024 if geom.shape[1] >= 1024 else 64)
        row = cluster_row(n, data_dir, repeat)
        sc.rows.append(row)
        row.floor = harness.Floor("the same sum over the same blocks persisted in the workers' memory (the "
                                  f"row's {IN_MEMORY} cell)", row.cells[IN_MEMORY])
        zd, mem = row.cells[ZARRDASK], row.cells[IN_MEMORY]
        if zd.median and mem.median:
            sc.notes.append(f"cluster: zarrdask / in-memory sum = {zd.median / mem.median:.2f} (target <= 1.5); "
                            f"in-memory med {mem.median:.3f} s (min {mem.min:.3f}) [{mem.check_summary()}]")
    for row in sc.rows:
        sc.notes.append(spread_note(row))
    for row in dask_rows:
        sc.notes.append(best_peer_note(row, (ZARR_PYTHON, ZARRS, TENSORSTORE)))
    for row in direct_rows:
        sc.notes.append(best_peer_note(row, (ZARRS, TENSORSTORE)))
    for row in write_rows:
        sc.notes.append(best_peer_note(row, (ZARR_PYTHON, ZARRS, TENSORSTORE)))
    for row in xarray_rows:
        sc.notes.append(best_peer_note(row, (ZARR_PYTHON, ZARRS)))
    for row in ts_rows:
        sc.notes.append(best_peer_note(row, (TENSORSTORE,)))
    sc.notes.append(
        "targets (issue 25): dask rows >= 1.2x TensorStore and zarr-python+zarrs; read >= 1.1x the best of zarrs "
        "and TensorStore; writes >= 1.1x the best peer; zarrdask's dask spread <= 1.5x TensorStore's "
        "(tensorstore's spread/zd's >= 0.67); unaligned windows >= 1.2x TensorStore; group open <= TensorStore's "
        "time; cluster >= 1.2x zarr-python and within 1.5x of in-memory")
    sc.notes.append("grid unit = the shard (the chunk when unsharded); reads time open + read; writes time "
                    "create + write into an emptied directory, no write's pages left to write back; every write read "
                    "back and compared, untimed")
    return sc


def _names(text: str, allowed) -> tuple[str, ...]:
    names = tuple(n for n in text.split(",") if n)
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise SystemExit(f"unknown {unknown}; choose from {', '.join(allowed)}")
    return names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--cluster-shards", type=int, default=None,
                   help="shards of the cluster workload (default 1024; 64 below 64 MiB)")
    p.add_argument("--json", default=None)
    p.add_argument("--idle-wait", type=float, default=10.0,
                   help="before each timed call wait up to S seconds for other processes to use < 0.25 cores")
    p.add_argument("--data-dir", default=str(HERE / "data"))
    args = p.parse_args(argv)
    layouts, workloads = _names(args.layouts, LAYOUTS), _names(args.workloads, WORKLOADS)

    preload_zarrdask()
    warnings.simplefilter("ignore")
    harness.IDLE_WAIT_S = args.idle_wait
    geom = Geometry.from_size(args.size_mib)
    os.makedirs(args.data_dir, exist_ok=True)
    env = environment()
    print(f"zarrdask layouts benchmark  {env['time']}  commit {env['git_commit']}; versions {env['versions']}")
    print(f"  array {geom.shape} float32; repeat {args.repeat}; data dir {args.data_dir}")
    t0 = time.perf_counter()
    sc = run(geom, args.repeat, args.data_dir, layouts, workloads, args.cluster_shards)
    sc.wall_s = time.perf_counter() - t0
    print()
    print(render_scenario(sc))
    harness.finish(env, args, [sc])
    return 0


if __name__ == "__main__":
    sys.exit(main())
