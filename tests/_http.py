"""A loopback HTTP server for tests and benchmarks: latency, injected failures, request counts.

``LoopbackServer(root=DIR)`` serves the files below DIR (GET with ``Range``, also
suffix ranges; HEAD); ``LoopbackServer(upstream=URL)`` forwards every request to
another server on 127.0.0.1 (the moto S3 server: then it is an S3 endpoint). Either way
it can add ``delay`` seconds to every request and fail a ``fail_fraction`` of them
(chosen by a seeded generator): HTTP 503 ``SlowDown``, 500 ``InternalError``, or the
connection closed without an answer, in turn; files named in ``forbidden`` answer 403.
A directory answers 404, as on a server without directory indexes, unless ``listing``:
then an HTML page of links to its entries (directories with a trailing ``/``), as
Python's ``http.server`` and nginx's ``autoindex`` give and fsspec's HTTP ``ls`` reads.
``absent_status=403`` answers a key that does not exist with 403 (S3's ``AccessDenied``
when forwarding), as S3 does for a reader that may not list the bucket.
It listens on 127.0.0.1 only, serves
until ``stop()``, counts the requests it answered by method and records the most it
had in hand at once (``peak``).

``python tests/_http.py ROOT DELAY`` serves ROOT from a process of its own (benchmarks:
the server then takes no interpreter time from the client measured), printing its URL;
``GET /_loopback/counts`` answers the counts as JSON and resets them.
"""

from __future__ import annotations

import collections
import http.client
import json
import os
import sys
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit

__all__ = ["LoopbackServer"]

_ERRORS = (
    (503, b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"),
    (500, b"<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>"),
    (None, b""),  # the connection is closed without a response
)


class _Server(ThreadingHTTPServer):
    """A listen backlog as deep as a real server's: with the standard library's 5, a client
    opening a few dozen connections at once has SYNs dropped, and each waits out TCP's
    one-second retransmission timeout (a read stalled for ~1 s)."""

    request_queue_size = 1024


class LoopbackServer:
    """See the module docstring. ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self, *, root: str | None = None, upstream: str | None = None, delay: float = 0.0,
                 fail_fraction: float = 0.0, seed: int = 0, forbidden: frozenset[str] | set[str] = frozenset(),
                 listing: bool = False, absent_status: int = 404) -> None:
        if (root is None) == (upstream is None):
            raise ValueError("give root= or upstream=")
        self.root, self.delay, self.fail_fraction, self.forbidden = root, delay, fail_fraction, set(forbidden)
        self.listing = listing
        self.absent_status = absent_status
        self.upstream = urlsplit(upstream) if upstream else None
        self.counts: collections.Counter[str] = collections.Counter()
        self.failed = 0
        self.peak = 0
        self._in_hand = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # a response's headers and body go out in separate writes: with Nagle's algorithm
            # the body waits for the client's delayed ACK of the headers (~40 ms on Linux)
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                server._handle(self)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _any

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()
            self.failed = 0
            self.peak = 0

    # -- one request ---------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        if h.path == "/_loopback/counts":
            with self._lock:
                counts = dict(self.counts)
            self.reset()
            self._reply(h, 200, {"Content-Type": "application/json"}, json.dumps(counts).encode())
            return
        with self._lock:
            self._in_hand += 1
            self.peak = max(self.peak, self._in_hand)
        try:
            self._answer(h, body)
        finally:
            with self._lock:
                self._in_hand -= 1

    def _answer(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            fail = self.fail_fraction and self._random.random() < self.fail_fraction
            error = _ERRORS[self.failed % len(_ERRORS)] if fail else None
            self.failed += bool(fail)
            if not fail:
                self.counts[h.command] += 1
        if error is not None:
            status, text = error
            if status is None:
                h.close_connection = True
                h.connection.shutdown(2)
                return
            self._reply(h, status, {"Content-Type": "application/xml"}, text)
        elif self.upstream is not None:
            self._forward(h, body)
        else:
            self._serve_file(h)

    def _reply(self, h: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
        h.send_response(status)
        for name, value in headers.items():
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    def _forward(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        try:
            headers = {k: v for k, v in h.headers.items() if k.lower() not in ("connection", "keep-alive")}
            conn.request(h.command, h.path, body=body if body or h.command in ("PUT", "POST") else None,
                         headers=headers)
            response = conn.getresponse()
            data = response.read()
            skip = ("content-length", "transfer-encoding", "connection", "keep-alive", "server", "date")
            if response.status == 404 and self.absent_status != 404 and h.command in ("GET", "HEAD"):
                self._reply(h, self.absent_status, {"Content-Type": "application/xml"},
                            b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>")
                return
            self._reply(h, response.status, {k: v for k, v in response.getheaders() if k.lower() not in skip}, data)
        finally:
            conn.close()

    def _serve_file(self, h: BaseHTTPRequestHandler) -> None:
        name = unquote(urlsplit(h.path).path).lstrip("/")
        path = os.path.join(self.root, name)
        if name in self.forbidden:
            self._reply(h, 403, {}, b"forbidden")
            return
        if h.command not in ("GET", "HEAD"):
            self._reply(h, 405, {}, b"")
            return
        if self.listing and os.path.isdir(path):
            self._reply(h, 200, {"Content-Type": "text/html"}, _index(path))
            return
        if not os.path.isfile(path):
            self._reply(h, self.absent_status, {}, b"not found")
            return
        size = os.path.getsize(path)
        ranged = h.headers.get("Range")
        start, stop = 0, size
        if ranged:
            first, _, last = ranged.removeprefix("bytes=").partition("-")
            if first == "":
                start = max(0, size - int(last))
            else:
                start = int(first)
                stop = min(size, int(last) + 1) if last else size
            if start >= size:
                self._reply(h, 416, {"Content-Range": f"bytes */{size}"}, b"")
                return
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(stop - start) if h.command == "GET" else b""
        headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        if ranged:
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
        if h.command == "HEAD":
            h.send_response(200)
            h.send_header("Content-Length", str(size))
            h.send_header("Accept-Ranges", "bytes")
            h.end_headers()
            return
        self._reply(h, 206 if ranged else 200, headers, data)


def _index(directory: str) -> bytes:
    """A directory index page: one relative link per entry, directories ending in ``/``."""
    names = sorted(n + "/" if os.path.isdir(os.path.join(directory, n)) else n for n in os.listdir(directory))
    links = "".join(f'<li><a href="{quote(n)}">{n}</a></li>' for n in names)
    return f"<!DOCTYPE html><html><body><ul>{links}</ul></body></html>".encode()


if __name__ == "__main__":
    server = LoopbackServer(root=sys.argv[1], delay=float(sys.argv[2]))
    print(server.url, flush=True)
    sys.stdin.read()  # serve until the parent closes our stdin
    server.stop()
