"""Sequences of Dataset writes, held to an in-memory Dataset and read by xarray's own engine (hypothesis stateful).

A generated store (Zarr v2 or v3, sharded or not, consolidated or not) goes through a
generated sequence of what users run with ``ds.zarrdask.to_zarr``: appends along time
(numpy or dask variables, chunks that cut shards), ``region`` writes of time slices
(explicit and ``"auto"``, which keep the attributes), ``mode="a"`` adding a variable, and
attribute updates (each ``mode="a"`` write and append sets the Dataset's attributes, as
xarray's ``to_zarr`` does). After
every step ``xr.open_zarr``'s view through ``engine="zarrdask"`` equals the model; every
few steps xarray's ``engine="zarr"`` reads the same and ``verify`` finds nothing wrong.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import zarrdask

pytest.importorskip("zarr")

NX = 6


def _dataset(start: int, steps: int, seed: int, chunked: int | None) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    time = pd.date_range("2000-01-01", periods=start + steps, freq="D")[start:]
    ds = xr.Dataset(
        {"t2m": (("time", "x"), rng.normal(size=(steps, NX)).astype("float32")),
         "count": (("time",), rng.integers(0, 100, size=steps).astype("int32"))},
        coords={"time": time, "x": np.arange(NX)})
    return ds.chunk({"time": chunked}) if chunked else ds


class DatasetSequences(RuleBasedStateMachine):
    """A store written by ``ds.zarrdask.to_zarr`` and the Dataset it must hold."""

    @initialize(zarr_format=st.sampled_from([2, 3]), sharded=st.booleans(), consolidated=st.booleans(),
                steps=st.integers(1, 5), seed=st.integers(0, 2**16))
    def create(self, zarr_format: int, sharded: bool, consolidated: bool, steps: int, seed: int) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="zarrdask-ds-"))
        self.path = str(self.root / "ds.zarr")
        self.consolidated = consolidated
        self.model = _dataset(0, steps, seed, None)
        encoding = {"t2m": {"chunks": (2, 3)}, "count": {"chunks": (2,)}}
        if sharded and zarr_format == 3:
            encoding = {"t2m": {"chunks": (2, 3), "shards": (4, 6)}, "count": {"chunks": (2,), "shards": (4,)}}
        self.model.zarrdask.to_zarr(self.path, mode="w", zarr_format=zarr_format, encoding=encoding,
                                    consolidated=consolidated)
        self.steps = 0

    def teardown(self) -> None:
        shutil.rmtree(getattr(self, "root", "/nonexistent"), ignore_errors=True)

    @rule(steps=st.integers(1, 5), seed=st.integers(0, 2**16), chunked=st.sampled_from([None, 1, 3]))
    def append(self, steps: int, seed: int, chunked: int | None) -> None:
        new = _dataset(self.model.sizes["time"], steps, seed, chunked)
        extra = [v for v in self.model.data_vars if v not in new]
        for name in extra:  # (a variable added later along time: appended too)
            new[name] = (("time",), np.full(steps, 7, dtype=self.model[name].dtype))
        new.zarrdask.to_zarr(self.path, append_dim="time", consolidated=self.consolidated)
        self.model = xr.concat([self.model, new.compute()], dim="time")
        self.model.attrs = dict(new.attrs)  # (an append writes the Dataset's attributes, as xarray's to_zarr)

    @rule(data=st.data(), seed=st.integers(0, 2**16), auto=st.booleans())
    def region(self, data: st.DataObject, seed: int, auto: bool) -> None:
        n = self.model.sizes["time"]
        start = data.draw(st.integers(0, n - 1))
        stop = data.draw(st.integers(start + 1, n))
        new = _dataset(start, stop - start, seed, None)
        for name in [v for v in self.model.data_vars if v not in new]:
            new[name] = (("time",), np.full(stop - start, 5, dtype=self.model[name].dtype))
        if auto:
            new.zarrdask.to_zarr(self.path, region="auto", consolidated=self.consolidated)
        else:
            new.drop_vars(["x"]).zarrdask.to_zarr(self.path, region={"time": slice(start, stop)},
                                                  consolidated=self.consolidated)
        model = self.model.copy(deep=True)
        for name in new.data_vars:
            model[name][{"time": slice(start, stop)}] = new[name].values
        self.model = model

    @rule(seed=st.integers(0, 2**16))
    def add_variable(self, seed: int) -> None:
        name = f"v{len(self.model.data_vars)}"
        if len(self.model.data_vars) > 4:
            return
        values = np.random.default_rng(seed).integers(0, 9, size=self.model.sizes["time"]).astype("int16")
        new = xr.Dataset({name: (("time",), values)}, coords={"time": self.model["time"]})
        new.zarrdask.to_zarr(self.path, mode="a", consolidated=self.consolidated)
        self.model = self.model.assign({name: (("time",), values)})
        self.model.attrs = dict(new.attrs)

    @rule(key=st.sampled_from(["title", "source"]), value=st.text(max_size=4))
    def attributes(self, key: str, value: str) -> None:
        self.model.attrs[key] = value
        xr.Dataset(attrs=self.model.attrs).zarrdask.to_zarr(self.path, mode="a", consolidated=self.consolidated)

    @invariant()
    def stores_the_model(self) -> None:
        if not hasattr(self, "model"):
            return
        self.steps += 1
        got = xr.open_dataset(self.path, engine="zarrdask", chunks={}).load()
        xr.testing.assert_identical(got.drop_encoding(), self.model)
        if self.steps % 4 == 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                peer = xr.open_dataset(self.path, engine="zarr", chunks=None).load()
            xr.testing.assert_identical(peer.drop_encoding(), self.model)
            assert zarrdask.verify(self.path).findings == []


DatasetSequences.TestCase.settings = settings(max_examples=15, stateful_step_count=8, deadline=None,
                                              derandomize=True, database=None,
                                              suppress_health_check=list(HealthCheck))
test_dataset_sequences = DatasetSequences.TestCase
