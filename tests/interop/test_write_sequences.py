"""Sequences of writes, held to a numpy model and read back by zarr-python (hypothesis stateful).

One generated array (data type, 1-3 dimensions, chunks, shards or none, zstd or raw,
fill value; in a directory, a dict or a zarr-python MemoryStore) goes through a generated sequence of the calls users make: basic, orthogonal,
coordinate and mask assignments, ``resize`` (shrinking and growing: cells that come back
read as the fill value) and ``append``, on the open array and on fresh opens. After every
step zarrdask reads the model back exactly, through a fresh open, through the writing
array and through a second cached array opened at the start (within the shape both
know), so a write that leaves a stale chunk in the process's cache shows; every few
steps zarr-python reads the store and ``verify`` finds nothing wrong. Partial shard and
edge-chunk writes after a resize are where such sequences differ from the single writes
the other tests generate.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import zarrdask

zarr = pytest.importorskip("zarr")

DTYPES = ["uint8", "int16", "float32", "float64"]
CACHE = 1 << 20


def _dims(draw, ndim: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...] | None]:
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shards = None
    if draw(st.booleans()):
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    unit = shards or chunks
    shape = tuple(draw(st.integers(0, 3 * u + 1)) for u in unit)
    return shape, chunks, shards


class WriteSequences(RuleBasedStateMachine):
    """A zarrdask array and its numpy model, changed step by step."""

    @initialize(data=st.data())
    def create(self, data: st.DataObject) -> None:
        draw = data.draw
        self.root = Path(tempfile.mkdtemp(prefix="zarrdask-seq-"))
        kind = draw(st.sampled_from(["path", "path", "dict", "zarr-python MemoryStore"]))
        self.on_disk = kind == "path"
        self.path = str(self.root / "a.zarr") if self.on_disk else {} if kind == "dict" else zarr.storage.MemoryStore()
        self.dtype = np.dtype(draw(st.sampled_from(DTYPES)))
        shape, chunks, shards = _dims(draw, draw(st.integers(1, 3)))
        self.fill = draw(st.sampled_from([0, 7]))
        compressors = "zstd" if draw(st.booleans()) else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (no decoded-chunk cache on a dict or a zarr-python store)
            self.array = zarrdask.create_array(self.path, shape=shape, chunks=chunks, shards=shards,
                                               dtype=self.dtype, fill_value=self.fill, compressors=compressors,
                                               cache_bytes=CACHE)
        self.model = np.full(shape, self.fill, dtype=self.dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (no decoded-chunk cache on a zarr-python store)
            self.reader = zarrdask.open_array(self.path, cache_bytes=CACHE)
        self.steps = 0

    def teardown(self) -> None:
        shutil.rmtree(getattr(self, "root", "/nonexistent"), ignore_errors=True)

    def _values(self, draw, shape: tuple[int, ...]) -> np.ndarray:
        seed = draw(st.integers(0, 2**32 - 1))
        values = np.random.default_rng(seed).integers(0, 100, size=shape)
        if draw(st.booleans()):
            values[values % 3 == 0] = self.fill  # (some chunks become empty: not stored)
        return values.astype(self.dtype)

    @rule(data=st.data())
    def assign_basic(self, data: st.DataObject) -> None:
        draw = data.draw
        key = []
        for n in self.model.shape:
            start = draw(st.integers(0, n))
            stop = draw(st.integers(start, n))
            key.append(slice(start, stop, draw(st.sampled_from([1, 1, 2]))))
        region = self.model[tuple(key)]
        values = self._values(draw, region.shape)
        self.array[tuple(key)] = values
        self.model[tuple(key)] = values

    @rule(data=st.data())
    def assign_orthogonal(self, data: st.DataObject) -> None:
        draw = data.draw
        if 0 in self.model.shape:
            return
        key = tuple(np.array(sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))))
                    for n in self.model.shape)
        values = self._values(draw, tuple(len(k) for k in key))
        self.array.oindex[key] = values
        self.model[np.ix_(*key)] = values

    @rule(data=st.data())
    def assign_points(self, data: st.DataObject) -> None:
        draw = data.draw
        if 0 in self.model.shape:
            return
        points = draw(st.lists(st.tuples(*(st.integers(0, n - 1) for n in self.model.shape)), min_size=1,
                               max_size=6, unique=True))
        key = tuple(np.array(axis) for axis in zip(*points))
        values = self._values(draw, (len(points),))
        self.array.vindex[key] = values
        self.model[key] = values

    @rule(data=st.data())
    def assign_mask(self, data: st.DataObject) -> None:
        draw = data.draw
        mask = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).random(self.model.shape) < 0.3
        values = self._values(draw, (int(mask.sum()),))
        self.array.vindex[mask] = values
        self.model[mask] = values

    @rule(data=st.data())
    def resize(self, data: st.DataObject) -> None:
        draw = data.draw
        shape = tuple(draw(st.integers(max(0, n - 4), n + 4)) for n in self.model.shape)
        self.array.resize(shape)
        grown = np.full(shape, self.fill, dtype=self.dtype)
        common = tuple(slice(0, min(a, b)) for a, b in zip(shape, self.model.shape))
        grown[common] = self.model[common]
        self.model = grown

    @rule(data=st.data())
    def append(self, data: st.DataObject) -> None:
        draw = data.draw
        axis = draw(st.integers(0, self.model.ndim - 1))
        shape = list(self.model.shape)
        shape[axis] = draw(st.integers(1, 5))
        values = self._values(draw, tuple(shape))
        assert self.array.append(values, axis=axis) == self.model.shape[:axis] + (
            self.model.shape[axis] + shape[axis],) + self.model.shape[axis + 1:]
        self.model = np.concatenate([self.model, values], axis=axis)

    @rule()
    def reopen(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.array = zarrdask.open_array(self.path, mode="r+", cache_bytes=CACHE)

    @invariant()
    def reads_the_model(self) -> None:
        if not hasattr(self, "model"):
            return
        self.steps += 1
        assert self.array.shape == self.model.shape
        np.testing.assert_array_equal(zarrdask.open_array(self.path)[...], self.model)
        np.testing.assert_array_equal(self.array[...], self.model)
        common = tuple(slice(0, min(a, b)) for a, b in zip(self.reader.shape, self.model.shape))
        np.testing.assert_array_equal(self.reader[common], self.model[common])
        if self.steps % 4 == 0 and self.on_disk:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                np.testing.assert_array_equal(zarr.open_array(self.path, mode="r")[...], self.model)
            assert zarrdask.verify(self.path).findings == []


WriteSequences.TestCase.settings = settings(max_examples=40, stateful_step_count=12, deadline=None,
                                            derandomize=True, database=None,
                                            suppress_health_check=list(HealthCheck))
test_write_sequences = WriteSequences.TestCase
