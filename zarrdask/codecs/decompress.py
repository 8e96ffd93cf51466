"""Decompression held to the size the metadata implies: the one place that knows each
format's size claims.

A compressed chunk is untrusted input. Formats that carry the decoded size in a header
(zstd frames, blosc and lz4 headers, the vlen item count) would otherwise allocate
whatever the header claims before finding out the data is not there, and streaming
formats (gzip, zlib, bz2, lzma) would inflate a "bomb" to any size. Every function here
takes ``expected``, the exact decoded size when the metadata fixes it (a chunk of a
fixed-size data type), and rejects a larger claim before allocating, or stops inflating
one byte past it. ``expected=None`` (after a variable-length serializer) only avoids
trusting header claims where the format allows: zstd then streams, so memory follows
the real data.
"""

from __future__ import annotations

import bz2
import lzma
import os
import sys
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import numpy as np
import zstandard
from numcodecs import blosc as _blosc
from numcodecs import zstd as _numcodecs_zstd

from ..errors import CorruptChunkError
from .base import Frames, Slots
from .zstd_frames import exact_frames

__all__ = ["blosc", "blosc_format", "blosc_into", "for_numcodecs", "gzip", "into_for_numcodecs", "zstd", "zstd_into",
           "zstd_prefix_into"]

Data = bytes | bytearray | memoryview
#: decodes ``data[i]`` into ``outs[i]`` for every i (``zstd_into``, ``blosc_into``)
IntoBatch = Callable[[Sequence[Data], Sequence[memoryview]], None]

_local = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_local, "zstd", None)
    if d is None:
        d = _local.zstd = zstandard.ZstdDecompressor()
    return d


def _claim(name: str, claimed: int, expected: int | None) -> None:
    if expected is not None and claimed != expected:
        raise CorruptChunkError(f"{name}: the data claims to decode to {claimed} bytes, the chunk has {expected}")


def zstd(data: Data, expected: int | None) -> Data:
    """One zstd frame; its content size, when the frame has one, must be ``expected``."""
    try:
        claimed = zstandard.frame_content_size(data)
        if claimed >= 0:
            _claim("zstd", claimed, expected)
            return _zstd_decompressor().decompress(data)  # allocates the claimed (= expected) size
        return _zstd_stream(data, expected)
    except zstandard.ZstdError as exc:
        raise CorruptChunkError(f"zstd: cannot decompress ({exc})") from exc


def zstd_into(frames: Sequence[Data], outs: Sequence[memoryview]) -> None:
    """Zstd frames decoded straight into their buffers (``frames[i]`` into ``outs[i]``,
    bytes), each of which it must fill exactly: a frame claiming another size is refused
    before decoding, one without a claim is streamed and refused if anything is left over.
    Frames that lie back to back both in their buffer and in the output (a shard's
    :class:`~.base.Frames` into a stack's neighbouring :class:`~.base.Slots`) are decoded
    as one run when each is exactly one frame of its slot's size
    (``zstd_frames.exact_frames``) and slots are at most :data:`RUN_FRAME_BYTES`: a small
    run through the thread's own decompression context, a large one in one libzstd call
    that releases the GIL once for all its frames (:func:`_zstd_run`); anything a run
    cannot take, or libzstd refuses, goes frame by frame, so the result or the error is
    the same. A failure names its frame as the error's ``item``."""
    rest: Iterable[int] = range(len(frames))
    if isinstance(frames, Frames) and isinstance(outs, Slots) and len(frames) > 1 and outs.size <= RUN_FRAME_BYTES:
        rest = _zstd_runs_into(frames, outs)
    for i in rest:
        try:
            _zstd_frame_into(frames[i], outs[i])
        except zstandard.ZstdError as exc:
            raise CorruptChunkError(f"zstd: cannot decompress ({exc})").at(i) from exc
        except CorruptChunkError as exc:
            raise exc.at(i)


#: frames decoding to more bytes are decoded one at a time: the GIL hand-off after each is
#: then small beside its decode, and walking its blocks would cost more than joining saves
RUN_FRAME_BYTES = 256 << 10


