"""Scenario 'xarray' (issue 5): xarray's engine="zarrdask" vs xarray's own engine="zarr".

Datasets (written once by xarray's own zarr engine, zarr format 3, consolidated):
* the climate dataset: t2m(time, lat, lon) float32, shards (16, 512, 512), inner chunks
  (4, 64, 64), zstd-1, with time/lat/lon coordinates;
* a dataset of 50 small float32 variables with attributes.

Measured:
* ``xr.open_dataset(path, engine=E, chunks={}).mean("time").compute()``: with ``chunks={}``
  each engine picks its preferred chunks (zarrdask: the shard; engine="zarr": the inner
  chunk). An extra row gives engine="zarr" explicit shard-sized chunks.
* ``xr.open_dataset(path, engine=E)`` of the 50-variable dataset (lazy, no data read), and the
  same with ``chunks={}`` (dask arrays built). An open takes milliseconds, so each repetition
  opens the dataset ``OPENS_PER_REP`` times back to back and reports the median latency
  (as the window reads of the sharding scenario do): a single open right after the
  harness's idle wait would mostly time cold caches.

* materialised reads (after the rows above): ``xr.open_dataset(path, engine=E, chunks={})["t2m"].values``
  and ``.load()`` of the climate dataset, engine="zarr" also with the zarrs pipeline; checked
  bit for bit.

Floors (harness.Floor, measured after every row, no Zarr code): libzstd over each shard into
a block + its sum over time (the mean), dask ``.compute()`` of libzstd tasks (the
materialised reads), reading and parsing the consolidated root ``zarr.json`` (the opens).

TensorStore has no xarray engine among the project's dependencies; its column is omitted.
"""

from __future__ import annotations

import os
import statistics
import time
import warnings

import numpy as np

from harness import ZARR_PYTHON, ZARRDASK, ZARRS, Geometry, Row, Scenario, SelfTimed, Task, compare, make_data
from harness import measure_floor, measure_many
from libs import LIB_OBJECTS
import reference

OPENS_PER_REP = 20


