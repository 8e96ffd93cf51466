"""The xarray writers group whole shards into write tasks with ``task_size=`` and stage
the pieces of cut shards with ``staging=`` as ``zarrdask.to_zarr`` does: the same bytes,
fewer write tasks, stage tasks when asked or chosen, nothing left staged, a bad value
refused before anything is written."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr

import zarrdask  # noqa: F401  (registers the .zarrdask accessors)
from zarrdask.errors import InvalidValueError


def _dataset() -> xr.Dataset:
    rng = np.random.default_rng(5)
    data = rng.standard_normal((32, 48)).astype("f4")
    return xr.Dataset({"t": (("y", "x"), data)}, coords={"y": np.arange(32), "x": np.arange(48)}).chunk({"y": 4, "x": 6})


def _write_tasks(delayed) -> int:
    return sum(1 for k in dict(delayed.__dask_graph__()) if isinstance(k, tuple) and str(k[0]).startswith("zarrdask-write-")
               and "done" not in str(k[0]))


@pytest.mark.parametrize("task_size", [None, "auto", 4096])
def test_dataset_writer_groups_shards_and_writes_the_same(tmp_path, task_size):
    ds = _dataset()
    encoding = {"t": {"chunks": (4, 6), "shards": (4, 6)}}
    path = tmp_path / f"g{task_size}.zarr"
    delayed = ds.zarrdask.to_zarr(path, encoding=encoding, compute=False, task_size=task_size)
    tasks = _write_tasks(delayed)
    dask.compute(delayed)
    back = xr.open_dataset(path, engine="zarrdask")
    np.testing.assert_array_equal(back["t"].values, ds["t"].values)
    if task_size is None:
        assert tasks == 8 * 8  # one task per 96-byte shard
    elif task_size == 4096:  # 42 shards of 96 bytes fit in a task
        assert 2 <= tasks < 8 * 8


def test_dataarray_and_datatree_writers_take_task_size(tmp_path):
    ds = _dataset()
    ds["t"].zarrdask.to_zarr(tmp_path / "a.zarr", task_size="auto")
    np.testing.assert_array_equal(xr.open_dataarray(tmp_path / "a.zarr", engine="zarrdask").values, ds["t"].values)
    tree = xr.DataTree.from_dict({"/": ds, "/child": ds})
    tree.zarrdask.to_zarr(tmp_path / "tree.zarr", task_size="64 KiB")
    back = xr.open_datatree(tmp_path / "tree.zarr", engine="zarrdask")
    np.testing.assert_array_equal(back["child"]["t"].values, ds["t"].values)


@pytest.mark.parametrize("bad", ["lots", 0, 1.5, True])
def test_bad_task_size_is_refused_before_anything_is_written(tmp_path, bad):
    with pytest.raises(InvalidValueError, match="task_size="):
        _dataset().zarrdask.to_zarr(tmp_path / "x.zarr", task_size=bad)
    assert not (tmp_path / "x.zarr").exists()
    with pytest.raises(InvalidValueError, match="task_size="):
        xr.DataTree.from_dict({"/": _dataset()}).zarrdask.to_zarr(tmp_path / "y.zarr", task_size=bad)
    assert not (tmp_path / "y.zarr").exists()


def _wide_dataset() -> xr.Dataset:
    """A variable whose dask chunks cut its shards, over a cross-section wide enough that
    the waiting pieces would outweigh one thread's work (blocks counted from 0 bytes)."""
    data = np.random.default_rng(6).standard_normal((40, 2000))
    return xr.Dataset({"w": (("y", "x"), data)}).chunk({"y": 13, "x": 130})


@pytest.mark.parametrize("staging", [None, True, False])
def test_the_writers_take_staging_as_to_zarr_does(tmp_path, monkeypatch, staging):
    from zarrdask.dask_io import write_graph

    monkeypatch.setattr(write_graph, "CUT_BYTES", 0)  # these small chunks count as big
    ds = _wide_dataset()
    encoding = {"w": {"chunks": (5, 50), "shards": (10, 100)}}
    delayed = ds.zarrdask.to_zarr(tmp_path / "a.zarr", encoding=encoding, compute=False, staging=staging)
    staged = any(isinstance(k, tuple) and str(k[0]).startswith("zarrdask-stage-") for k in dict(delayed.dask))
    assert staged == (staging is not False)  # None stages here: 160 kB would wait, against 43 kB of work
    dask.compute(delayed)
    np.testing.assert_array_equal(xr.open_dataset(tmp_path / "a.zarr", engine="zarrdask")["w"].values, ds["w"].values)
    assert not list((tmp_path / "a.zarr").rglob("*staging*"))
    tree = xr.DataTree.from_dict({"/": ds})
    tree.zarrdask.to_zarr(tmp_path / "t.zarr", encoding={"/": encoding}, staging=staging)
    np.testing.assert_array_equal(xr.open_datatree(tmp_path / "t.zarr", engine="zarrdask")["w"].values, ds["w"].values)


def test_a_bad_staging_is_refused_before_anything_is_written(tmp_path):
    from zarrdask.errors import InvalidModeError

    with pytest.raises(InvalidModeError, match=r"staging must be True, False or None.*'yes'"):
        _dataset().zarrdask.to_zarr(tmp_path / "x.zarr", staging="yes")
    assert not (tmp_path / "x.zarr").exists()
    with pytest.raises(InvalidModeError, match=r"DataTree.zarrdask.to_zarr\(\): staging must be"):
        xr.DataTree.from_dict({"/": _dataset()}).zarrdask.to_zarr(tmp_path / "y.zarr", staging=1)
    assert not (tmp_path / "y.zarr").exists()


def test_a_deferred_write_keeps_its_graph_lazy(tmp_path):
    """``compute=False`` returns one ``Delayed`` over the variables' writes without building
    their tasks on the client (``dask.delayed`` would materialise every one of them: 5 s
    for 16,384 shards where ``to_zarr`` takes 0.02 s); it computes to the same data."""
    import dask.array as da
    from dask.highlevelgraph import MaterializedLayer

    x = da.random.default_rng(7).standard_normal((256, 1024), chunks=(16, 16)).astype("f4")  # 1,024 blocks
    ds = xr.Dataset({"a": (("y", "x"), x), "b": (("y", "x"), x + 1)})
    encoding = {v: {"chunks": (16, 16), "shards": (16, 16)} for v in ds}
    delayed = ds.zarrdask.to_zarr(tmp_path / "lazy.zarr", encoding=encoding, compute=False)
    ours = {k: v for k, v in delayed.dask.layers.items() if str(k).startswith("zarrdask-")}
    materialised = {k: len(v) for k, v in ours.items() if isinstance(v, MaterializedLayer)}
    records = {k for k in materialised if str(k).startswith("zarrdask-record-")}  # the call's record: stored, deleted
    assert len(records) == 2 and all(materialised[k] == 1 for k in records), materialised
    assert len(ours) > 2 and sum(v for k, v in materialised.items() if k not in records) == 1, materialised  # the merge
    dask.compute(delayed)
    back = xr.open_dataset(tmp_path / "lazy.zarr", engine="zarrdask")
    expected = x.compute()
    np.testing.assert_array_equal(back["a"].values, expected)
    np.testing.assert_array_equal(back["b"].values, expected + 1)