def _zstd_runs_into(frames: Frames, outs: Slots) -> list[int]:
    """Decode the runs of neighbouring exact frames (at least two) with one call each;
    return the positions left to decode one at a time: frames in no run, and the frames
    of a run libzstd refused (decoded alone again, so the error names the frame)."""
    starts, ends, slots, size = frames.starts, frames.ends, outs.slots, outs.size
    n = len(starts)
    joins = [ends[i] == starts[i + 1] and slots[i + 1] == slots[i] + 1 for i in range(n - 1)]  # i joins i + 1
    if not any(joins):
        return list(range(n))
    exact = exact_frames(np.frombuffer(frames.buffer, dtype=np.uint8), starts, ends, size).tolist()
    rest: list[int] = []
    i = 0
    while i < n:
        stop = i  # the run from i ends where a join is missing
        while stop < n - 1 and joins[stop] and exact[stop] and exact[stop + 1]:
            stop += 1
        if stop == i:
            rest.append(i)
        elif not _zstd_run(frames.buffer[starts[i]: ends[stop]],
                           outs.memory[slots[i] * size: (slots[stop] + 1) * size]):
            rest.extend(range(i, stop + 1))
        i = stop + 1
    return rest


#: runs and frames decoding to fewer bytes go through the thread's own decompression
#: context: the one-call decoder makes a context per call, which costs more than decoding a
#: small run; a larger run or frame takes that one call, which releases the GIL once for all
#: its frames (the stream releases it after every frame) and decodes straight into the
#: output, where the stream passes each block through its own window (a 4 MiB frame: 3.99
#: against 4.49 ms; benchmarks/HISTORY.md, session 25)
RUN_STREAM_BYTES = 256 << 10


def _zstd_run(data: Data, out: memoryview) -> bool:
    """Frames lying back to back decoded into ``out``, which their headers claim to fill
    exactly (:func:`exact_frames` checked a run's; a single frame's claim is its own, and
    libzstd holds the decoded size to it); False when libzstd refuses them."""
    if len(out) >= RUN_STREAM_BYTES:
        try:
            _numcodecs_zstd.decompress(data, out)
        except (RuntimeError, ValueError):  # (numcodecs' errors)
            return False
        return True
    try:
        stream = _zstd_decompressor().stream_reader(data, read_across_frames=True)
        total = stream.readinto(out)
        while total < len(out) and (n := stream.readinto(out[total:])):
            total += n
        return total == len(out) and not stream.read(1)  # (the last frame's checksum read too)
    except zstandard.ZstdError:
        return False


def _zstd_frame_into(data: Data, out: memoryview) -> None:
    """One frame into ``out``, which it must fill exactly (see :func:`zstd_into`): one call
    when it claims that size and is large (:func:`_zstd_run`), else streamed (also when
    the call refuses it, so an error is the stream's)."""
    size = len(out)
    claimed = zstandard.frame_content_size(data)
    if claimed >= 0 and claimed != size:
        _claim("zstd", claimed, size)
    if claimed == size >= RUN_STREAM_BYTES and _zstd_run(data, out):
        return
    stream = _zstd_decompressor().stream_reader(data, read_across_frames=False)
    total = stream.readinto(out)
    while total < size and (n := stream.readinto(out[total:])):
        total += n
    if total != size or (claimed < 0 and stream.read(1)):
        raise CorruptChunkError(f"zstd: the data decodes to {'fewer' if total < size else 'more'} "
                                f"than the chunk's {size} bytes")


def zstd_prefix_into(data: Data, out: memoryview, size: int) -> bool:
    """The first ``len(out)`` bytes of a frame that decodes to ``size`` bytes, into ``out``:
    libzstd decodes block by block and stops after the block holding the last byte asked
    for. False (nothing decoded) for a frame with a content checksum, which only a whole
    decode can verify. The frame's size claim is checked as a whole decode checks it; what
    lies past the bytes decoded (the frame's last blocks) is not looked at."""
    try:
        frame = zstandard.get_frame_parameters(data)
        if frame.has_checksum:
            return False
        if frame.content_size != zstandard.CONTENTSIZE_UNKNOWN:
            _claim("zstd", frame.content_size, size)
        stream = _zstd_decompressor().stream_reader(data, read_across_frames=False)
        total = stream.readinto(out)
        while total < len(out) and (n := stream.readinto(out[total:])):
            total += n
    except zstandard.ZstdError as exc:
        raise CorruptChunkError(f"zstd: cannot decompress ({exc})") from exc
    if total != len(out):
        raise CorruptChunkError(f"zstd: the data decodes to fewer than the chunk's {size} bytes")
    return True


