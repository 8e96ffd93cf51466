"""Where zstd frames begin and end (RFC 8878), read from their headers for many frames at once.

libzstd decodes frames that lie back to back in one call (``ZSTD_decompress``), with
one GIL release for all of them. That equals decoding each frame alone only when every
frame is exactly the bytes its index entry gives: a frame ending early would have the
decoder read the next bytes as a frame of their own, one ending late would run into the
next entry. :func:`exact_frames` tells which frames are exactly their spans by walking
their block headers; whether the blocks themselves decode is still libzstd's to say.
Many frames are walked vectorised (one numpy step per block, and a small frame has one
block), a few one at a time in Python: the vectorised walk's few dozen numpy calls cost
more than the frames of a small shard (:data:`VECTOR_FROM` decides, here only).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["MAX_BLOCKS", "VECTOR_FROM", "exact_frames"]

_MAGIC = 0xFD2FB528
#: the largest window (log2 bytes) libzstd's streaming decoder accepts by default, so that
#: a frame decoded in one call is refused or accepted as it would be alone
_WINDOW_LOG_MAX = 27
#: frames with more blocks than this are not walked to their end (left to be decoded alone)
MAX_BLOCKS = 8
#: from this many frames on, the headers are walked vectorised (fewer: one at a time); the
#: two cost the same at about 50 frames (4 KiB each: ~100 us either way, benchmarks/README.md)
VECTOR_FROM = 48


def exact_frames(buffer: np.ndarray, starts: Sequence[int] | np.ndarray, ends: Sequence[int] | np.ndarray,
                 size: int) -> np.ndarray:
    """For each ``i``, whether ``buffer[starts[i]:ends[i]]`` (``buffer`` uint8) is exactly
    one zstd frame, with nothing before or after it, whose header claims ``size`` decoded
    bytes, needs no dictionary, has a window the streaming decoder accepts and which has
    at most :data:`MAX_BLOCKS` blocks. Reads headers only, never the blocks' contents."""
    if len(starts) < VECTOR_FROM:
        data = buffer.data.cast("B")
        return np.array([_exact_one(data, int(s), int(e), size) for s, e in zip(starts, ends)], dtype=bool)
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if len(buffer) < 9:
        return np.zeros(len(starts), dtype=bool)
    words = np.lib.stride_tricks.sliding_window_view(buffer, 8)
    top = len(words) - 1  # (the last 7 positions read from a zero-padded copy of the tail)
    tail = np.lib.stride_tricks.sliding_window_view(np.concatenate([buffer[top + 1:], np.zeros(8, np.uint8)]), 8)

    def word(pos: np.ndarray) -> np.ndarray:
        """The 8 bytes from each ``pos`` as a little-endian int64 (zero past the end)."""
        if len(pos) and pos.max() > top:
            pos = np.minimum(pos, len(buffer))
            near = pos > top
            rows = words[np.minimum(pos, top)]
            rows[near] = tail[pos[near] - top - 1]
        else:
            rows = words[pos]
        values: np.ndarray = rows.view("<i8")[:, 0]
        return values

    ok = (ends - starts >= 9) & (ends <= len(buffer))  # magic, descriptor, a content size, a block header
    head = word(starts)
    descriptor = (head >> 32) & 0xFF
    single = (descriptor >> 5) & 1  # single segment: no window descriptor, content size always present
    size_bytes = np.where(descriptor < 64, single, 1 << (descriptor >> 6))
    window_log = 10 + ((head >> 43) & 0x1F)
    ok &= ((head & 0xFFFFFFFF) == _MAGIC) & ((descriptor & 0b1011) == 0) & (size_bytes > 0)
    ok &= (single == 1) | (window_log <= _WINDOW_LOG_MAX)  # (reserved bit and dictionary id: zero)
    at = starts + 6 - single
    claimed = word(at) & ((1 << (8 * np.minimum(size_bytes, 7))) - 1 | -(size_bytes >> 3))  # (8 bytes: all)
    ok &= claimed + np.where(size_bytes == 2, 256, 0) == size
    pos = at + size_bytes
    active = ok.copy()
    for _ in range(MAX_BLOCKS):
        if not active.any():
            break
        header = word(pos) & 0xFFFFFF
        kind = (header >> 1) & 3  # raw, RLE (one byte follows), compressed, reserved
        ok &= ~active | ((pos + 3 <= ends) & (kind != 3))
        active &= ok
        pos = np.where(active, pos + 3 + np.where(kind == 1, 1, header >> 3), pos)
        active &= (header & 1) == 0  # until the last block
    ok &= ~active
    valid: np.ndarray = ok & (pos + 4 * ((descriptor >> 2) & 1) == ends)
    return valid


def _exact_one(data: memoryview, start: int, end: int, size: int) -> bool:
    """:func:`exact_frames` for one frame, walked in Python (bytes past the end read as zero)."""
    if end - start < 9 or end > len(data) or len(data) < 9:
        return False
    head = int.from_bytes(data[start: start + 6], "little")
    descriptor = head >> 32 & 0xFF
    single = descriptor >> 5 & 1
    size_bytes = single if descriptor < 64 else 1 << (descriptor >> 6)
    if head & 0xFFFFFFFF != _MAGIC or descriptor & 0b1011 or not size_bytes:
        return False
    if not single and 10 + (head >> 43 & 0x1F) > _WINDOW_LOG_MAX:
        return False
    at = start + 6 - single
    claimed = int.from_bytes(data[at: at + size_bytes], "little") + (256 if size_bytes == 2 else 0)
    if claimed != size:
        return False
    pos = at + size_bytes
    for _ in range(MAX_BLOCKS):
        if pos + 3 > end:
            return False
        header = int.from_bytes(data[pos: pos + 3], "little")
        kind = header >> 1 & 3  # raw, RLE (one byte follows), compressed, reserved
        if kind == 3:
            return False
        pos += 3 + (1 if kind == 1 else header >> 3)
        if header & 1:  # the last block
            return pos + 4 * (descriptor >> 2 & 1) == end
    return False
