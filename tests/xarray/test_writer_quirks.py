"""Writers' quirks read as named tolerances that cannot return wrong data.

``gzip-holds-zlib``: z5 wrote zlib streams (RFC 1950: a ``78 xx`` header, an Adler-32
trailer) into arrays whose metadata says gzip (z5 #105, numcodecs #169). They read exact;
a chunk that is neither format, or fails its check, is a CorruptChunkError naming its key.

``v2-fill-as-string``: n5-zarr wrote a numeric ``fill_value`` as a JSON string of the number
(``"0"``; n5-zarr #39): a string holding a JSON number's text reads as that number; any other
string stays refused. z5py's blosc chunks carry 16 bytes after the blosc frame
(zarr_implementations #34): the frame's header says where it ends, and the rest is ignored.
"""

from __future__ import annotations

import gzip
import json
import zlib

import numpy as np
import pytest
from numcodecs import Blosc

import zarrdask
from zarrdask.errors import CorruptChunkError, MetadataError

SHAPE, CHUNKS = (7, 10), (3, 4)  # partial edge chunks along both axes


def z5_style(path, *, level: int = 6, zarr_format: int = 2) -> np.ndarray:
    """An array whose metadata says gzip, every chunk a zlib stream of its C-order bytes
    (edge chunks stored whole, as zarr v2 stores them); returns its values."""
    values = (np.arange(np.prod(SHAPE), dtype="<i4").reshape(SHAPE) * 7 - 100)
    path.mkdir()
    if zarr_format == 2:
        doc = {"zarr_format": 2, "shape": SHAPE, "chunks": CHUNKS, "dtype": "<i4", "order": "C",
               "compressor": {"id": "gzip", "level": level}, "fill_value": 0, "filters": None}
        (path / ".zarray").write_text(json.dumps(doc))
    else:
        zarrdask.create_array(path, shape=SHAPE, chunks=CHUNKS, dtype="<i4",
                              compressors=[{"name": "gzip", "configuration": {"level": level}}])
    sep = "." if zarr_format == 2 else "/"
    for i in range(-(-SHAPE[0] // CHUNKS[0])):
        for j in range(-(-SHAPE[1] // CHUNKS[1])):
            chunk = np.zeros(CHUNKS, dtype="<i4")
            part = values[i * 3: i * 3 + 3, j * 4: j * 4 + 4]
            chunk[: part.shape[0], : part.shape[1]] = part
            name = f"{i}{sep}{j}" if zarr_format == 2 else f"c/{i}/{j}"
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_bytes(zlib.compress(chunk.tobytes(), level))
    return values


@pytest.mark.parametrize("level", [0, 1, 6, 9])  # headers 78 01, 78 01, 78 9c, 78 da
def test_zlib_streams_in_a_gzip_array_read_exact(tmp_path, level):
    want = z5_style(tmp_path / "a", level=level)
    assert zarrdask.open_array(tmp_path / "a")[...].tolist() == want.tolist()
    assert zarrdask.open_array(tmp_path / "a")[2:5, 3:9].tolist() == want[2:5, 3:9].tolist()
    assert zarrdask.from_zarr(str(tmp_path / "a")).compute().tolist() == want.tolist()


def test_the_v3_gzip_codec_tolerates_them_too(tmp_path):
    want = z5_style(tmp_path / "a", level=5, zarr_format=3)
    assert zarrdask.open_array(tmp_path / "a")[...].tolist() == want.tolist()


def test_gzip_and_zlib_chunks_side_by_side_and_writes_still_gzip(tmp_path):
    want = z5_style(tmp_path / "a")
    a = zarrdask.open_array(tmp_path / "a", mode="r+")
    a[0:3, 0:4] = want[0:3, 0:4] + 1  # rewritten by zarrdask: gzip
    assert (tmp_path / "a" / "0.0").read_bytes()[:2] == b"\x1f\x8b"
    assert (tmp_path / "a" / "0.1").read_bytes()[:1] == b"\x78"
    want[0:3, 0:4] += 1
    assert zarrdask.open_array(tmp_path / "a")[...].tolist() == want.tolist()


def _corrupt(tmp_path, key: str, blob: bytes) -> None:
    z5_style(tmp_path / "a")
    (tmp_path / "a" / key).write_bytes(blob)


def test_a_chunk_neither_gzip_nor_zlib_is_corrupt_by_key(tmp_path):
    _corrupt(tmp_path, "1.2", b"\x78\x00" + bytes(40))  # 0x7800 % 31 != 0: no zlib header
    with pytest.raises(CorruptChunkError, match=r"1\.2.*gzip: cannot decompress"):
        zarrdask.open_array(tmp_path / "a")[...]
    with pytest.raises(CorruptChunkError, match=r"1\.2"):
        zarrdask.from_zarr(str(tmp_path / "a")).compute()


def test_a_zlib_stream_failing_its_adler32_is_corrupt_by_key(tmp_path):
    blob = bytearray(zlib.compress(np.arange(12, dtype="<i4").tobytes()))
    blob[-1] ^= 1  # the Adler-32 trailer
    _corrupt(tmp_path, "2.0", bytes(blob))
    with pytest.raises(CorruptChunkError, match=r"2\.0.*zlib stream.*incorrect data check"):
        zarrdask.open_array(tmp_path / "a")[...]


@pytest.mark.parametrize("blob", [zlib.compress(bytes(47)), zlib.compress(bytes(49)),
                                  zlib.compress(bytes(48)) + b"\x00", zlib.compress(bytes(48))[:-3]],
                         ids=["short", "long", "trailing", "truncated"])
def test_a_zlib_stream_of_another_size_is_corrupt_by_key(tmp_path, blob):
    _corrupt(tmp_path, "0.1", blob)
    with pytest.raises(CorruptChunkError, match=r"chunk 0\.1: .*(zlib stream|expected 48)"):
        zarrdask.open_array(tmp_path / "a")[...]


def test_gzip_members_still_read_and_are_never_taken_for_zlib(tmp_path):
    """gzip's magic ``1f 8b`` is no zlib header (CM 15), so gzip chunks keep their own path."""
    want = z5_style(tmp_path / "a")
    chunk = np.zeros(CHUNKS, dtype="<i4")
    chunk[:, :] = want[3:6, 4:8]
    (tmp_path / "a" / "1.1").write_bytes(gzip.compress(chunk.tobytes()))
    assert zarrdask.open_array(tmp_path / "a")[...].tolist() == want.tolist()


def _v2(path, dtype: str, fill, compressor=None) -> None:
    path.mkdir()
    doc = {"zarr_format": 2, "shape": [5], "chunks": [2], "dtype": dtype, "order": "C", "compressor": compressor,
           "fill_value": fill, "filters": None}
    (path / ".zarray").write_text(json.dumps(doc))


@pytest.mark.parametrize("dtype, fill, want", [
    ("|u1", "0", 0), ("<i2", "-7", -7), (">u8", "18446744073709551615", 2 ** 64 - 1), ("<f4", "0.0", 0.0),
    ("<f8", "-1.5E3", -1500.0), ("<f8", "NaN", None),
])
def test_a_numeric_fill_value_written_as_a_string_reads_as_the_number(tmp_path, dtype, fill, want):
    _v2(tmp_path / "a", dtype, fill)
    got = zarrdask.open_array(tmp_path / "a")[...]
    assert np.isnan(got).all() if want is None else got.tolist() == [want] * 5


@pytest.mark.parametrize("dtype, fill", [("|u1", "1.5"), ("|u1", "256"), ("<i4", " 1"), ("<i4", "0x01"),
                                         ("<f8", "1,5"), ("<f8", "+1"), ("<i4", "01")])
def test_other_strings_stay_refused(tmp_path, dtype, fill):
    _v2(tmp_path / "a", dtype, fill)
    with pytest.raises(MetadataError, match="fill_value"):
        zarrdask.open_array(tmp_path / "a")


def test_z5py_blosc_chunks_with_bytes_after_the_frame_read_exact(tmp_path):
    codec = Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)
    _v2(tmp_path / "a", "<i4", 0, codec.get_config())
    want = np.arange(5, dtype="<i4") * 1000 - 3
    for i in range(3):
        chunk = np.zeros(2, dtype="<i4")
        chunk[: len(want[i * 2: i * 2 + 2])] = want[i * 2: i * 2 + 2]
        (tmp_path / "a" / str(i)).write_bytes(codec.encode(chunk) + bytes(16))  # as z5py: BLOSC_MAX_OVERHEAD
    assert zarrdask.open_array(tmp_path / "a")[...].tolist() == want.tolist()
    assert zarrdask.from_zarr(str(tmp_path / "a")).compute().tolist() == want.tolist()
    (tmp_path / "a" / "1").write_bytes(codec.encode(np.zeros(2, dtype="<i4"))[:-1])  # short of its frame
    with pytest.raises(CorruptChunkError, match=r"chunk 1: .*blosc"):
        zarrdask.open_array(tmp_path / "a")[...]
