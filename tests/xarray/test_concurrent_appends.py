"""Datasets appended along one dimension by several processes at once: every process's
time steps land once, each with its own values in every variable.

Each append grows every variable from the lengths its ``to_zarr`` read, only if they are
still the stored ones (``Array.resize(..., from_shape=)``); a process that finds another's
append in progress (or done since it read) gets a WriteConflictError and appends again.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import numpy as np
import xarray as xr
from _util import run_at_once

from zarrdask.errors import WriteConflictError
from zarrdask.xarray_backend import to_zarr

PROCESSES, EACH = 3, 4
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["zarrdask", "xarray", "numpy"])


def _step(value: int) -> xr.Dataset:
    return xr.Dataset({"v": (("time", "x"), np.full((1, 3), value, "int32")),
                       "w": (("time",), np.array([-value], "int32"))},
                      coords={"time": [value]})


def _appender(target: str, k: int, barrier: Any) -> None:
    barrier.wait()
    for j in range(EACH):
        for _ in range(200):
            try:
                to_zarr(_step(100 * k + j), target, append_dim="time")
                break
            except WriteConflictError:
                time.sleep(0.01)
        else:
            raise AssertionError("never appended")


def test_processes_appending_to_one_dataset_each_keep_their_steps(tmp_path):
    target = str(tmp_path / "d.zarr")
    to_zarr(_step(-1), target)
    run_at_once(_CONTEXT, _appender, PROCESSES, target)
    ds = xr.open_dataset(target, engine="zarrdask").load()
    times = ds["time"].values.tolist()
    assert sorted(times) == sorted([-1] + [100 * k + j for k in range(PROCESSES) for j in range(EACH)])
    assert (ds["v"].values == np.array(times)[:, None]).all()
    assert (ds["w"].values == -np.array(times)).all()


def test_an_append_stopped_midway_is_named_and_nothing_changes(tmp_path):
    import zarrdask

    target = str(tmp_path / "d.zarr")
    to_zarr(_step(1), target)
    zarrdask.open_array(target, path="w", mode="r+").resize(2)  # (as an append that grew w, then stopped)
    try:
        to_zarr(_step(2), target, append_dim="time")
    except WriteConflictError as e:
        message = str(e)
    else:
        raise AssertionError("appended")
    assert "cannot append along 'time'" in message and "v 1" in message and "w 2" in message
    assert {n: a.shape[0] for n, a in zarrdask.open_group(target).arrays()} == {"time": 1, "v": 1, "w": 2}
    # the calls the message gives, run as printed, then the append again
    fix = message.split("shrink the longer arrays back to 1 and append again: ")[1]
    for call in fix.split("; "):
        eval(call, {"zarrdask": zarrdask})
    to_zarr(_step(2), target, append_dim="time")
    ds = xr.open_dataset(target, engine="zarrdask").load()
    assert ds["time"].values.tolist() == [1, 2] and ds["w"].values.tolist() == [-1, -2]
    assert ds["v"].values.tolist() == [[1, 1, 1], [2, 2, 2]]
