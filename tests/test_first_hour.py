"""Issue 44, "the first hour": what a new user meets first, each as it was reported."""

from __future__ import annotations

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import UnsupportedDataTypeError


def test_auto_shards_are_whole_multiples_of_given_chunks(tmp_path):
    """shards="auto" beside chunks= picks a grid of whole chunks (it refused its own choice)."""
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=(1000, 1000, 100), dtype="f4", chunks=(10, 100, 100),
                              shards="auto")
    assert a.chunks == (10, 100, 100)
    assert all(s % c == 0 for s, c in zip(a.shards, a.chunks))
    assert a.shards == (20, 300, 100)  # 6 chunks of 400 kB: at most 4 MiB a shard
    small = zarrdask.create_array(tmp_path / "b.zarr", shape=(7, 3), dtype="i2", chunks=(2, 2), shards="auto")
    assert small.shards == (8, 4)  # the whole array in one shard of whole chunks
    small[...] = np.arange(21).reshape(7, 3)
    assert (small[...] == np.arange(21).reshape(7, 3)).all()


@pytest.mark.parametrize("dtype, widest", [("f16", "float64"), ("c32", "complex128")])
def test_a_numpy_number_without_a_zarr_type_is_named(dtype, widest):
    with pytest.raises(UnsupportedDataTypeError) as info:
        zarrdask.create_array({}, shape=(3,), dtype=dtype)
    message = str(info.value)
    assert repr(dtype) in message and "float32" in message and f"dtype={widest!r}" in message
