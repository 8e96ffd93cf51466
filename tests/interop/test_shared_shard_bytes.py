"""Shards whose index entries share bytes read as zarr-python and TensorStore read them.

The sharding spec fixes no order for a shard's inner chunks and allows unused space
between them; it does not forbid two entries pointing at the same bytes (a writer that
stores identical chunks once) or at overlapping bytes (any span that decodes is a chunk).
Generated cases: zarrdask writes a sharded array, then the index of one shard is rewritten
(valid checksum) so that some entries repeat others' spans, or, for chunks stored raw,
start at any byte of the data region. Both peers read the array; zarrdask must read the
same whole, through a selection and through Dask, ``verify`` must find nothing wrong,
and a partial write into that shard must keep every other cell as the peers read it.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
import warnings
from pathlib import Path

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
CHUNKS, SHARD, SHAPE = (2, 3), (4, 6), (8, 9)  # 2 x 2 inner chunks per shard, edge shards clipped
N_INNER = 4
INDEX_BYTES = 16 * N_INNER + 4  # (offset, nbytes) per inner chunk + crc32c, at the end


def _read_peers(path: str) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zp = zarr.open_array(path, mode="r")[...]
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "open": True}).result()
    return zp, np.asarray(t.read().result())


def _rewrite_index(shard: Path, raw_chunks: bool, draw) -> None:
    """Entries repeat other entries' spans; raw chunks may also start at any byte of the data region."""
    raw = shard.read_bytes()
    data = len(raw) - INDEX_BYTES
    table = np.frombuffer(raw[data:data + 16 * N_INNER], "<u8").reshape(N_INNER, 2).copy()
    present = [i for i in range(N_INNER) if int(table[i, 0]) != 2**64 - 1]
    nbytes = {int(table[i, 1]) for i in present}
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from(present))
        if raw_chunks and draw(st.booleans()):  # (all the same size: any start fits)
            (size,) = nbytes
            table[i, 0] = draw(st.integers(0, data - size))
        else:
            table[i] = table[draw(st.sampled_from(present))]
    index = table.astype("<u8").tobytes()
    shard.write_bytes(raw[:data] + index + struct.pack("<I", crc32c.crc32c(index)))


@SETTINGS
@given(compressed=st.booleans(), dtype=st.sampled_from(["uint8", "int16", "float32"]), data=st.data())
def test_shared_bytes_read_as_the_peers_read_them(compressed: bool, dtype: str, data: st.DataObject) -> None:
    root = Path(tempfile.mkdtemp(prefix="zarrdask-shared-"))
    try:
        path = str(root / "a.zarr")
        values = np.arange(np.prod(SHAPE), dtype=dtype).reshape(SHAPE)
        a = zarrdask.create_array(path, shape=SHAPE, dtype=dtype, chunks=CHUNKS, shards=SHARD,
                                  compressors="zstd" if compressed else None, fill_value=0)
        a[...] = values
        a[0:2, 3:6] = 0  # (one inner chunk of shard c/0/0 absent)
        shard = root / "a.zarr" / "c" / "0" / "0"
        _rewrite_index(shard, not compressed, data.draw)
        zp, tensorstore = _read_peers(path)
        np.testing.assert_array_equal(zp, tensorstore)

        fresh = zarrdask.open_array(path, mode="r+")
        np.testing.assert_array_equal(fresh[...], zp)
        rows, cols = data.draw(st.integers(0, 7)), data.draw(st.integers(0, 8))
        np.testing.assert_array_equal(fresh[rows:, :cols], zp[rows:, :cols])
        np.testing.assert_array_equal(zarrdask.from_zarr(path).compute(), zp)
        assert zarrdask.verify(path).findings == []

        fresh[1, 1] = 99  # a partial write of the shard: its other cells stay as they were read
        zp[1, 1] = 99
        np.testing.assert_array_equal(_read_peers(path)[1], zp)
        np.testing.assert_array_equal(zarrdask.open_array(path)[...], zp)
    finally:
        shutil.rmtree(root, ignore_errors=True)
