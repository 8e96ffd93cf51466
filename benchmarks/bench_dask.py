"""Scenario 'dask' (issue 4): Dask graphs over the small-inner-chunk sharded array.

Read: ``.sum().compute()`` of the whole array (written once by zarr-python) through
  zarrdask     ``zarrdask.from_zarr(path)``                          (one task per shard)
  zarr-python  ``dask.array.from_zarr(path)``                        (dask's default: one task per
                                                                      *inner* chunk, the case users hit)
  tensorstore  ``da.from_array(<TensorStore>, chunks=shard shape)``  (one task per shard)
plus an extra row: ``dask.array.from_zarr(path, chunks=shard shape)`` (zarr-python at its best).
Materialised read (after the writes): ``.compute()`` of the whole array by the same four
readers (zarrs with chunks = shard), checked bit for bit.

Floors (harness.Floor, measured after every row, no Zarr code): libzstd over each shard into a
block + its sum (the reads), dask ``.compute()`` of libzstd tasks (the materialised read),
libzstd-1 compression + the files (the writes).

Write: a dask array held in memory (``da.from_array(numpy)``) written to a new sharded array
  aligned:    dask chunks = shards
  misaligned: dask chunks that cut through shards (multiples of the inner chunk, so dask's
              own inner-chunk check lets them through)
through ``zarrdask.to_zarr`` / ``dask.array.to_zarr(path, shards=..)`` / ``da.store`` into a
TensorStore. Every repetition is read back and compared bit for bit (untimed): the check
column says whether the written array is right. An extra row writes the misaligned array
into an existing ``zarr.Array`` (``dask.array.to_zarr(arr, zarr_array)``), the path where dask
itself rechunks to whole shards first.

The threaded scheduler with dask's default worker count (one per core) is used throughout.
"""

from __future__ import annotations

import os
import uuid

import numpy as np

from harness import TENSORSTORE, ZARR_PYTHON, ZARRDASK, ZARRS, Geometry, Row, Scenario, Task, compare, make_data
from harness import empty_for_write, measure_floor, measure_many, rmtree
from libs import LIB_OBJECTS, ZSTD1, Layout, TSDaskAdapter, ts_spec
import reference


def _sum_check(expected: float):
    def check(result):
        got = float(result)
        if np.isclose(got, expected, rtol=1e-4):
            return None
        return f"sum {got!r} != {expected!r}"

    return check


def _zarrs_array(path: str, chunks):
    import dask.array as da
    import zarr

    with zarr.config.set(LIB_OBJECTS[ZARRS].PIPELINE):  # the pipeline is bound at open
        return da.from_zarr(path, chunks=chunks)


