"""``from_zarr(...).compute()`` and ``np.asarray`` read the whole array in one task
(``zarrdask/dask_io/whole.py``); every other graph over the array is dask's blocks."""

from __future__ import annotations

import pickle
import textwrap
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from dask.array.core import PerformanceWarning
from dask.callbacks import Callback
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.dask_io.whole import ReadArray
from zarrdask.storage import MemoryStore


class _Tasks(Callback):
    """The keys of the tasks a local scheduler ran."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list = []

    def _pretask(self, key, dsk, state):
        self.keys.append(key)


def _array(shape=(10, 12), chunks=(3, 4), shards=(6, 8), dtype="i4"):
    a = zarrdask.create_array(MemoryStore(), shape=shape, dtype=dtype, chunks=chunks, shards=shards, fill_value=0)
    data = (np.arange(np.prod(shape)) % 251).astype(dtype).reshape(shape)
    a[...] = data
    return a, data


def test_compute_runs_one_task_that_reads_the_whole_array():
    """Fails loudly when a dask release stops building compute's graph from ``expr``."""
    a, data = _array()
    x = zarrdask.from_zarr(a)
    assert type(x) is ReadArray and x.numblocks == (2, 2)
    with _Tasks() as tasks:
        out = x.compute()
    assert tasks.keys == [f"{x.name}-whole"], (tasks.keys, dask.__version__)
    np.testing.assert_array_equal(out, data)
    assert out.flags.writeable and out.flags.c_contiguous


@pytest.mark.parametrize("scheduler", ["sync", "threads", "processes"])
def test_every_local_scheduler_reads_the_same(scheduler, tmp_path):
    a, data = _array()
    path = tmp_path / "a.zarr"
    zarrdask.copy(a, str(path))
    with _Tasks() as tasks:
        out = zarrdask.from_zarr(str(path)).compute(scheduler=scheduler)
    np.testing.assert_array_equal(out, data)
    if scheduler != "processes":  # (there the callbacks run in the worker processes)
        assert len(tasks.keys) == 1


def test_numpy_and_xarray_values_take_the_one_read():
    xr = pytest.importorskip("xarray")
    a, data = _array()
    x = zarrdask.from_zarr(a)
    with _Tasks() as tasks:
        np.testing.assert_array_equal(np.asarray(x), data)
        np.testing.assert_array_equal(xr.DataArray(x, dims=("y", "x")).values, data)
    assert len(tasks.keys) == 2


def test_other_graphs_are_dasks_blocks():
    a, data = _array()
    x = zarrdask.from_zarr(a)
    with _Tasks() as tasks:
        np.testing.assert_array_equal(dask.compute(x)[0], data)  # (dask.compute keeps dask's graph)
        assert x.sum().compute() == data.sum()
        np.testing.assert_array_equal(x[2:9].compute(), data[2:9])
    assert not any(str(k).endswith("-whole") for k in tasks.keys) and len(tasks.keys) > 4
    for derived in (x + 1, x[1:], x.persist(), x.copy(), pickle.loads(pickle.dumps(x))):
        assert type(derived) is da.Array, derived
    assert not hasattr(x, "expr")  # (as on a plain dask array: dask's code asks hasattr)


def test_an_assignment_makes_it_compute_as_dask_does():
    a, data = _array()
    x = zarrdask.from_zarr(a)
    x[0] = -1
    with _Tasks() as tasks:
        out = x.compute()
    expected = data.copy()
    expected[0] = -1
    np.testing.assert_array_equal(out, expected)
    assert not any(str(k).endswith("-whole") for k in tasks.keys)


def test_each_compute_returns_its_own_array():
    a, data = _array()
    x = zarrdask.from_zarr(a)
    first = x.compute()
    first[...] = 0
    np.testing.assert_array_equal(x.compute(), data)


def test_query_planning_keeps_dasks_collection():
    from _util import run_with_query_planning

    run_with_query_planning(textwrap.dedent("""
        import numpy as np, dask.array as da, zarrdask
        from zarrdask.storage import MemoryStore
        a = zarrdask.create_array(MemoryStore(), shape=(6,), dtype="i2", chunks=(2,))
        a[...] = np.arange(6)
        x = zarrdask.from_zarr(a)
        assert type(x).__module__.startswith("dask"), type(x)
        assert np.array_equal(x.compute(), np.arange(6))
        print("ok")
    """))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_one_read_equals_dasks_blocks_assembled(data):
    ndim = data.draw(st.integers(0, 3), label="ndim")
    shape = tuple(data.draw(st.lists(st.integers(0, 9), min_size=ndim, max_size=ndim), label="shape"))
    chunks = tuple(data.draw(st.integers(1, 4)) for _ in shape)
    sharded = ndim > 0 and data.draw(st.booleans(), label="sharded")
    shards = tuple(c * data.draw(st.integers(1, 3)) for c in chunks) if sharded else None
    dtype = data.draw(st.sampled_from(["u1", "i4", "f8", "c8", "bool"]), label="dtype")
    read_chunks = data.draw(st.sampled_from([None, "auto", 2]), label="from_zarr chunks") if ndim else None
    a = zarrdask.create_array(MemoryStore(), shape=shape, dtype=dtype, chunks=chunks, shards=shards, fill_value=0)
    values = np.random.default_rng(0).integers(0, 100, size=shape).astype(dtype)
    if values.size:
        a[...] = values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)  # (chunks=2 may cut through shards)
        x = zarrdask.from_zarr(a, chunks=read_chunks)
    whole, blocks = x.compute(), dask.compute(x)[0]
    assert whole.dtype == blocks.dtype and whole.shape == blocks.shape == shape
    np.testing.assert_array_equal(whole, blocks)
    np.testing.assert_array_equal(whole, values)

