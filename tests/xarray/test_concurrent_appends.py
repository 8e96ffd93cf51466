"""Datasets appended along one dimension by several processes at once: every process's
time steps land once, each with its own values in every variable.

Each append grows every variable from the lengths its ``to_zarr`` read, only if they are
still the stored ones (``Array.resize(..., from_shape=)``); a process that finds another's
append in progress (or done since it read) gets a WriteConflictError and appends again.
"""

from __future__ import annotations

import multiprocessing
import re
import time
from typing import Any

import numpy as np
import pytest
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


def _in_flight(target: str, pid: int, value: int | None = None) -> None:
    """What another process's append leaves while it runs: every array one row longer and
    its record at the group; its rows written (``value``) or not yet (None: they read as the
    fill value, 0 for ``time`` here)."""
    import dataclasses

    import zarrdask
    from zarrdask.storage.records import WriteRecord, write_record

    group = zarrdask.open_group(target, mode="r+")
    n = group["time"].shape[0]
    for name in ("time", "v", "w"):
        array = group[name]
        array.resize((n + 1, *array.shape[1:]))
        if value is not None:
            array[n] = {"time": value, "v": value, "w": -value}[name]
    region = {"time": [[n, n + 1]], "v": [[n, n + 1], [0, 3]], "w": [[n, n + 1]]}
    record = WriteRecord("zarrdask.xarray_backend.to_zarr", "", region, 3, 24).stamped()
    write_record(group.store, dataclasses.replace(record, pid=pid))


def _exited_pid() -> int:
    process = _CONTEXT.Process(target=time.sleep, args=(0,))
    process.start()
    process.join()
    return process.pid


def test_an_append_is_no_rerun_of_another_whose_rows_read_as_its_values(tmp_path):
    """An append whose ``time`` values equal the fill value (0) meets another append's
    record over rows not written yet (they read as 0): it is not that append run again,
    so it is refused, rather than writing its step into the other's rows (one step lost,
    as 3 processes x 4 appends sometimes did)."""
    import zarrdask

    target = str(tmp_path / "d.zarr")
    to_zarr(_step(-1), target)
    _in_flight(target, _exited_pid())
    with pytest.raises(WriteConflictError, match="has not finished, or was interrupted") as refused:
        to_zarr(_step(0), target, append_dim="time")
    assert zarrdask.open_array(target, path="time").shape == (2,)  # (nothing changed)
    fix = re.search(r"or drop its rows, (.*), then zarrdask\.verify", str(refused.value)).group(1)
    for call in fix.split("; "):
        eval(call, {"zarrdask": zarrdask})
    assert zarrdask.verify(target, fix=True).ok
    to_zarr(_step(0), target, append_dim="time")
    ds = xr.open_dataset(target, engine="zarrdask").load()
    assert ds["time"].values.tolist() == [-1, 0] and ds["w"].values.tolist() == [1, 0]


def test_an_append_still_running_here_is_not_rerun_by_another(tmp_path):
    """The same append values over a record whose process still runs on this machine:
    refused (it may be writing them now); once that process has ended, the same call
    completes those rows as a rerun, adding none."""
    target = str(tmp_path / "d.zarr")
    to_zarr(_step(-1), target)
    sleeper = _CONTEXT.Process(target=time.sleep, args=(60,))
    sleeper.start()
    try:
        _in_flight(target, sleeper.pid, value=7)
        with pytest.raises(WriteConflictError, match="has not finished, or was interrupted"):
            to_zarr(_step(7), target, append_dim="time")
    finally:
        sleeper.terminate()
        sleeper.join()
    to_zarr(_step(7), target, append_dim="time")
    ds = xr.open_dataset(target, engine="zarrdask").load()
    assert ds["time"].values.tolist() == [-1, 7] and ds["v"].values[:, 0].tolist() == [-1, 7]