def run(geom: Geometry, repeat: int, data_dir: str) -> Scenario:
    import dask
    import dask.array as da
    import tensorstore as ts
    import zarr
    from zarr.codecs import ZstdCodec

    sc = Scenario(
        name="dask",
        title=f"dask graphs on shards {geom.shard} / inner {geom.inner} (issue 4)",
        columns={
            ZARRDASK: "zarrdask.from_zarr / zarrdask.to_zarr",
            ZARR_PYTHON: "dask.array.from_zarr / dask.array.to_zarr (zarr-python)",
            ZARRS: "dask.array.from_zarr(chunks=shard), zarr-python with the zarrs pipeline (read only)",
            TENSORSTORE: "da.from_array(TensorStore, chunks=shard) / da.store(.., TensorStore)",
        },
    )
    data = make_data(geom.shape)
    ref_path = reference.sharded_array(geom, data_dir)
    check_sum = _sum_check(float(data.sum(dtype=np.float64)))

    with dask.config.set(scheduler="threads"):
        # ------------------------------------------------------------------ read
        def zd_read():
            import zarrdask

            return zarrdask.from_zarr(ref_path).sum().compute()

        def zp_read(chunks=None):
            return da.from_zarr(ref_path, chunks=chunks).sum().compute()

        def zs_read():
            with zarr.config.set(LIB_OBJECTS[ZARRS].PIPELINE):  # the pipeline is bound at open
                x = da.from_zarr(ref_path, chunks=geom.shard)
            return x.sum().compute()

        def ts_read():
            arr = ts.open(ts_spec(ref_path), read=True).result()
            x = da.from_array(TSDaskAdapter(arr), chunks=geom.shard, name="ts-read-" + uuid.uuid4().hex)
            return x.sum().compute()

        cells = measure_many(
            "dask full read",
            {
                ZARRDASK: Task(zd_read, check=check_sum),
                ZARR_PYTHON: Task(zp_read, check=check_sum),
                ZARRS: Task(zs_read, check=check_sum),
                TENSORSTORE: Task(ts_read, check=check_sum),
            },
            repeat,
        )
        read = Row("full read .sum().compute()", cells, nbytes=geom.nbytes)
        sc.rows.append(read)
        cells = measure_many(
            "dask full read, zarr-python with shard-sized chunks",
            {ZARR_PYTHON: Task(lambda: zp_read(chunks=geom.shard), check=check_sum)},
            repeat,
        )
        sc.rows.append(Row("  (peer) da.from_zarr(chunks=shard)", cells, baseline=read))
        n_inner = int(np.prod([-(-s // c) for s, c in zip(geom.shape, geom.inner)]))
        n_shards = int(np.prod([-(-s // c) for s, c in zip(geom.shape, geom.shard)]))
        sc.notes.append(
            f"read tasks: zarrdask and TensorStore {n_shards} (one per shard); dask.array.from_zarr's "
            f"default {n_inner} (one per inner chunk)"
        )

        # ------------------------------------------------------------------ write
        out = {lib: os.path.join(data_dir, "dask_write", lib) for lib in (ZARRDASK, ZARR_PYTHON, TENSORSTORE)}
        layout = Layout(geom.inner, geom.shard)

        def verify_with(reader: str, path: str):
            L = LIB_OBJECTS[reader]

            def check(_result):
                return compare(data, L.read_all(L.open(path)))

            return check

        def zd_write(x):
            import zarrdask

            zarrdask.to_zarr(
                x, out[ZARRDASK], chunks=geom.inner, shards=geom.shard, compressors=[ZSTD1], fill_value=0, mode="w"
            )

        def zp_write(x):
            da.to_zarr(
                x,
                out[ZARR_PYTHON],
                mode="w-",  # a new array; mode="w" would make dask take a global lock
                chunks=geom.inner,
                shards=geom.shard,
                compressors=ZstdCodec(level=1),
                fill_value=0,
            )

        def zp_write_existing(x):
            z = zarr.create_array(
                store=out[ZARR_PYTHON],
                shape=geom.shape,
                dtype="float32",
                chunks=geom.inner,
                shards=geom.shard,
                compressors=ZstdCodec(level=1),
                fill_value=0,
            )
            da.to_zarr(x, z)

        def ts_write(x):
            arr = ts.open(
                ts_spec(out[TENSORSTORE], shape=geom.shape, layout=layout), create=True, delete_existing=True
            ).result()
            da.store(x, TSDaskAdapter(arr), lock=False)

        def task(fn, x, lib, reader):
            return Task(
                lambda: fn(x),
                setup=lambda: empty_for_write(out[lib]),
                check=verify_with(reader, out[lib]),
                check_every=True,
            )

        rows = {}
        for kind, chunks in (("aligned", geom.shard), ("misaligned", geom.misaligned)):
            x = da.from_array(data, chunks=chunks, name=f"src-{kind}")
            cells = measure_many(
                f"dask write {kind}",
                {
                    ZARRDASK: task(zd_write, x, ZARRDASK, TENSORSTORE),
                    ZARR_PYTHON: task(zp_write, x, ZARR_PYTHON, TENSORSTORE),
                    TENSORSTORE: task(ts_write, x, TENSORSTORE, ZARR_PYTHON),
                },
                repeat,
            )
            label = "dask chunks = shards" if kind == "aligned" else f"dask chunks {geom.misaligned}"
            rows[kind] = Row(f"write {kind} ({label})", cells, nbytes=geom.nbytes)
            sc.rows.append(rows[kind])
            if kind == "misaligned":
                cells = measure_many(
                    "dask write misaligned into an existing zarr.Array",
                    {ZARR_PYTHON: task(zp_write_existing, x, ZARR_PYTHON, TENSORSTORE)},
                    repeat,
                )
                sc.rows.append(
                    Row(
                        "  (peer) misaligned -> existing zarr.Array",
                        cells,
                        baseline=rows["misaligned"],
                        note="dask rechunks to whole shards first when handed an existing zarr.Array",
                    )
                )

        # ------------------------------------------------------------------ materialised read
        def check_all(result):
            return compare(data, result)

        def zd_array():
            import zarrdask

            return zarrdask.from_zarr(ref_path)

        readers = {
            ZARRDASK: zd_array,
            ZARR_PYTHON: lambda: da.from_zarr(ref_path),
            ZARRS: lambda: _zarrs_array(ref_path, geom.shard),
            TENSORSTORE: lambda: da.from_array(TSDaskAdapter(ts.open(ts_spec(ref_path), read=True).result()),
                                               chunks=geom.shard, name="ts-read-" + uuid.uuid4().hex),
        }
        cells = measure_many("dask full read .compute()",
                             {lib: Task(lambda make=make: make().compute(), check=check_all)
                              for lib, make in readers.items()}, repeat)
        materialised = Row("full read .compute() (the whole array)", cells, nbytes=geom.nbytes)
        sc.rows.append(materialised)

        # ------------------------------------------------------------------ floors (after every row)
        import zstd_floor

        cores = os.cpu_count() or 1
        floor_out = os.path.join(data_dir, "dask_write", "floor")
        write_floor = measure_floor(
            f"libzstd-1 compression of every chunk + shard index + one file per shard, {cores} threads",
            lambda: Task(zstd_floor.write_floor(data, geom.inner, geom.shard, floor_out, cores),
                         setup=lambda: empty_for_write(floor_out)), repeat)
        rmtree(floor_out)
        sum_floor = measure_floor(
            f"libzstd decoding each shard into a block + block.sum(), {cores} threads, no dask",
            lambda: Task(zstd_floor.reduce_floor(ref_path, lambda b: b.sum(), cores),
                         check=lambda r: check_sum(sum(r))), repeat)
        compute_floor = measure_floor(
            "dask .compute() of tasks that each decode a shard into a block with libzstd (no Zarr), then "
            "dask's assembly of the blocks",
            lambda: Task(zstd_floor.dask_floor(ref_path), check=check_all), repeat)
        for row in sc.rows:
            row.floor = (write_floor if row.case.startswith(("write", "  (peer) misaligned")) else
                         compute_floor if row is materialised else sum_floor)
        assembly = measure_floor(f"dask's assembly alone, da.from_array(numpy, chunks={geom.shard}).compute()",
                                 lambda: Task(zstd_floor.assembly_floor(data, geom.shard), check=check_all), repeat)
        if assembly.cell.median is not None:
            sc.notes.append(f"dask's assembly alone, da.from_array(numpy, chunks={geom.shard}).compute(): "
                            f"med {assembly.cell.median:.3f} s (min {assembly.cell.min:.3f} s) "
                            f"[{assembly.cell.check_summary()}] (part of the .compute() floor)")

    al, mis = rows["aligned"].cells[ZARRDASK], rows["misaligned"].cells[ZARRDASK]
    if al.median and mis.median:
        sc.notes.append(
            f"zarrdask misaligned/aligned write time = {mis.median / al.median:.2f} (target <= 1.2)"
        )
    zp_mis = rows["misaligned"].cells[ZARR_PYTHON]
    if zp_mis.checks:
        sc.notes.append(
            "dask.array.to_zarr(path, shards=...) with misaligned chunks: "
            + (
                "read back CORRECT in every repetition"
                if all(c is None for c in zp_mis.checks)
                else f"read back WRONG ({zp_mis.check_summary()})"
            )
        )
    sc.notes.append("write = create the array + compute the graph; every repetition read back and compared, untimed")
    return sc
