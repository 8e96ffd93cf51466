"""Small shards take the cheap side of each decision made by count or size, and that side
must equal the other: the zstd header walk (a few frames one at a time in Python, many
vectorised) and the run decode (a small run through the thread's own stream, a large one
in one libzstd call). Generated frames of every header shape, damaged in the ways a shard
can be, and spans cut anywhere, are checked both ways. Writes whose shards share their
inner projections read back as numpy says, and items too small for threads stay serial.
"""

from __future__ import annotations

import threading

import numpy as np
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.codecs import decompress, zstd_frames
from zarrdask.codecs.base import Frames, Slots
from zarrdask.runtime.executor import MIN_PARALLEL_ITEM_BYTES, run_all
from zarrdask.errors import CorruptChunkError

DAMAGE = ["none", "none", "none", "no_claim", "wrong_claim", "truncated", "trailing", "flipped", "dictionary",
          "window", "big_window"]


def _with_window(blob: bytes, size: int, exponent: int) -> bytes:
    """``blob``'s frame with its header rewritten: a window descriptor (log ``10 + exponent``)
    and a 4-byte content size, the blocks unchanged."""
    descriptor = blob[4]
    single, checksum = descriptor >> 5 & 1, descriptor >> 2 & 1
    head = 5 + (1 - single) + {0: single, 1: 2, 2: 4, 3: 8}[descriptor >> 6]
    return blob[:4] + bytes([2 << 6 | checksum << 2, exponent << 3]) + size.to_bytes(4, "little") + blob[head:]


def _frame(rng: np.random.Generator, size: int, damage: str, level: int, checksum: bool) -> bytes:
    values = rng.integers(0, rng.integers(1, 256), size, dtype=np.uint8)
    if size and rng.random() < 0.3:
        values[:] = values[0]  # (an RLE block)
    if damage == "wrong_claim":
        values = np.resize(values, size + 1)
    blob = zstandard.ZstdCompressor(level=level, write_checksum=checksum,
                                    write_content_size=damage != "no_claim").compress(values.tobytes())
    if damage in ("window", "big_window"):  # (log 20, or 28: past what the stream decoder accepts)
        blob = _with_window(blob, size, 10 if damage == "window" else 18)
    b = bytearray(blob)
    if damage == "truncated":
        del b[rng.integers(0, len(b)):]
    elif damage == "trailing":
        b += bytes(rng.integers(0, 256, rng.integers(1, 6), dtype=np.uint8))
    elif damage == "flipped":
        b[rng.integers(0, min(len(b), 24))] ^= 1 << int(rng.integers(0, 8))  # (mostly in the headers)
    elif damage == "dictionary":
        b[4] |= 1  # (a dictionary id flag)
    return bytes(b)


@st.composite
def shards(draw, min_frames: int = 1, max_frames: int = 60):
    """A buffer of frames back to back (now and then a gap), their spans (some cut off the
    frames' real boundaries or past the buffer), the slot size and slots."""
    size = draw(st.sampled_from([1, 7, 255, 256, 4096, 16384, 70_000]))
    n = draw(st.integers(min_frames, max_frames))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    level, checksum = draw(st.sampled_from([-5, 1, 3])), draw(st.booleans())
    parts, spans, pos = [], [], 0
    for damage in draw(st.lists(st.sampled_from(DAMAGE), min_size=n, max_size=n)):
        if rng.random() < 0.1:
            parts.append(b"\0\1")
            pos += 2
        blob = _frame(rng, size, damage, level, checksum)
        parts.append(blob)
        spans.append([pos, pos + len(blob)])
        pos += len(blob)
    for k in range(n):
        if rng.random() < 0.1:
            spans[k][1] += int(rng.integers(-3, 12))  # (past a frame's end, into the next, past the buffer)
    slots, k = [], 0
    for _ in range(n):
        k += int(rng.random() < 0.1)
        slots.append(k)
        k += 1
    return b"".join(parts), spans, size, slots


@settings(max_examples=150, deadline=None)
@given(shards(), st.integers(0, 2**32 - 1))
def test_the_walk_one_at_a_time_equals_the_vectorised_walk(shard, seed):
    """Each span's verdict is the same walked alone (one at a time) as among at least
    ``VECTOR_FROM`` spans (vectorised), spans in any order and repeated."""
    buffer, spans, size, _ = shard
    data = np.frombuffer(buffer, dtype=np.uint8)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(spans), zstd_frames.VECTOR_FROM + int(rng.integers(0, 20)))
    starts = [spans[i][0] for i in picks]
    ends = [spans[i][1] for i in picks]
    together = zstd_frames.exact_frames(data, starts, ends, size)
    alone = [bool(zstd_frames.exact_frames(data, [s], [e], size)[0]) for s, e in zip(starts, ends)]
    assert together.tolist() == alone