def run(geom: Geometry, repeat: int, data_dir: str, n_vars: int = 50) -> Scenario:
    import dask
    import xarray as xr

    sc = Scenario(
        name="xarray",
        title=f"xarray engines on the sharded climate dataset {geom.shape} and a {n_vars}-variable dataset (issue 5)",
        columns={ZARRDASK: 'engine="zarrdask"', ZARR_PYTHON: 'engine="zarr" (xarray + zarr-python)',
                 ZARRS: 'engine="zarr" with the zarrs pipeline (the materialised reads only)'},
    )
    climate = reference.climate_dataset(geom, data_dir)
    many = reference.many_variables_dataset(data_dir, n_vars)
    expected = make_data(geom.shape).mean(axis=0, dtype=np.float64)

    def check_mean(result):
        got = np.asarray(result["t2m"].values, dtype=np.float64)
        if got.shape != expected.shape:
            return f"shape {got.shape} != {expected.shape}"
        if np.allclose(got, expected, rtol=1e-5, atol=1e-4):
            return None
        return f"max abs error {np.nanmax(np.abs(got - expected)):.3g}"

    def mean_time(engine, chunks):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = xr.open_dataset(climate, engine=engine, chunks=chunks)
            return ds.mean("time").compute()

    def check_vars(ds):
        n = len(ds.data_vars)
        return None if n == n_vars else f"{n} data variables, expected {n_vars}"

    def open_many(engine, chunks) -> SelfTimed:
        lat = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(OPENS_PER_REP):
                t0 = time.perf_counter()
                ds = xr.open_dataset(many, engine=engine, chunks=chunks)
                lat.append(time.perf_counter() - t0)
                if i < OPENS_PER_REP - 1:
                    ds.close()
        return SelfTimed(statistics.median(lat), result=ds, extra={"p90_s": float(np.percentile(lat, 90))})

    with dask.config.set(scheduler="threads"):
        cells = measure_many(
            "xarray mean(time)",
            {
                ZARRDASK: Task(lambda: mean_time("zarrdask", {}), check=check_mean),
                ZARR_PYTHON: Task(lambda: mean_time("zarr", {}), check=check_mean),
            },
            repeat,
        )
        main = Row('open_dataset(chunks={}).mean("time").compute()', cells, nbytes=geom.nbytes)
        sc.rows.append(main)
        shard_chunks = dict(zip(("time", "lat", "lon"), geom.shard))
        cells = measure_many(
            "xarray mean(time), engine=zarr with shard-sized chunks",
            {ZARR_PYTHON: Task(lambda: mean_time("zarr", shard_chunks), check=check_mean)},
            repeat,
        )
        sc.rows.append(Row("  (peer) engine=zarr, chunks=shard shape", cells, baseline=main))
        n_open = max(repeat, 7)
        for chunks, label in ((None, "lazy"), ({}, "chunks={}")):
            cells = measure_many(
                f"open {n_vars} variables ({label})",
                {
                    ZARRDASK: Task(lambda: open_many("zarrdask", chunks), check=check_vars, unit="ms"),
                    ZARR_PYTHON: Task(lambda: open_many("zarr", chunks), check=check_vars, unit="ms"),
                },
                n_open,
            )
            sc.rows.append(Row(f"open_dataset {n_vars} variables ({label}), median per open", cells,
                               note=f"{n_open} repetitions of {OPENS_PER_REP} opens"))
        # ------------------------------------------------------------ materialised reads (after the rows above)
        def check_values(values):
            return compare(data, values)

        def zarrs_open():
            import zarr

            with zarr.config.set(LIB_OBJECTS[ZARRS].PIPELINE):  # the pipeline is bound at open
                return xr.open_dataset(climate, engine="zarr", chunks={})

        opens = {ZARRDASK: lambda: xr.open_dataset(climate, engine="zarrdask", chunks={}),
                 ZARR_PYTHON: lambda: xr.open_dataset(climate, engine="zarr", chunks={}),
                 ZARRS: zarrs_open}
        data = make_data(geom.shape)
        materialised = []
        for label, run_it, check in (
            ('["t2m"].values', lambda ds: ds["t2m"].values, check_values),
            (".load()", lambda ds: ds.load(), lambda ds: check_values(ds["t2m"].values)),
        ):
            cells = measure_many(f"xarray {label}", {lib: Task(lambda op=op, f=run_it: f(op()), check=check)
                                                     for lib, op in opens.items()}, repeat)
            materialised.append(Row(f"open_dataset(chunks={{}}){label}", cells, nbytes=geom.nbytes))
            sc.rows.append(materialised[-1])

        # ------------------------------------------------------------ floors (after every row; no Zarr code)
        import zstd_floor

        t2m = os.path.join(climate, "t2m")
        cores = os.cpu_count() or 1
        mean_floor = measure_floor(
            f"libzstd decoding each shard of t2m into a block + block.sum(axis=0), {cores} threads, no dask",
            lambda: Task(zstd_floor.reduce_floor(t2m, lambda b: (b.sum(axis=0), b.shape[0]), cores)), repeat)
        compute_floor = measure_floor(
            "dask .compute() of tasks that each decode a shard of t2m into a block with libzstd (no Zarr), then "
            "dask's assembly of the blocks", lambda: Task(zstd_floor.dask_floor(t2m), check=check_values),
            repeat)
        meta = zstd_floor.metadata_floor(many)

        def meta_opens() -> SelfTimed:
            lat = []
            for _ in range(OPENS_PER_REP):
                t0 = time.perf_counter()
                doc = meta()
                lat.append(time.perf_counter() - t0)
            return SelfTimed(statistics.median(lat), result=doc)

        def check_doc(doc):
            n = sum(1 for k in doc.get("consolidated_metadata", {}).get("metadata", {}) if k.startswith("var"))
            return None if n == n_vars else f"{n} variables in the root's documents, not {n_vars}"

        open_floor = measure_floor(
            f"read + json.loads of the {n_vars}-variable dataset's consolidated root zarr.json, median per open",
            lambda: Task(meta_opens, check=check_doc, unit="ms"), max(repeat, 7))
        for row in sc.rows:
            row.floor = (open_floor if f"{n_vars} variables" in row.case else
                         compute_floor if any(row is m for m in materialised) else mean_floor)
    sc.notes.append("both engines with their defaults (consolidated metadata present; engine=zarr reads it)")
    sc.notes.append("targets (issue 5): mean(time) ratio >= 20x; 50-variable open ratio >= 3x")
    return sc