def _zstd_stream(data: Data, expected: int | None) -> bytes:
    """A frame without its content size, streamed in steps: memory follows the real
    output, and stops one step past ``expected``."""
    reader = _zstd_decompressor().stream_reader(data, read_across_frames=False)
    parts: list[bytes] = []
    total = 0
    while piece := reader.read(_STEP):
        parts.append(piece)
        total += len(piece)
        if expected is not None and total > expected:
            raise CorruptChunkError(f"zstd: the data decodes to more than the chunk's {expected} bytes")
    return b"".join(parts)


_STEP = 1 << 20


def _inflate(name: str, make: Callable[[], Any], data: Data, expected: int | None, *, multi: bool,
             unlimited: int) -> bytes:
    """Run a streaming decompressor (zlib / bz2 / lzma objects) over ``data``, asking for at
    most one byte past ``expected``; ``multi``: concatenated streams (gzip members) are
    joined; ``unlimited``: the object's "no limit" value for ``max_length``."""
    parts: list[bytes] = []
    total = 0
    rest = memoryview(data)
    while True:
        d = make()
        try:
            out = d.decompress(rest, unlimited if expected is None else min(expected + 1 - total, sys.maxsize))
        except (zlib.error, OSError, EOFError, ValueError, lzma.LZMAError) as exc:
            raise CorruptChunkError(f"{name}: cannot decompress ({exc})") from exc
        parts.append(out)
        total += len(out)
        if expected is not None and total > expected:
            raise CorruptChunkError(f"{name}: the data decodes to more than the chunk's {expected} bytes")
        if not d.eof:
            raise CorruptChunkError(f"{name}: cannot decompress (truncated or corrupt stream)")
        if not d.unused_data:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        if not multi:
            raise CorruptChunkError(f"{name}: {len(d.unused_data)} bytes of trailing data after the stream")
        rest = memoryview(d.unused_data)


def gzip(data: Data, expected: int | None) -> bytes:
    """gzip members (as numcodecs' GZip writes them), inflated to at most ``expected``.

    Tolerance ``gzip-holds-zlib``: z5 wrote zlib streams into arrays whose metadata says
    gzip (z5 #105, numcodecs #169). A chunk with a zlib header (never gzip's ``1f 8b``) is
    inflated as the one zlib stream it is, its Adler-32 checked, held to ``expected``."""
    if _is_zlib(data):
        return _inflate("gzip (a zlib stream, as z5 wrote)", zlib.decompressobj, data, expected, multi=False,
                        unlimited=0)
    return _inflate("gzip", lambda: zlib.decompressobj(31), data, expected, multi=True, unlimited=0)


def _is_zlib(data: Data) -> bool:
    """A zlib header (RFC 1950): deflate (CM 8, a window of at most 32 KiB), CMF*256+FLG % 31 == 0."""
    head = bytes(data[:2])
    return len(head) == 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and (head[0] << 8 | head[1]) % 31 == 0


def zlib_(data: Data, expected: int | None) -> bytes:
    """A zlib stream, inflated to at most ``expected``."""
    return _inflate("zlib", zlib.decompressobj, data, expected, multi=False, unlimited=0)


def bz2_(data: Data, expected: int | None) -> bytes:
    return _inflate("bz2", bz2.BZ2Decompressor, data, expected, multi=True, unlimited=-1)


def _lzma(format: int, filters: Any) -> Callable[[Data, int | None], bytes]:
    def decompress(data: Data, expected: int | None) -> bytes:
        return _inflate("lzma", lambda: lzma.LZMADecompressor(format=format, filters=filters), data, expected,
                        multi=False, unlimited=-1)

    return decompress


