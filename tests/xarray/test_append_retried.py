"""An append killed halfway and run again, as a preempted job is retried: its rows are
completed, none added twice. An append of other rows after it is refused, names the
unfinished write, and the fix it prints works as printed.

The first append runs in a process of its own that dies (``os._exit``, no cleanup) in the
middle of its dask write, after the arrays have grown and some of the new rows are written.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import WriteConflictError

_CONTEXT = multiprocessing.get_context("spawn")
STEPS = 6  # rows per append


def _dataset(first_day: str, value: float, dask: bool = False) -> xr.Dataset:
    data = np.full((STEPS, 3), value)
    a = data
    if dask:
        import dask.array as da

        def die_on_second_block(block, block_info=None):
            if block_info[None]["chunk-location"][0] == 1:
                os._exit(9)  # (killed: no exception handler, no cleanup runs)
            return block

        a = da.from_array(data, chunks=(2, 3)).map_blocks(die_on_second_block, dtype=float)
    return xr.Dataset({"a": (("time", "x"), a), "b": (("time",), np.full(STEPS, -value))},
                      coords={"time": pd.date_range(first_day, periods=STEPS)})


def _killed_append(target: str) -> None:
    import dask

    with dask.config.set(scheduler="synchronous"):
        _dataset("2001-01-01", 2.0, dask=True).zarrdask.to_zarr(target, append_dim="time")


@pytest.fixture
def interrupted(tmp_path) -> str:
    """A dataset of 6 rows, then an append of 6 more killed halfway through its data."""
    target = str(tmp_path / "d.zarr")
    _dataset("2000-01-01", 1.0).zarrdask.to_zarr(target, mode="w")
    process = _CONTEXT.Process(target=_killed_append, args=(target,))
    process.start()
    process.join(120)
    assert process.exitcode == 9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarrdask.open_group(target)
        assert {n: a.shape[0] for n, a in group.arrays()} == {"a": 12, "b": 12, "time": 12}
        assert np.isnan(group["a"][6:]).any()  # (rows it never wrote)
    return target


def _read(target: str) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no unfinished write left to warn of)
        return xr.open_dataset(target, engine="zarrdask").load()


def test_the_same_append_run_again_completes_its_rows(interrupted) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the open warns of the unfinished write, once a process)
        _dataset("2001-01-01", 2.0).zarrdask.to_zarr(interrupted, append_dim="time")
    ds = _read(interrupted)
    assert list(ds["time"].values) == list(pd.date_range("2000-01-01", periods=6)) + list(
        pd.date_range("2001-01-01", periods=6))
    assert ds["a"].values.tolist() == [[1.0] * 3] * 6 + [[2.0] * 3] * 6
    assert ds["b"].values.tolist() == [-1.0] * 6 + [-2.0] * 6
    report = zarrdask.verify(interrupted)
    assert report.ok and report.interrupted == []
    _dataset("2002-01-01", 3.0).zarrdask.to_zarr(interrupted, append_dim="time")  # (appends go on)
    assert _read(interrupted)["a"].shape == (18, 3)


def test_another_append_is_refused_and_the_printed_fix_works(interrupted) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(WriteConflictError) as refused:
            _dataset("2003-01-01", 4.0).zarrdask.to_zarr(interrupted, append_dim="time")
        assert {n: a.shape[0] for n, a in zarrdask.open_group(interrupted).arrays()} == {"a": 12, "b": 12, "time": 12}
    message = str(refused.value)
    assert "rows 6:12 along 'time'" in message and "Dataset.zarrdask.to_zarr" in message
    shrink, verify = re.search(r"drop its rows, (.*), then (zarrdask\.verify\(.*\)) removes", message).groups()
    for call in shrink.split("; "):
        eval(call, {"zarrdask": zarrdask})
    report = eval(verify, {"zarrdask": zarrdask})
    assert report.ok and [f.kind for f in report.fixed] == ["interrupted"]
    _dataset("2003-01-01", 4.0).zarrdask.to_zarr(interrupted, append_dim="time")
    ds = _read(interrupted)
    assert ds["a"].values.tolist() == [[1.0] * 3] * 6 + [[4.0] * 3] * 6
    assert list(ds["time"].values[6:]) == list(pd.date_range("2003-01-01", periods=6))


def test_verify_fix_keeps_the_record_of_rows_still_there(interrupted) -> None:
    report = zarrdask.verify(interrupted, fix=True)
    assert not report.ok and [f.kind for f in report.findings] == ["interrupted"] and report.fixed == []
