"""Merge neighbouring byte ranges of one key into fewer requests, and split the results back.

A sharded array stores many inner chunks in one object; reading a selection
touches several of them. Fetching each inner chunk separately costs one request
(and, on object stores, one round trip) each, so nearby ranges are merged into
one request when the gap between them is at most ``max_gap`` bytes, as long as
the merged request stays within ``max_size`` bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Buffer

__all__ = ["coalesce_ranges", "split_coalesced"]

Range = tuple[int, int]
Merged = tuple[int, int, list[int]]


def coalesce_ranges(ranges: Sequence[Range], max_gap: int, max_size: int | None = None) -> list[Merged]:
    """Group ``(start, end)`` ranges into merged ``(start, end, [input indices])`` requests.

    Every input index appears in exactly one group, whose span covers it. Ranges
    that overlap or are separated by at most ``max_gap`` bytes are merged unless
    the merged span would exceed ``max_size`` (a single range longer than
    ``max_size`` still forms its own group). Groups are ordered by start.
    """
    order = sorted(range(len(ranges)), key=ranges.__getitem__)
    merged: list[Merged] = []
    for i in order:
        start, end = ranges[i]
        if merged:
            m_start, m_end, members = merged[-1]
            new_end = max(m_end, end)
            if start <= m_end + max_gap and (max_size is None or new_end - m_start <= max_size):
                merged[-1] = (m_start, new_end, members)
                members.append(i)
                continue
        merged.append((start, end, [i]))
    return merged


def split_coalesced(
    ranges: Sequence[Range], merged: Sequence[Merged], fetched: Sequence[Buffer | None]
) -> list[memoryview | None]:
    """The bytes of each original range, as zero-copy views into the merged fetches.

    ``fetched[j]`` is the result of reading ``merged[j]``; a short result (the
    value ended early) gives short views, ``None`` (missing key) gives ``None``.
    """
    out: list[memoryview | None] = [None] * len(ranges)
    for (m_start, _, members), data in zip(merged, fetched):
        if data is None:
            continue
        view = memoryview(data)
        for i in members:
            start, end = ranges[i]
            out[i] = view[start - m_start : end - m_start]
    return out
