"""Object stores under failure: retries, missing keys, errors, request counts.

The S3 tests go through a loopback proxy (tests/_http.py) in front of the moto server
that fails a fraction of the requests (503 SlowDown, 500 InternalError, or a dropped
connection); botocore's and s3fs's own retries are off (zarrdask's default on S3), so
every recovery is zarrdask's. Data written and read through it must be bit-exact.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid

import dask.array as da
import xarray as xr
import numpy as np
import pytest
from _http import LoopbackServer
from _s3 import BUCKET, s3_storage_options

import zarrdask
from zarrdask.errors import InvalidValueError, StoreError, ZarrdaskError
from zarrdask.storage import ByteRange, FsspecStore
from zarrdask.storage.retry import RetryPolicy, is_transient

pytestmark = pytest.mark.s3

FAST_RETRY = RetryPolicy(attempts=8, base_delay=0.005, max_delay=0.05)


def _store(endpoint: str, **kwargs) -> FsspecStore:
    """A store on S3 as users make it: botocore's and s3fs's own retries are off by default."""
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    store = FsspecStore(url, storage_options={**s3_storage_options(endpoint), "skip_instance_cache": True}, **kwargs)
    assert store.fs.retries == 1 and store.storage_options["config_kwargs"]["retries"] == {"total_max_attempts": 1}
    return store


@pytest.fixture
def flaky(s3_endpoint):
    """A proxy to moto failing 10 % of the requests."""
    with LoopbackServer(upstream=s3_endpoint, fail_fraction=0.10, seed=7) as server:
        yield server


@pytest.fixture
def counting(s3_endpoint):
    with LoopbackServer(upstream=s3_endpoint) as server:
        yield server


def test_ten_percent_of_requests_failing_loses_nothing(flaky):
    data = np.random.default_rng(0).standard_normal((96, 80)).astype("f4")
    store = _store(flaky.url, retry=FAST_RETRY)
    x = da.from_array(data, chunks=(7, 13))  # misaligned: gathered per shard
    zarrdask.to_zarr(x, store, path="a", chunks=(8, 8), shards=(16, 16), fill_value=0)
    reader = zarrdask.open_array(store, path="a")
    np.testing.assert_array_equal(reader[...], data)  # whole shards
    np.testing.assert_array_equal(reader[3:40, 17:61], data[3:40, 17:61])  # shard indexes + inner ranges
    np.testing.assert_array_equal(zarrdask.from_zarr(store, path="a").compute(), data)
    assert flaky.failed >= 10, flaky.failed  # the failures really happened (of ~150 requests)


def test_a_bucket_the_reader_may_not_list(s3_endpoint):
    """S3 answers 403 AccessDenied, not 404, for a key that does not exist when the reader
    may not list the bucket: a shard never written is then refused, naming its key and the
    store option; with ``forbidden_is_absent=True`` it reads as the fill value, and a v2
    group (its zarr.json absent) opens."""
    writer = _store(s3_endpoint)
    a = zarrdask.create_array(writer, path="a", shape=(8,), dtype="i2", chunks=(2,), shards=(4,), fill_value=-1)
    a[:4] = 5
    zarrdask.create_group(writer, path="g", zarr_format=2).create_array("b", shape=(2,), dtype="u1")[...] = [3, 4]
    with LoopbackServer(upstream=s3_endpoint, absent_status=403) as server:
        options = {**s3_storage_options(server.url), "skip_instance_cache": True}
        plain = FsspecStore(writer.url, storage_options=options)
        with pytest.raises(StoreError, match=r"key 'a/c/1' .*Access Denied.*forbidden_is_absent=True\) \(with your "
                                             r"storage_options\)"):
            zarrdask.open_array(plain, path="a")[...]
        reader = FsspecStore(writer.url, storage_options=options, forbidden_is_absent=True)
        assert zarrdask.open_array(reader, path="a")[...].tolist() == [5] * 4 + [-1] * 4
        assert zarrdask.open_group(reader, path="g")["b"][...].tolist() == [3, 4]


def test_a_read_without_credentials_names_the_fix(s3_endpoint, monkeypatch):
    """No credentials anywhere: the request is never signed, and the error names the key and
    what reads a public bucket (``anon``), which then reads."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    writer = _store(s3_endpoint)  # (its credentials are its own storage_options)
    zarrdask.create_array(writer, shape=(3,), dtype="u1", fill_value=9)
    writer.fs.chmod(f"{writer.root}/zarr.json", acl="public-read")  # (a public dataset)
    options = {"client_kwargs": {"endpoint_url": s3_endpoint}, "skip_instance_cache": True}
    with pytest.raises(StoreError, match=r"key 'zarr.json' .*credentials; for a public bucket pass "
                                         r"storage_options=\{'anon': True\}"):
        zarrdask.open_array(writer.url, storage_options=options)
    assert zarrdask.open_array(writer.url, storage_options={**options, "anon": True})[...].tolist() == [9, 9, 9]


