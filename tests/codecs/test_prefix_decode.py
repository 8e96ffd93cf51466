"""Chunks decoded only up to the values a read wants (zstd stops after the block holding
the last byte asked for): generated arrays and windows read equal to numpy's, sharded and
not, with and without zstd's content checksum (which sends the chunk to a whole decode);
a corrupt block inside the prefix still raises."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.codecs import decompress
from zarrdask.errors import CorruptChunkError
from zarrdask.indexing import c_order_stop
from zarrdask.storage import MemoryStore

# chunks of 64 x 2048 float32 (512 KiB): four zstd blocks at least, so a prefix can skip some
CHUNK = (64, 2048)


def _values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(size=shape), axis=-1).astype("f4")  # compressible, not constant


def _array(values: np.ndarray, sharded: bool, checksum: bool, store: MemoryStore | None = None) -> zarrdask.Array:
    zstd = {"name": "zstd", "configuration": {"level": 1, "checksum": checksum}}
    a = zarrdask.create_array(MemoryStore() if store is None else store, shape=values.shape, dtype="f4", chunks=CHUNK,
                              shards=(2 * CHUNK[0], CHUNK[1]) if sharded else None, compressors=[zstd])
    a[...] = values
    return zarrdask.open_array(a.store)


@pytest.fixture
def prefixes(monkeypatch):
    """Counts the chunks decoded as prefixes (the path under test ran)."""
    calls = []
    real = decompress.zstd_prefix_into

    def spy(data, out, size):
        done = real(data, out, size)
        calls.append(done)
        return done

    monkeypatch.setattr(decompress, "zstd_prefix_into", spy)
    return calls


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(sharded=st.booleans(), checksum=st.booleans(), seed=st.integers(0, 3),
       r0=st.integers(0, 255), rows=st.integers(1, 40), c0=st.integers(0, 2047), cols=st.integers(1, 300),
       step=st.integers(1, 3))
def test_windows_read_as_numpy(prefixes, sharded, checksum, seed, r0, rows, c0, cols, step):
    prefixes.clear()
    values = _values((256, 2048), seed)
    a = _array(values, sharded, checksum)
    sel = (slice(r0, r0 + rows, step), slice(c0, c0 + cols))
    np.testing.assert_array_equal(a[sel], values[sel])
    if checksum:
        assert not any(prefixes)  # a checksum is verified by a whole decode


def test_a_window_in_the_first_rows_decodes_a_prefix(prefixes):
    values = _values((128, 2048), 0)
    for sharded in (False, True):
        prefixes.clear()
        a = _array(values, sharded, checksum=False)
        np.testing.assert_array_equal(a[1:3, 100:200], values[1:3, 100:200])
        assert prefixes and all(prefixes)


def test_a_corrupt_block_inside_the_prefix_raises():
    store = MemoryStore()
    _array(_values((64, 2048), 1), sharded=False, checksum=False, store=store)
    raw = bytearray(store.get("c/0/0"))
    raw[40] ^= 0xFF  # inside the frame's first block
    store.set("c/0/0", bytes(raw))
    with pytest.raises(CorruptChunkError, match="c/0/0"):
        zarrdask.open_array(store)[0:2, 0:10]


def test_a_frame_claiming_another_size_is_refused_before_decoding():
    import zstandard

    store = MemoryStore()
    values = _values((64, 2048), 2)
    _array(values, sharded=False, checksum=False, store=store)
    store.set("c/0/0", zstandard.ZstdCompressor(level=1, write_content_size=True).compress(values[:32].tobytes()))
    with pytest.raises(CorruptChunkError, match="c/0/0"):
        zarrdask.open_array(store)[0:2, 0:10]


@pytest.mark.parametrize("index, shape, stop", [
    ((slice(0, 1, 1), slice(0, 1, 1)), (4, 5), 1),
    ((slice(1, 3, 1), slice(2, 4, 1)), (4, 5), 2 * 5 + 3 + 1),
    ((slice(0, 4, 2), slice(0, 5, 1)), (4, 5), 2 * 5 + 4 + 1),
    ((slice(0, 0, 1), slice(0, 5, 1)), (4, 5), 0),
    (..., (4, 5), None),
    ((np.array([1, 2]), slice(0, 5, 1)), (4, 5), None),
])
def test_c_order_stop(index, shape, stop):
    assert c_order_stop(index, shape) == stop


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("checksum", [False, True])
def test_v2_zstd_chunks_written_by_zarr_python(tmp_path, prefixes, order, checksum):
    """v2's numcodecs ``Zstd`` compressor decodes a prefix as the v3 codec does (C order;
    F order is a transpose: whole chunks), written by zarr-python."""
    zarr = pytest.importorskip("zarr", reason="zarr-python writes the v2 array (the test extra installs it)")
    numcodecs = pytest.importorskip("numcodecs")
    values = _values((128, 2048), 3)
    path = str(tmp_path / "v2.zarr")
    z = zarr.create_array(path, shape=values.shape, chunks=CHUNK, dtype="f4", zarr_format=2, order=order,
                          compressors=numcodecs.Zstd(level=1, checksum=checksum))
    z[...] = values
    a = zarrdask.open_array(path)
    for sel in [(slice(0, 2), slice(5, 100)), (slice(70, 71), slice(0, 2048)), (slice(1, 64, 7), slice(3, 9))]:
        np.testing.assert_array_equal(a[sel], values[sel])
    assert any(prefixes) == (order == "C" and not checksum)