def blosc(data: Data, expected: int | None) -> Data:
    """A blosc buffer: its header's sizes must match the buffer and ``expected`` first; one in
    a legacy format numcodecs' c-blosc cannot decode goes to imagecodecs (:func:`_blosc_refused`)."""
    _blosc_header(data, expected)
    try:
        decoded: Data = _blosc.decompress(data)
    except (RuntimeError, ValueError) as exc:
        return _blosc_refused(data, exc)
    return decoded


_BLOSC_FORMATS = ("blosclz", "lz4", "snappy", "zlib", "zstd")  # by a header's compressor code (flags >> 5)
_ZSTD_07_MAGIC = (0xFD2FB527).to_bytes(4, "little")
#: the formats zarr 1.1.0's c-blosc 1.10 wrote that numcodecs' c-blosc cannot decode, and why;
#: imagecodecs' c-blosc (snappy, zstd's legacy decoders) decodes them (the ``legacy`` extra)
_LEGACY = {
    "snappy": "its blocks are snappy-compressed, which numcodecs' c-blosc was built without",
    "zstd 0.7": "its zstd data is in zstd 0.7's pre-1.0 format (c-blosc 1.10, as zarr 1.1.0 bundled it), which "
                "numcodecs' c-blosc cannot decode",
}


def blosc_format(data: Data) -> str:
    """What compressed a blosc buffer's blocks, as its header tells: a name of
    ``_BLOSC_FORMATS`` (``compressor code N`` for another code), ``zstd 0.7`` for a first
    block holding a pre-1.0 zstd frame, "" for a buffer stored uncompressed (memcpyed) or
    too short to tell."""
    head = bytes(data[:20])
    if len(head) < 20 or head[2] & 0x02:  # memcpyed: no compressor ran
        return ""
    code = head[2] >> 5
    name = _BLOSC_FORMATS[code] if code < len(_BLOSC_FORMATS) else f"compressor code {code}"
    start = int.from_bytes(head[16:20], "little")  # the first block; its first split: a 4-byte size, the frame
    if name == "zstd" and bytes(data[start + 4: start + 8]) == _ZSTD_07_MAGIC:
        return "zstd 0.7"
    return name


def _blosc_refused(data: Data, exc: Exception) -> Data:
    """A buffer numcodecs' c-blosc refused (its header already checked): one in a legacy
    format decoded by imagecodecs instead, else a CorruptChunkError naming the cause where
    the header shows it (a compressor this c-blosc was built without)."""
    refused = f"blosc: cannot decompress ({exc})"
    fmt = blosc_format(data)
    if fmt in _LEGACY:
        return _blosc_legacy(data, f"{refused}: {_LEGACY[fmt]}")
    if fmt and fmt not in _blosc.list_compressors():
        refused += f": its blocks are {fmt}-compressed, which this c-blosc (numcodecs') was built without"
    raise CorruptChunkError(refused) from exc


def _blosc_legacy(data: Data, refused: str) -> Data:
    """A legacy blosc buffer decoded by ``imagecodecs.blosc_decode``, imported only here (an
    optional dependency, the ``legacy`` extra), held to the size its header claims."""
    try:
        blosc_decode = _imagecodecs_blosc_decode()
    except ImportError:
        fix = "to read it, install imagecodecs: pip install 'zarrdask[legacy]'"
        raise CorruptChunkError(f"{refused}; {fix}") from None
    claimed = int.from_bytes(bytes(data[4:8]), "little")
    try:
        decoded: Data = blosc_decode(cast(bytes, data))  # (its stub leaves out memoryview, which it reads)
    except (RuntimeError, ValueError) as exc:  # (imagecodecs.BloscError is a RuntimeError)
        raise CorruptChunkError(f"{refused}; imagecodecs.blosc_decode cannot decompress it either ({exc})") from exc
    if len(decoded) != claimed:
        raise CorruptChunkError(f"{refused}; imagecodecs.blosc_decode decodes it to {len(decoded)} bytes, "
                                f"the header claims {claimed}")
    return decoded


