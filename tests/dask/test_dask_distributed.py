"""Race tests on a multi-process LocalCluster: misaligned writes must be bit-exact every time.

Dask chunks (7, 13) never line up with shards (32, 32) (inner chunks (8, 8)): with an
unplanned write several tasks would rewrite the same shard concurrently and lose data.
Each race test repeats its write with fresh data: 5 times in the suite; the acceptance
run, 20 (``ZARRDASK_ACCEPTANCE_TRIALS`` sets the count)::

    ZARRDASK_ACCEPTANCE_TRIALS=20 .venv/bin/python -m pytest tests/dask/test_dask_distributed.py -p no:cacheprovider
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import dask
import dask.array as da
import distributed
from zarrdask.api.openers import open_array
from zarrdask.nodes.create import create_array
from zarrdask.dask_io import from_zarr, to_zarr

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(300)]

REPEAT = int(os.environ.get("ZARRDASK_ACCEPTANCE_TRIALS", "5"))
SHAPE = (150, 140)
LAYOUT = dict(chunks=(8, 8), shards=(32, 32), fill_value=0)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=2, dashboard_address=None
    ) as cluster, distributed.Client(cluster, set_as_default=False) as c:
        yield c


def _source(seed: int, shape: tuple[int, ...]) -> tuple[np.ndarray, da.Array]:
    data = np.random.default_rng(seed).standard_normal(shape)
    return data, da.from_array(data, chunks=(7, 13))


def test_misaligned_write_is_bit_exact(client, tmp_path):
    for rep in range(REPEAT):
        data, x = _source(rep, SHAPE)
        target = tmp_path / f"w{rep}.zarr"
        client.compute(to_zarr(x, str(target), compute=False, **LAYOUT)).result()
        np.testing.assert_array_equal(open_array(str(target))[...], data, err_msg=f"repetition {rep}")


def test_region_write_starting_mid_shard_is_bit_exact(client, tmp_path):
    for rep in range(REPEAT):
        base = np.random.default_rng(1000 + rep).standard_normal(SHAPE)
        target = str(tmp_path / f"r{rep}.zarr")
        create_array(target, shape=SHAPE, dtype="float64", **LAYOUT)[...] = base
        data, x = _source(rep, (101, 90))
        region = (slice(13, 114), slice(21, 111))
        client.compute(to_zarr(x, target, mode="r+", region=region, compute=False)).result()
        base[region] = data
        np.testing.assert_array_equal(open_array(target)[...], base, err_msg=f"repetition {rep}")


def test_append_starting_mid_shard_is_bit_exact(client, tmp_path):
    for rep in range(REPEAT):
        first = np.random.default_rng(2000 + rep).standard_normal((45, SHAPE[1]))  # 45 = 32 + 13
        target = str(tmp_path / f"a{rep}.zarr")
        create_array(target, shape=first.shape, dtype="float64", **LAYOUT)[...] = first
        data, x = _source(rep, (100, SHAPE[1]))
        client.compute(to_zarr(x, target, mode="a", compute=False)).result()
        np.testing.assert_array_equal(
            open_array(target)[...], np.concatenate([first, data]), err_msg=f"repetition {rep}"
        )


def test_read_and_write_through_the_default_client(client, tmp_path):
    data, x = _source(7, SHAPE)
    with dask.config.set(scheduler=client):
        written = to_zarr(x, str(tmp_path / "d.zarr"), **LAYOUT)
        y = from_zarr(written)
        assert y.numblocks == (5, 5)
        np.testing.assert_array_equal(y.compute(), data)
    prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert {"zarrdask-read", "zarrdask-write"} <= set(prefixes)


def test_a_materialised_read_on_the_cluster_is_one_task(client, tmp_path):
    """``from_zarr(...).compute()`` reads on one worker straight into the result (no blocks
    gathered there and copied); ``dask.compute`` of the same array keeps dask's blocks."""
    data, x = _source(8, SHAPE)
    with dask.config.set(scheduler=client):
        y = from_zarr(to_zarr(x, str(tmp_path / "m.zarr"), **LAYOUT))
        with distributed.get_task_stream(client) as stream:
            np.testing.assert_array_equal(y.compute(), data)
        assert [t["key"] for t in stream.data] == [f"{y.name}-whole"]
        with distributed.get_task_stream(client) as stream:
            np.testing.assert_array_equal(dask.compute(y)[0], data)
        assert len(stream.data) == y.npartitions + 1  # (the blocks and dask's finalize)


def test_write_graph_ships_compact_and_materialises_on_the_scheduler(client, tmp_path, monkeypatch):
    """The client sends the plan, not the tasks: nothing is generated on the client's
    thread (the in-process scheduler materialises the graph on its own event-loop thread),
    and what would be sent for a million shards is small."""
    import pickle
    import threading

    from zarrdask.dask_io.write_graph import PlanWrites

    on_main = []
    real_task = PlanWrites.task

    def spy(self, key):
        on_main.append(threading.current_thread() is threading.main_thread())
        return real_task(self, key)

    monkeypatch.setattr(PlanWrites, "task", spy)
    data, x = _source(11, SHAPE)
    client.compute(to_zarr(x, str(tmp_path / "c.zarr"), compute=False, **LAYOUT)).result()
    np.testing.assert_array_equal(open_array(str(tmp_path / "c.zarr"))[...], data)
    assert on_main and not any(on_main)  # generated, but only where the scheduler runs
    huge = to_zarr(da.zeros((100_000, 100_000), chunks=(99, 101), dtype="f4"), str(tmp_path / "huge.zarr"),
                   chunks=(100, 100), shards=(100, 100), mode="w", compute=False)
    from dask.base import collections_to_expr

    assert len(pickle.dumps(collections_to_expr([huge]))) < 2**20
    assert not any(on_main)


@pytest.mark.s3
def test_cluster_writes_to_s3_from_misaligned_chunks_and_another_job_reads_it(client, s3_url, s3_endpoint):
    """End to end on a process cluster and the loopback S3 server: one job writes a sharded
    array from chunks that cut through its shards, other jobs read it through from_zarr and
    the xarray engine; both bit-exact."""
    import xarray as xr
    from _s3 import s3_storage_options

    from zarrdask.nodes.group import create_group

    options = s3_storage_options(s3_endpoint)
    data = np.random.default_rng(5).standard_normal((300, 260)).astype("f4")
    url = f"{s3_url}/cluster.zarr"
    create_group(url, storage_options=options)
    write = to_zarr(da.from_array(data, chunks=(47, 61)), url, path="t", chunks=(25, 20), shards=(100, 80),
                    dimension_names=["y", "x"], storage_options=options, compute=False)
    client.compute(write).result()
    y = from_zarr(url, path="t", storage_options=options)
    assert y.numblocks == (3, 4)
    np.testing.assert_array_equal(client.compute(y).result(), data)
    ds = xr.open_dataset(url, engine="zarrdask", chunks={}, storage_options=options, consolidated=False)
    assert ds["t"].chunks == ((100, 100, 100), (80, 80, 80, 20))
    np.testing.assert_array_equal(client.compute(ds["t"].data).result(), data)