def _outcome(frames, outs) -> tuple | None:
    try:
        decompress.zstd_into(frames, outs)
    except CorruptChunkError as exc:
        return type(exc), exc.item, str(exc)
    return None


@settings(max_examples=150, deadline=None)
@given(shards())
def test_runs_of_any_length_equal_frame_by_frame(shard):
    """Frames decoded in runs (a stream or one call, by the run's size; walked one at a
    time or vectorised, by their count) give the bytes, or the error and the frame it
    names, that decoding each frame alone gives."""
    buffer, spans, size, slots = shard
    view = memoryview(buffer)
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    stacks = [bytearray(size * (max(slots) + 1)) for _ in range(2)]
    runs = _outcome(Frames(view, starts, ends), Slots(memoryview(stacks[0]), size, slots))
    memory = memoryview(stacks[1])
    each = _outcome([view[s:e] for s, e in zip(starts, ends)], [memory[k * size: (k + 1) * size] for k in slots])
    assert runs == each
    if runs is None:
        assert stacks[0] == stacks[1]


def test_good_runs_on_both_sides_of_the_stream_threshold():
    """Good frames of a small shard and of a large one decode to their values by runs."""
    rng = np.random.default_rng(0)
    for size, n in ((4096, 4), (decompress.RUN_STREAM_BYTES // 4, 8), (1000, zstd_frames.VECTOR_FROM + 5)):
        values = [rng.integers(0, 7, size, dtype=np.uint8).tobytes() for _ in range(n)]
        frames = [zstandard.ZstdCompressor(level=1).compress(v) for v in values]
        ends = np.cumsum([len(f) for f in frames]).tolist()
        out = bytearray(n * size)
        decompress.zstd_into(Frames(memoryview(b"".join(frames)), [0, *ends[:-1]], ends),
                             Slots(memoryview(out), size, range(n)))
        assert bytes(out) == b"".join(values)


@st.composite
def writes(draw):
    """A small sharded array's shape, shards, inner chunks, and a few slice writes."""
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.integers(1, 20)) for _ in range(ndim))
    inner = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shards = tuple(c * draw(st.integers(1, 3)) for c in inner)
    selections = []
    for _ in range(draw(st.integers(1, 4))):
        sel = []
        for n in shape:
            start = draw(st.integers(0, n - 1))
            sel.append(slice(start, draw(st.integers(start + 1, n)), draw(st.sampled_from([1, 1, 2, 3]))))
        selections.append(tuple(sel))
    return shape, inner, shards, selections


@settings(max_examples=60, deadline=None)
@given(writes(), st.integers(0, 2**32 - 1))
def test_sharded_writes_match_numpy(tmp_path_factory, case, seed):
    """Whole and partly covered shards written in any pattern (parts selected alike share
    their inner projections) read back as numpy says."""
    shape, inner, shards, selections = case
    rng = np.random.default_rng(seed)
    path = tmp_path_factory.mktemp("w") / "a.zarr"
    a = zarrdask.create_array(str(path), shape=shape, dtype="int32", chunks=inner, shards=shards, fill_value=-1)
    model = np.full(shape, -1, dtype=np.int32)
    for sel in selections:
        values = rng.integers(-2, 1000, model[sel].shape, dtype=np.int32)
        a[sel] = values
        model[sel] = values
    np.testing.assert_array_equal(zarrdask.open_array(str(path))[...], model)


def test_small_items_run_on_the_calling_thread():
    """Items too small to pay for a hand-off stay on the caller, whatever the thread count;
    the results come back in order either way."""
    seen: set[int] = set()

    def work(i: int) -> int:
        seen.add(threading.get_ident())
        return i * i

    items = range(200)
    assert run_all(work, items, 2, item_bytes=MIN_PARALLEL_ITEM_BYTES - 1) == [i * i for i in items]
    assert seen == {threading.get_ident()}
    assert run_all(work, items, 2, item_bytes=MIN_PARALLEL_ITEM_BYTES) == [i * i for i in items]