def _imagecodecs_blosc_decode() -> Callable[[bytes], Data]:
    """``imagecodecs.blosc_decode``, its extension loaded (on first use) with RTLD_DEEPBIND
    where the platform has it, so that its calls go to imagecodecs' own c-blosc: netCDF-C's
    filter plugins (the netCDF4 wheel, on any NCZarr or HDF5 filter use) put a c-blosc
    built without snappy into the process's global scope, whose symbols it would bind to
    otherwise (a snappy chunk then fails with -5)."""
    import imagecodecs

    flags = sys.getdlopenflags()
    sys.setdlopenflags(flags | getattr(os, "RTLD_DEEPBIND", 0))
    try:
        decode: Callable[[bytes], Data] = imagecodecs.blosc_decode  # (loads its extension, lazily, here)
    finally:
        sys.setdlopenflags(flags)
    return decode


def blosc_into(buffers: Sequence[Data], outs: Sequence[memoryview]) -> None:
    """Blosc buffers decoded straight into theirs (``buffers[i]`` into ``outs[i]``), whose
    sizes their headers must claim, legacy formats as in :func:`blosc`; a failure names its
    buffer as the error's ``item``."""
    for i, (data, out) in enumerate(zip(buffers, outs)):
        try:
            _blosc_header(data, len(out))
            try:
                _blosc.decompress(data, out)
            except (RuntimeError, ValueError) as exc:
                out[:] = _blosc_refused(data, exc)
        except CorruptChunkError as exc:
            raise exc.at(i) from None


def _blosc_header(data: Data, expected: int | None) -> None:
    if len(data) < 16:
        raise CorruptChunkError(f"blosc: {len(data)} bytes cannot hold a 16-byte blosc header (truncated)")
    header = memoryview(data)[:16]  # version, versionlz, flags, typesize, then uint32 LE nbytes, blocksize, cbytes
    nbytes, cbytes = int.from_bytes(header[4:8], "little"), int.from_bytes(header[12:16], "little")
    if not 16 <= cbytes <= len(data):  # (some writers, z5py, leave bytes after the buffer)
        raise CorruptChunkError(f"blosc: the header says {cbytes} compressed bytes, the chunk has {len(data)}")
    _claim("blosc", nbytes, expected)


def lz4(data: Data, expected: int | None) -> Data:
    """numcodecs' LZ4 layout: a little-endian int32 decoded size, then an LZ4 block."""
    from numcodecs import LZ4

    if len(data) < 4:
        raise CorruptChunkError(f"lz4: {len(data)} bytes cannot hold the 4-byte size header (truncated)")
    claimed = int.from_bytes(bytes(data[:4]), "little", signed=True)
    if claimed < 0:
        raise CorruptChunkError(f"lz4: the header claims a negative size ({claimed})")
    _claim("lz4", claimed, expected)
    try:
        decoded: Data = LZ4().decode(data)
    except (RuntimeError, ValueError) as exc:
        raise CorruptChunkError(f"lz4: cannot decompress ({exc})") from exc
    return decoded


def for_numcodecs(impl: Any) -> Callable[[Data, int | None], Data] | None:
    """The bounded decompressor for a numcodecs compressor object, or None for a codec
    whose output size cannot be claimed (checksums, shuffles: the caller checks the size)."""
    codec_id: str | None = getattr(impl, "codec_id", None)
    if codec_id == "lzma":
        return _lzma(impl.format, impl.filters)
    return _BY_ID.get(codec_id or "")


def into_for_numcodecs(impl: Any) -> IntoBatch | None:
    """The batch decompressor writing into callers' buffers for a numcodecs compressor
    object, where the format allows one (zstd, blosc), else None."""
    return _INTO_BY_ID.get(getattr(impl, "codec_id", None) or "")


_BY_ID: dict[str, Callable[[Data, int | None], Data]] = {
    "zstd": zstd, "gzip": gzip, "zlib": zlib_, "bz2": bz2_, "blosc": blosc, "lz4": lz4,
}
_INTO_BY_ID: dict[str, IntoBatch] = {"zstd": zstd_into, "blosc": blosc_into}
