"""What each codec says about itself: whether its bytes carry a checksum, its numcodecs twin."""

from __future__ import annotations

import numcodecs
import numpy as np

import zarrdask
from zarrdask.storage.memory import MemoryStore


def test_a_v2_lzma_compressor_is_checksummed() -> None:
    """numcodecs' LZMA config has its own ``filters`` (None here): they are not v2 filters."""
    a = zarrdask.create_array(MemoryStore(), shape=(10,), dtype="int16", chunks=(5,), zarr_format=2,
                              compressors=[numcodecs.LZMA()])
    a[...] = np.arange(10)
    assert a.units.carries_checksum
    raw = zarrdask.create_array(MemoryStore(), shape=(10,), dtype="int16", chunks=(5,), zarr_format=2,
                                compressors=[numcodecs.LZMA(format=3, filters=[{"id": 3, "dist": 2}, {"id": 33}])])
    assert not raw.units.carries_checksum