def test_a_missing_key_is_one_get_and_reads_as_the_fill_value(counting):
    store = _store(counting.url)
    a = zarrdask.create_array(store, shape=(8, 8), dtype="i2", chunks=(2, 2), shards=(4, 4), fill_value=-1)
    a[:4, :4] = 5  # one of four shards written
    counting.reset()
    got = zarrdask.open_array(store)[...]
    assert (got[:4, :4] == 5).all() and (got[4:] == -1).all() and (got[:, 4:] == -1).all()
    assert counting.counts == {"GET": 5}  # zarr.json + 4 shards (3 missing): no HEAD, no retry


def test_writes_put_many_keys_concurrently_within_the_bound(counting):
    store = _store(counting.url, concurrency=4)
    in_flight, peak = 0, 0
    real = store.fs._pipe_file

    async def watched(path, value, **kwargs):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            await asyncio.sleep(0.01)
            return await real(path, value, **kwargs)
        finally:
            in_flight -= 1

    store.fs._pipe_file = watched
    try:
        store.set_many({f"k/{i}": bytes([i]) * 10 for i in range(20)})
    finally:
        del store.fs._pipe_file
    assert peak == 4
    assert store.get_many([f"k/{i}" for i in range(20)]) == [bytes([i]) * 10 for i in range(20)]


def test_failures_that_outlast_the_retries_name_the_key_and_url(tmp_path):
    (tmp_path / "k").write_bytes(b"x")
    with LoopbackServer(root=str(tmp_path), fail_fraction=1.0) as server:
        store = FsspecStore(f"{server.url}/", retry=RetryPolicy(attempts=3, base_delay=0.001))
        with pytest.raises(StoreError, match=rf"key 'k' \({server.url}/k\)") as info:
            store.get("k")
        assert isinstance(info.value, ZarrdaskError)
        # three tries, then the error (aiohttp itself resends once on a dropped keep-alive connection)
        assert 3 <= server.failed <= 4, server.failed


