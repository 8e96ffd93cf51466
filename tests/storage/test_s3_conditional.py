"""Read-modify-writes on S3 (moto) made safe by conditional requests (``Store.update``).

A commit is a PUT with ``If-Match`` (or ``If-None-Match: *`` for a key that was absent) or
a DeleteObject with ``If-Match``; S3 refuses it when another writer changed the key since
it was read. Processes bumping one counter, and independent ``to_zarr`` calls writing
their own rows of one shard, all started together, must lose nothing.

moto checks a request's condition and then stores in two steps, each request on a thread
of its own, so two conditional PUTs could interleave there (S3 does both at once). The
server here answers one request at a time, as S3 orders the writes of one key, and
counts them. ``ZARRDASK_ACCEPTANCE_TRIALS=20`` runs that many trials of each race.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import zarrdask
from zarrdask.storage import FsspecStore, open_store

from _s3 import BUCKET, s3_storage_options

pytestmark = pytest.mark.s3

TRIALS = int(os.environ.get("ZARRDASK_ACCEPTANCE_TRIALS", "0")) or None
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["zarrdask", "numpy", "dask.array", "s3fs"])

SHAPE, CHUNKS = (100, 4000), (10, 100)  # one shard of 3.2 MB


class _OneAtATime:
    """moto's WSGI app answering one request at a time, counting them by method and status
    (``"PUT 412"``: a conditional write refused)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.counts: collections.Counter[str] = collections.Counter()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        def respond(status: str, *args: Any) -> Any:
            self.counts[f"{environ['REQUEST_METHOD']} {status.split()[0]}"] += 1
            return start_response(status, *args)

        with self.lock:
            return list(self.app(environ, respond))


@pytest.fixture(scope="module")
def server(s3_endpoint: str) -> Iterator[tuple[str, _OneAtATime]]:  # (conftest: credentials, the bucket)
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = _OneAtATime(DomainDispatcherApplication(create_backend_app))
    httpd = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:  # moto's backend is the process's: the bucket s3_endpoint made is here too
        yield f"http://127.0.0.1:{httpd.server_port}", app
    finally:
        httpd.shutdown()
        thread.join()


@pytest.fixture
def url() -> str:
    return f"s3://{BUCKET}/{uuid.uuid4().hex}"


def _other_client(endpoint: str, url: str) -> Any:
    """A store over its own s3fs client: another writer."""
    import s3fs

    fs = s3fs.S3FileSystem(**s3_storage_options(endpoint), skip_instance_cache=True)
    return FsspecStore(fs, path=url.removeprefix("s3://"))


def test_commit_refused_where_another_writer_changed_or_created_the_key(server, url) -> None:
    endpoint, _ = server
    store = open_store(url, mode="w", storage_options=s3_storage_options(endpoint))
    other = _other_client(endpoint, url)
    store.set_many({"k": b"1", "gone": b"g", "kept": b"k"})
    with store.update(["k", "new", "gone", "kept", "same"]) as update:
        assert update.values == {"k": b"1", "new": None, "gone": b"g", "kept": b"k", "same": None}
        other.set_many({"k": b"2", "new": b"theirs", "kept": b"k2"})  # changed, created, changed
        other.delete("gone")  # deleted since it was read
        changed = update.commit({"k": b"3", "new": b"ours", "gone": b"g2", "kept": None, "same": b"s"})
    assert changed == {"k", "new", "gone", "kept"}
    assert store.get_many(["k", "new", "gone", "kept", "same"]) == [b"2", b"theirs", None, b"k2", b"s"]
    with store.update(["k", "same"]) as update:  # unchanged: stored and deleted
        assert update.commit({"k": b"4", "same": None}) == set()
    assert store.get_many(["k", "same"]) == [b"4", None]


def _bump(url: str, options: dict[str, Any], bumps: int, barrier: Any) -> None:
    store = open_store(url, mode="a", storage_options=options)
    barrier.wait()
    for _ in range(bumps):
        while True:
            with store.update(["count"]) as update:
                value = int(update.values["count"] or b"0")
                if not update.commit({"count": str(value + 1).encode()}):
                    break


def _start_together(target: Any, argument_lists: list[tuple]) -> None:
    barrier = _CONTEXT.Barrier(len(argument_lists))
    workers = [_CONTEXT.Process(target=target, args=(*args, barrier)) for args in argument_lists]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0


def test_processes_bumping_one_counter_lose_nothing(server, url) -> None:
    endpoint, app = server
    options = s3_storage_options(endpoint)
    processes, bumps = 4, 10
    refused = app.counts["PUT 412"]
    for trial in range(TRIALS or 1):
        key_url = f"{url}/{trial}"
        _start_together(_bump, [(key_url, options, bumps)] * processes)
        assert open_store(key_url, storage_options=options).get("count") == str(processes * bumps).encode()
    assert app.counts["PUT 412"] > refused  # the processes did race


def _values(trial: int) -> np.ndarray:
    return np.random.default_rng(trial).random(SHAPE)


def _write_rows(url: str, options: dict[str, Any], rows: slice, trial: int, barrier: Any) -> None:
    import dask.array as da

    x = da.from_array(_values(trial)[rows], chunks=(rows.stop - rows.start, SHAPE[1]))
    barrier.wait()
    zarrdask.to_zarr(x, url, storage_options=options, region=(rows, slice(None)))


@pytest.mark.parametrize("writers", [2, 4])
def test_independent_to_zarr_calls_into_one_shard_lose_no_cell(server, url, writers) -> None:
    endpoint, app = server
    options = s3_storage_options(endpoint)
    step = SHAPE[0] // writers
    lost = []
    refused = app.counts["PUT 412"]
    for trial in range(TRIALS or 2):
        array_url = f"{url}/{trial}.zarr"
        zarrdask.create_array(array_url, shape=SHAPE, chunks=CHUNKS, shards=SHAPE, dtype="f8", fill_value=np.nan,
                              storage_options=options)
        _start_together(_write_rows, [(array_url, options, slice(k * step, (k + 1) * step), trial)
                                      for k in range(writers)])
        stored = zarrdask.open_array(array_url, storage_options=options)[...]
        lost.append(int((stored != _values(trial)).sum()))
    print(f"{writers} writers, {len(lost)} trials: cells lost {lost}, commits refused {app.counts['PUT 412'] - refused}")
    assert lost == [0] * len(lost), f"cells lost per trial: {lost}"
