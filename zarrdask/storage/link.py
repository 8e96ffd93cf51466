"""What a request to a remote store costs, learned from the requests themselves.

A reader that needs a shard's index and then some of its chunks pays two round trips; had
it asked for more than the index in the first request, a small shard would have come
whole, for little more than the index's own round trip (as Parquet readers fetch a file's
footer with a generous suffix). How much more is worth asking for is what one request can
carry in about the time of another round trip: the latency times what one response
streams per second. :class:`Link` measures both from the requests a store makes: the
latency as the quickest small response lately, the throughput as the best large one
lately (the least contended: requests sharing the link only make it look slower, so the
estimate errs towards asking for less). One :class:`Link` per host and process
(:func:`link_to`), so arrays opened anew on the same server share what was learned.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from urllib.parse import urlsplit

__all__ = ["LARGE_RESPONSE_BYTES", "MAX_REACH_BYTES", "MIN_REACH_BYTES", "SMALL_RESPONSE_BYTES", "Link", "link_to"]

#: responses up to this size measure the latency ...
SMALL_RESPONSE_BYTES = 64 << 10
#: ... and from this size the throughput
LARGE_RESPONSE_BYTES = 256 << 10
#: what a reader may ask for beyond what it needs, before anything is measured (the size of
#: a footer read by Parquet readers) ...
MIN_REACH_BYTES = 64 << 10
#: ... and at most, however fast and far the link
MAX_REACH_BYTES = 64 << 20
_SAMPLES = 32


class Link:
    """The latency and throughput of one host's link, from the last requests' timings."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._small: deque[float] = deque(maxlen=_SAMPLES)  # seconds of small responses
        self._large: deque[tuple[int, float]] = deque(maxlen=_SAMPLES)  # (bytes, seconds) of large ones

    def observe(self, nbytes: int, seconds: float) -> None:
        """One response of ``nbytes`` that took ``seconds`` from request to its last byte."""
        with self._lock:
            if nbytes <= SMALL_RESPONSE_BYTES:
                self._small.append(seconds)
            elif nbytes >= LARGE_RESPONSE_BYTES:
                self._large.append((nbytes, seconds))

    def reach(self) -> int:
        """The bytes one request can bring in about the time of another round trip: the
        latency times the best throughput, within ``MIN_REACH_BYTES`` and ``MAX_REACH_BYTES``
        (``MIN_REACH_BYTES`` until both are measured)."""
        with self._lock:
            if not self._small or not self._large:
                return MIN_REACH_BYTES
            latency = min(self._small)
            throughput = max(n / max(s - latency, 1e-3) for n, s in self._large)
        return int(min(max(latency * throughput, MIN_REACH_BYTES), MAX_REACH_BYTES))


_LINKS: dict[str, Link] = {}
_LINKS_LOCK = threading.Lock()


def link_to(url: str) -> Link:
    """The process's :class:`Link` to the host of ``url`` (its scheme and network location;
    for object stores the bucket)."""
    parts = urlsplit(url)
    host = f"{parts.scheme}://{parts.netloc}"
    with _LINKS_LOCK:
        link = _LINKS.get(host)
        if link is None:
            link = _LINKS[host] = Link()
        return link


def _forget_links() -> None:
    """In a forked child: learn afresh (and never wait on a lock the parent held)."""
    global _LINKS_LOCK
    _LINKS_LOCK = threading.Lock()
    _LINKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_links)