def _refusing_endpoint() -> str:
    """An address on the loopback where nothing listens (connections are refused)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _refused_options() -> dict:
    return {"endpoint_url": _refusing_endpoint(), "key": "k", "secret": "s", "skip_instance_cache": True}


@pytest.mark.parametrize("open_with", ["open_array", "open_dataset"])
def test_a_refused_connection_fails_quickly_saying_how_often_it_was_tried(open_with):
    """Only zarrdask's RetryPolicy retries on S3 (botocore's and s3fs's own tries, which
    multiplied it to 150 connection attempts and ~50 s, are off): six tries with backoff,
    then an error naming the key, the tries, and the setting that changes them."""
    url = f"s3://{BUCKET}/nothing-here"
    began = time.perf_counter()
    with pytest.raises(StoreError) as info:
        if open_with == "open_array":
            zarrdask.open_array(url, storage_options=_refused_options())
        else:
            xr.open_dataset(url, engine="zarrdask", storage_options=_refused_options())
    took = time.perf_counter() - began
    message = str(info.value)
    assert "zarr.json" in message and "tried 6 times" in message, message
    assert "dask.config.set({'zarrdask.retry.attempts': N})" in message and "DASK_ZARRDASK__RETRY__ATTEMPTS" in message
    assert took < 5, took


def test_the_retry_setting_is_dasks_config_on_every_way_in(tmp_path):
    """The one setting: dask's config ``zarrdask.retry`` (also from the environment, as the
    CLI gets it); ``FsspecStore(retry=...)`` overrides it for one store; a bad value is an
    error naming the key and what was expected."""
    import subprocess
    import sys

    import dask.config

    with dask.config.set({"zarrdask.retry.attempts": 2, "zarrdask.retry.base_delay": 0.001}):
        with pytest.raises(StoreError, match="tried 2 times"):
            zarrdask.open_array(f"s3://{BUCKET}/x", storage_options=_refused_options())
        assert FsspecStore(f"s3://{BUCKET}/x", storage_options=_refused_options(),
                           retry=RetryPolicy(attempts=3)).retry.attempts == 3
    for bad in ({"attempt": 2}, {"attempts": 0}, {"attempts": "many"}):
        with dask.config.set({"zarrdask.retry": bad}), pytest.raises(InvalidValueError, match="zarrdask.retry"):
            FsspecStore(f"s3://{BUCKET}/x", storage_options=_refused_options())
    env = {**os.environ, "DASK_ZARRDASK__RETRY__ATTEMPTS": "3", "DASK_ZARRDASK__RETRY__BASE_DELAY": "0.001"}
    run = subprocess.run([sys.executable, "-m", "zarrdask", "info", f"s3://{BUCKET}/x", "--storage-option",
                          f"endpoint_url={_refusing_endpoint()}", "--storage-option", "key=k", "--storage-option",
                          "secret=s"], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 2 and "tried 3 times" in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_an_error_that_is_not_transient_is_not_retried(tmp_path):
    (tmp_path / "forbidden").write_bytes(b"x")
    with LoopbackServer(root=str(tmp_path), forbidden={"forbidden"}) as server:
        store = FsspecStore(f"{server.url}/", retry=RetryPolicy(attempts=5, base_delay=0.001))
        with pytest.raises(StoreError, match="key 'forbidden'"):
            store.get_ranges([("forbidden", ByteRange(0, 1))])
        assert server.counts["GET"] == 1


class _Status(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class _Boto(Exception):
    def __init__(self, code: str, status: int) -> None:
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}


class ServerDisconnectedError(Exception):  # named like aiohttp's
    pass


@pytest.mark.parametrize(("error", "transient"), [
    (TimeoutError(), True), (asyncio.TimeoutError(), True), (ConnectionResetError(), True),
    (ServerDisconnectedError(), True), (_Status(503), True), (_Status(500), True), (_Status(429), True),
    (_Boto("SlowDown", 503), True), (_Boto("InternalError", 500), True), (_Boto("Throttling", 400), True),
    (_Status(403), False), (_Status(404), False), (_Boto("AccessDenied", 403), False),
    (FileNotFoundError("k"), False), (ValueError("bad"), False), (PermissionError(), False),
])
def test_transient_failures_are_recognised(error, transient):
    assert is_transient(error) is transient
    wrapped = OSError("translated")  # s3fs raises its own OSError from botocore's error
    wrapped.__cause__ = error
    assert is_transient(wrapped) is transient


def test_retry_policy_backs_off_within_bounds():
    policy = RetryPolicy(attempts=4, base_delay=0.1, max_delay=0.3)
    assert 0.05 <= policy.delay(1) <= 0.1 and 0.1 <= policy.delay(2) <= 0.2 and 0.15 <= policy.delay(5) <= 0.3
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


def _tree(nodes: int) -> xr.DataTree:
    tree = {"/": xr.Dataset(attrs={"title": "tree"})}
    for i in range(nodes):
        tree[f"/n{i}"] = xr.Dataset({"a": ("x", np.arange(3.0) + i), "b": ("x", np.ones(3))}, coords={"x": [1, 2, 3]})
    return xr.DataTree.from_dict(tree)


def test_datatree_write_and_open_issue_requests_together(counting):
    """xarray#9455: a tree of small nodes on an object store. The write is a listing plus
    two concurrent batches (metadata, then data), not one round trip after another per
    node; the open reads the consolidated metadata once and every node's index
    coordinates at the same time."""
    tree = _tree(12)
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/t.zarr"
    options = s3_storage_options(counting.url)
    tree.zarrdask.to_zarr(url, storage_options=options, mode="w")
    keys = 1 + 12 * 4  # the root's zarr.json; per node: zarr.json, and a, b, x (one chunk each)
    record = 2  # the call's record, stored before the first byte: in the store, and among the held writes
    assert counting.counts["PUT"] == keys + 12 * 3 + record and counting.counts["GET"] <= 2, counting.counts
    assert counting.peak >= 16, counting.peak
    counting.reset()
    back = xr.open_datatree(url, engine="zarrdask", storage_options=options)
    assert counting.counts == {"GET": 1 + 12}  # zarr.json (consolidated), then the 12 x coordinates
    assert counting.peak >= 6, counting.peak
    xr.testing.assert_identical(back, tree)
    counting.reset()
    assert len(zarrdask.open_group(url, storage_options=options).members()) == 12
    assert counting.counts == {"GET": 1}


def test_opening_a_group_of_200_arrays_without_consolidated_metadata_fetches_them_together(counting):
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/g.zarr"
    options = s3_storage_options(counting.url)
    xr.Dataset({f"v{i}": ("x", np.arange(2.0)) for i in range(200)}).zarrdask.to_zarr(
        url, storage_options=options, mode="w", consolidated=False)
    counting.reset()
    group = zarrdask.open_group(url, storage_options=options, use_consolidated=False)
    assert len(group.arrays()) == 200
    assert counting.counts["GET"] <= 1 + 201 + 2, counting.counts  # listing, documents, (pagination)
    assert counting.peak >= 16, counting.peak
