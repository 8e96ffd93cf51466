"""Zstd frames that lie back to back in a shard and in the output are decoded in one
libzstd call (``decompress.zstd_into`` with ``Frames`` and ``Slots``), once
``zstd_frames.exact_frames`` has found each to be exactly its span. That is a shortcut
beside decoding frame by frame (kept for the dask read's benchmark, benchmarks/README.md),
so these properties prove the two equal over generated batches: good frames of every
header shape, frames with the wrong claim, without a claim, truncated, with bytes after
them, damaged, split in two, spans that cut frames in the wrong place, gaps between
spans and between slots. The result, or the error and the frame it names, must be the
same either way.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.codecs import decompress, zstd_frames
from zarrdask.codecs.base import Frames, Slots
from zarrdask.errors import CorruptChunkError

KINDS = ["good", "good", "good", "no_claim", "wrong_claim", "truncated", "trailing", "skippable_after", "flipped",
         "two_frames", "shift_next"]


def _frame(rng: np.random.Generator, size: int, *, level: int, checksum: bool, claim: bool = True) -> bytes:
    values = rng.integers(0, rng.integers(1, 256), size, dtype=np.uint8)
    if size and rng.random() < 0.3:
        values[:] = values[0]  # (an RLE block)
    return zstandard.ZstdCompressor(level=level, write_checksum=checksum, write_content_size=claim).compress(
        values.tobytes())


SIZES = (1, 7, 100, 255, 256, 4096, 65536 + 300, 200_000)
#: frames decoded with one libzstd call each (``RUN_STREAM_BYTES`` and up), not streamed
LARGE_SIZES = (decompress.RUN_STREAM_BYTES, decompress.RUN_STREAM_BYTES + 300, 600_000)


@st.composite
def batches(draw, sizes=SIZES, most=8):
    """A buffer of frames, their spans, slot size and slots; ``shift`` moves some span
    boundaries off the frames' real boundaries."""
    size = draw(st.sampled_from(sizes))
    n = draw(st.integers(1, most))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    level = draw(st.sampled_from([-5, 1, 3]))
    checksum = draw(st.booleans())
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=n, max_size=n))
    parts, spans, pos = [], [], 0
    for kind in kinds:
        if draw(st.integers(0, 3)) == 0:  # a gap before the frame
            gap = bytes(draw(st.binary(min_size=1, max_size=6)))
            parts.append(gap)
            pos += len(gap)
        blob = _frame(rng, size, level=level, checksum=checksum, claim=kind != "no_claim")
        if kind == "wrong_claim":
            blob = _frame(rng, size + draw(st.sampled_from([-1, 1, 256])), level=level, checksum=checksum)
        elif kind == "truncated":
            blob = blob[: draw(st.integers(0, len(blob) - 1))]
        elif kind == "trailing":
            blob += bytes(draw(st.binary(min_size=1, max_size=5)))
        elif kind == "skippable_after":
            blob += (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
        elif kind == "flipped":
            b = bytearray(blob)
            b[draw(st.integers(0, len(b) - 1))] ^= 1 << draw(st.integers(0, 7))
            blob = bytes(b)
        elif kind == "two_frames" and size > 1:
            cut = draw(st.integers(1, size - 1))
            whole = rng.integers(0, 9, size, dtype=np.uint8).tobytes()
            c = zstandard.ZstdCompressor(level=level, write_checksum=checksum)
            blob = c.compress(whole[:cut]) + c.compress(whole[cut:])
        start = pos
        parts.append(blob)
        pos += len(blob)
        spans.append([start, pos])
    for k, kind in enumerate(kinds[:-1]):
        if kind == "shift_next":  # this span's end and the next one's start moved together
            move = draw(st.integers(-3, 3))
            edge = min(max(spans[k][1] + move, spans[k][0]), spans[k + 1][1])
            if spans[k][1] == spans[k + 1][0]:
                spans[k][1] = spans[k + 1][0] = edge
    slots, k = [], 0
    for _ in range(n):
        k += draw(st.sampled_from([0, 0, 0, 1]))  # neighbours, now and then a slot left out
        slots.append(k)
        k += 1
    return b"".join(parts), spans, size, slots


def _outcome(frames, outs) -> tuple:
    try:
        decompress.zstd_into(frames, outs)
    except CorruptChunkError as exc:
        return type(exc), exc.item, str(exc)
    return None


def _both(buffer: bytes, spans, size: int, slots) -> tuple[tuple, tuple, bytes, bytes]:
    """The batch decoded with its layout known (runs) and as plain lists (frame by frame)."""
    view = memoryview(buffer)
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    stacks = [bytearray(size * (max(slots) + 1)) for _ in range(2)]
    runs = _outcome(Frames(view, starts, ends), Slots(memoryview(stacks[0]), size, slots))
    memory = memoryview(stacks[1])
    each = _outcome([view[s:e] for s, e in zip(starts, ends)],
                    [memory[k * size: (k + 1) * size] for k in slots])
    return runs, each, bytes(stacks[0]), bytes(stacks[1])


@settings(max_examples=400, deadline=None)
@given(batches())
def test_runs_equal_frame_by_frame(batch):
    runs, each, stack_runs, stack_each = _both(*batch)
    assert runs == each
    if runs is None:
        assert stack_runs == stack_each


@settings(max_examples=60, deadline=None)
@given(batches(sizes=LARGE_SIZES, most=3))
def test_large_frames_in_one_call_equal_the_stream(batch):
    """A frame of ``RUN_STREAM_BYTES`` or more that claims its slot's size is decoded with
    one call (``_zstd_run``), others and refused ones streamed: the same values, or the
    same error naming the same frame, as streaming every frame."""
    one_call = _both(*batch)
    with mock.patch.object(decompress, "RUN_STREAM_BYTES", 1 << 62):
        streamed = _both(*batch)
    assert one_call == streamed


def test_a_large_frame_is_one_call(monkeypatch):
    rng = np.random.default_rng(4)
    size = decompress.RUN_STREAM_BYTES * 2
    frame = _frame(rng, size, level=1, checksum=False)
    calls = []
    real = decompress._zstd_run
    monkeypatch.setattr(decompress, "_zstd_run", lambda src, dst: calls.append(len(dst)) or real(src, dst))
    out = bytearray(size)
    decompress.zstd_into([frame], [memoryview(out)])
    assert calls == [size] and bytes(out) == zstandard.ZstdDecompressor().decompress(frame)


@settings(max_examples=200, deadline=None)
@given(batches())
def test_exact_frames_are_one_whole_frame_of_the_size(batch):
    """What ``exact_frames`` accepts, libzstd reads as one frame of ``size`` bytes that ends
    exactly at the span's end; a good frame alone in its span is accepted."""
    buffer, spans, size, _ = batch
    starts, ends = np.array(spans, dtype=np.int64).T
    exact = zstd_frames.exact_frames(np.frombuffer(buffer, dtype=np.uint8), starts, ends, size)
    for (s, e), ok in zip(spans, exact):
        frame = buffer[s:e]
        if ok:
            d = zstandard.ZstdDecompressor().decompressobj()
            try:
                decoded = d.decompress(frame)
            except zstandard.ZstdError:
                continue  # (a damaged block: libzstd refuses it, in one call as alone)
            assert len(decoded) == size and d.eof and d.unused_data == b""


def test_good_frames_are_exact():
    rng = np.random.default_rng(0)
    for size in (1, 255, 256, 65535 + 256, 65536 + 256, 1 << 20):
        for checksum in (False, True):
            frames = [_frame(rng, size, level=1, checksum=checksum) for _ in range(3)]
            ends = np.cumsum([len(f) for f in frames])
            buffer = np.frombuffer(b"".join(frames), dtype=np.uint8)
            assert zstd_frames.exact_frames(buffer, ends - [len(f) for f in frames], ends, size).all()
            assert not zstd_frames.exact_frames(buffer, ends - [len(f) for f in frames], ends, size + 1).any()


def test_a_run_is_one_call(monkeypatch):
    """Neighbouring good frames are decoded together: one run for the batch."""
    rng = np.random.default_rng(1)
    frames = [_frame(rng, 4096, level=1, checksum=False) for _ in range(6)]
    ends = list(np.cumsum([len(f) for f in frames]).tolist())
    starts = [0, *ends[:-1]]
    calls = []
    real = decompress._zstd_run
    monkeypatch.setattr(decompress, "_zstd_run", lambda src, dst: calls.append(1) or real(src, dst))
    stack = bytearray(6 * 4096)
    decompress.zstd_into(Frames(memoryview(b"".join(frames)), starts, ends), Slots(memoryview(stack), 4096, range(6)))
    assert calls == [1]
    assert bytes(stack) == b"".join(zstandard.ZstdDecompressor().decompress(f) for f in frames)


def test_the_property_catches_a_walk_that_trusts_the_spans(monkeypatch):
    """With the end check gone, spans cut in the wrong place between two good frames would
    be decoded as the frames they are, where frame by frame both spans are refused: the
    property above fails on it."""
    rng = np.random.default_rng(2)
    a, b = _frame(rng, 4096, level=1, checksum=False), _frame(rng, 4096, level=1, checksum=False)
    spans = [[0, len(a) - 2], [len(a) - 2, len(a) + len(b)]]
    runs, each, _, _ = _both(a + b, spans, 4096, [0, 1])
    assert runs == each and each is not None
    monkeypatch.setattr(decompress, "exact_frames", lambda buffer, starts, ends, size: np.ones(len(starts), bool))
    runs, each, _, _ = _both(a + b, spans, 4096, [0, 1])
    assert runs is None and each is not None


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_refused_run_names_its_frame(damage):
    rng = np.random.default_rng(3)
    frames = [_frame(rng, 4096, level=1, checksum=True) for _ in range(4)]
    bad = bytearray(frames[2])
    if damage == "flip":
        bad[-1] ^= 0xFF  # (its checksum)
    else:
        bad = bad[: len(bad) // 2]
    frames[2] = bytes(bad)
    ends = list(np.cumsum([len(f) for f in frames]).tolist())
    with pytest.raises(CorruptChunkError) as raised:
        decompress.zstd_into(Frames(memoryview(b"".join(frames)), [0, *ends[:-1]], ends),
                             Slots(memoryview(bytearray(4 * 4096)), 4096, range(4)))
    assert raised.value.item == 2
