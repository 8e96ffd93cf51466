"""A write call that does not finish leaves a record that ``verify`` reports and ``open``
warns of; running the same call again completes the write and clears the record (issue 41).

Writer processes run ``zarrdask.to_zarr`` (into an existing array, ``mode="r+"``),
``Dataset.zarrdask.to_zarr`` (``mode="w"``) and ``zarrdask.copy`` (re-sharding) and are
sent SIGKILL or SIGINT at random moments, on local files and on a loopback moto S3
server (there one signal per call, both in an acceptance run). After each signal either ``verify`` reports the interrupted call (its
record), or the call had finished (the data is complete) or had written nothing yet;
the same call run again completes the data bit for bit and leaves no record.
``ZARRDASK_INTERRUPT_TRIALS`` sets the trials per call, signal and store (default 2; the
acceptance run is 20).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
import warnings
from contextlib import suppress
from pathlib import Path
from typing import Any

import dask
import dask.threaded
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import InterruptedWriteWarning
from zarrdask.storage import MemoryStore
from zarrdask.storage.temporary import temporary_files
from zarrdask.storage.records import RECORDS_DIR, is_record

from _s3 import s3_storage_options

pytestmark = pytest.mark.timeout(900)

TRIALS = int(os.environ.get("ZARRDASK_INTERRUPT_TRIALS", "2"))
SHAPE = (64, 256, 256)  # float32: 16 MiB in 16 shards of 1 MiB, inner chunks of 64 KiB
SHARDS = (16, 64, 256)
CHUNKS = (4, 16, 256)
BLOCKS = (8, 256, 256)  # dask blocks that cut every shard
LAYOUT = dict(chunks=CHUNKS, shards=SHARDS, compressors=[{"name": "zstd", "configuration": {"level": 3}},
                                                          {"name": "crc32c"}])
EXPECTED = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["zarrdask", "numpy", "dask.array", "xarray", "s3fs"])


def _source() -> da.Array:
    return da.arange(np.prod(SHAPE), dtype="float32", chunks=BLOCKS[0] * SHAPE[1] * SHAPE[2]).reshape(SHAPE)


def _call(kind: str, url: str, options: dict[str, Any] | None, source: str | None) -> None:
    """The write call under test (the same every time it is run)."""
    with dask.config.set(scheduler="threads"):
        if kind == "to_zarr":
            zarrdask.to_zarr(_source(), url, mode="r+", storage_options=options)
        elif kind == "xarray":
            ds = xr.Dataset({"v": (("t", "y", "x"), _source())}, coords={"t": np.arange(SHAPE[0])})
            ds.zarrdask.to_zarr(url, mode="w", encoding={"v": LAYOUT}, storage_options=options)
        else:
            zarrdask.copy(source, url, shards=(32, 128, 256), target_storage_options=options)


def _writer(kind: str, url: str, options: dict[str, Any] | None, source: str | None, ready: Any, done: Any) -> None:
    """The writer process: warmed up by a small write of the same kind, then the call."""
    small = da.ones((4, 4), chunks=2)
    zarrdask.to_zarr(small, MemoryStore())
    xr.Dataset({"v": (("y", "x"), small)}).zarrdask.to_zarr(MemoryStore())
    ready.set()
    _call(kind, url, options, source)
    done.set()


def _values(kind: str, url: str, options: dict[str, Any] | None) -> np.ndarray:
    if kind == "xarray":
        return zarrdask.open_array(url, path="v", storage_options=options)[...]
    return zarrdask.open_array(url, storage_options=options)[...]


def _data_keys(url: str, options: dict[str, Any] | None) -> list[str]:
    store = zarrdask.open_store(url, storage_options=options)
    return [k for k in store.list_prefix("") if "/c/" in f"/{k}" and not is_record(k)]


def _records(url: str, options: dict[str, Any] | None) -> list[str]:
    return [k for k in zarrdask.open_store(url, storage_options=options).list_prefix("") if is_record(k)]


def _prepare(kind: str, url: str, options: dict[str, Any] | None) -> None:
    if kind == "to_zarr":
        zarrdask.create_array(url, shape=SHAPE, dtype="float32", storage_options=options, **LAYOUT)


def _writer_duration(kind: str, url: str, options: dict[str, Any] | None, source: str | None) -> float:
    """Seconds a writer process takes from its start signal to the end of its call."""
    _prepare(kind, url, options)
    ready, done = _CONTEXT.Event(), _CONTEXT.Event()
    writer = _CONTEXT.Process(target=_writer, args=(kind, url, options, source, ready, done), daemon=True)
    writer.start()
    assert ready.wait(30), "the writer never started"
    started = time.perf_counter()
    assert done.wait(120), "the writer never finished"
    duration = time.perf_counter() - started
    writer.join()
    return duration


def _interrupt(kind: str, sig: signal.Signals, base: str, options: dict[str, Any] | None, seed: int,
               source: str | None = None) -> dict[str, int]:
    """Signal a writer of ``kind`` at ``TRIALS`` random moments (a fresh target each); after
    each, check what verify reports and that the same call completes it. Counts of what
    the signal found."""
    rng = random.Random(seed)
    duration = _writer_duration(kind, f"{base}/probe.zarr", options, source)
    seen = {"recorded": 0, "finished": 0, "not started": 0}
    for trial in range(TRIALS):
        url = f"{base}/{kind}-{sig.name}-{trial}.zarr"
        _prepare(kind, url, options)
        ready, done = _CONTEXT.Event(), _CONTEXT.Event()
        writer = _CONTEXT.Process(target=_writer, args=(kind, url, options, source, ready, done), daemon=True)
        writer.start()
        assert ready.wait(30), "the writer never started"
        time.sleep(rng.uniform(0, 1.2 * duration))
        with suppress(ProcessLookupError):  # (ended already: the write finished)
            os.kill(writer.pid, sig)
        writer.join(60)
        if writer.exitcode is None:  # (an interrupt that never reached the main thread's wait)
            os.kill(writer.pid, signal.SIGKILL)
            writer.join()
        if not list(zarrdask.open_store(url, storage_options=options).list_prefix("")):
            seen["not started"] += 1  # before its first byte: nothing written, nothing to report
            _call(kind, url, options, source)
            continue
        report = zarrdask.verify(url, storage_options=options)
        interrupted = [f for f in report.findings if f.kind == "interrupted"]
        if interrupted:
            seen["recorded"] += 1
            assert not report.ok and len(interrupted) == len(report.interrupted) == 1, report
            record = report.interrupted[0]
            assert record.call == {"to_zarr": "zarrdask.to_zarr", "xarray": "Dataset.zarrdask.to_zarr",
                                   "copy": "zarrdask.copy"}[kind], record
            assert record.pid == writer.pid and record.started and record.nbytes >= EXPECTED.nbytes, record
            assert str(writer.pid) in interrupted[0].problem and record.call in repr(report)
        elif _data_keys(url, options):
            seen["finished"] += 1  # the signal came after the write: complete
            assert np.array_equal(_values(kind, url, options).view("u4"), EXPECTED.view("u4")), (trial, report)
        else:
            seen["not started"] += 1  # before its first chunk: no data written, nothing to report
        if interrupted or kind != "copy":  # (a finished copy is not run again: its target is not empty)
            _call(kind, url, options, source)  # the same call again completes it
        assert temporary_files(zarrdask.open_store(url, storage_options=options)) == []  # the rerun took them over
        assert _records(url, options) == []
        assert zarrdask.verify(url, storage_options=options).ok
        assert np.array_equal(_values(kind, url, options).view("u4"), EXPECTED.view("u4"))
    print(f"{kind} {sig.name}: {seen} ({TRIALS} trials, a write takes {duration:.2f} s)")
    assert seen["recorded"] or TRIALS < 5, seen  # the acceptance run lands some signals mid-write
    return seen


@pytest.fixture(scope="module")
def copy_source(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = str(tmp_path_factory.mktemp("source") / "s.zarr")
    zarrdask.to_zarr(_source(), url, **LAYOUT)
    return url


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("kind", ["to_zarr", "xarray", "copy"])
def test_interrupted_local_writes_are_reported_and_resumed(tmp_path: Path, kind: str, sig: signal.Signals,
                                                          copy_source: str) -> None:
    _interrupt(kind, sig, str(tmp_path), None, seed=hash((kind, sig.name)) % 1000, source=copy_source)


#: on S3 each call with both signals in an acceptance run (ZARRDASK_INTERRUPT_TRIALS set), else one each
_S3_CASES = [(kind, sig) for kind in ("to_zarr", "xarray", "copy") for sig in (signal.SIGKILL, signal.SIGINT)
             if "ZARRDASK_INTERRUPT_TRIALS" in os.environ or (kind == "xarray") == (sig == signal.SIGINT)]


@pytest.mark.s3
@pytest.mark.parametrize(("kind", "sig"), _S3_CASES, ids=[f"{k}-{s.name}" for k, s in _S3_CASES])
def test_interrupted_s3_writes_are_reported_and_resumed(s3_endpoint: str, s3_url: str, kind: str,
                                                        sig: signal.Signals, copy_source: str) -> None:
    _interrupt(kind, sig, s3_url, s3_storage_options(s3_endpoint), seed=hash((kind, sig.name, "s3")) % 1000,
               source=copy_source)


def _half_written(url: str) -> zarrdask.Array:
    """An array whose write of its first half stopped after storing its record (the graph's
    record task computed alone, as a killed graph leaves it)."""
    array = zarrdask.create_array(url, shape=(8, 8), chunks=(4, 4), dtype="i4", fill_value=-1)
    graph = zarrdask.to_zarr(np.ones((4, 8), "i4"), array, region=(slice(0, 4), slice(0, 8)), compute=False)
    assert _records(url, None) == []  # compute=False: recorded when computed
    [name] = [k for k in graph.__dask_graph__() if isinstance(k, str) and k.startswith("zarrdask-record-")]
    dask.get(graph.__dask_graph__(), name)
    return array


def test_open_warns_once_per_record_and_other_readers_still_read(tmp_path: Path) -> None:
    import zarr

    url = str(tmp_path / "a.zarr")
    _half_written(url)
    [key] = _records(url, None)
    assert key.startswith(f"{RECORDS_DIR}/")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        zarrdask.open_array(url)
        zarrdask.open(url)
        zarrdask.open_array(url, mode="r+")
    [warning] = [w for w in caught if issubclass(w.category, InterruptedWriteWarning)]
    text = str(warning.message)
    assert "zarrdask.to_zarr" in text and "[0:4, 0:8]" in text and "2 storage units" in text and "verify" in text
    # zarr-python reads it (the record is no chunk), and zarrdask's own counts skip it
    assert zarr.open_array(url, mode="r")[...].tolist() == [[-1] * 8] * 8
    assert zarrdask.open_array(url).nchunks_initialized == 0
    # a finished write of a region covering it clears it
    zarrdask.to_zarr(np.full((8, 8), 2, "i4"), url, mode="r+")
    assert _records(url, None) == [] and zarrdask.verify(url).ok


def test_a_record_whose_process_still_runs_here_is_no_warning_until_it_ends(tmp_path: Path) -> None:
    """Another job writing on this machine (its record's process alive) is not an
    interrupted write: ``open`` keeps quiet and ``verify`` says to let it finish; once that
    process has ended without clearing its record, ``open`` warns and ``verify`` says to run
    the call again."""
    import json
    import subprocess
    import sys

    url = str(tmp_path / "a.zarr")
    _half_written(url)
    [key] = _records(url, None)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        path = Path(url) / key
        path.write_text(json.dumps({**json.loads(path.read_text()), "pid": other.pid}))
        with warnings.catch_warnings():
            warnings.simplefilter("error", InterruptedWriteWarning)
            zarrdask.open_array(url)
        [finding] = zarrdask.verify(url).findings
        assert "is still running (its process is alive on this host)" in finding.problem
        assert "Let it finish" in finding.problem
    finally:
        other.kill()
        other.wait()
    with pytest.warns(InterruptedWriteWarning, match="did not finish .* Run the same call again"):
        zarrdask.open_array(url)


def test_group_records_are_no_members_to_anyone(tmp_path: Path) -> None:
    import zarr

    url = str(tmp_path / "g.zarr")
    root = zarrdask.create_group(url)
    _half_written(str(tmp_path / "g.zarr" / "a"))
    ds = xr.Dataset({"v": (("y",), da.arange(8, chunks=4))})
    graph = ds.zarrdask.to_zarr(url, group="d", mode="w", compute=False)  # deferred: recorded when it runs
    assert [k.split("/")[0] for k in _records(url, None)] == ["a"]  # (a template never computed leaves none)
    first = next(k for k in graph.__dask_graph__() if isinstance(k, str) and k.startswith("zarrdask-record-")
                 and not k.startswith("zarrdask-record-done-"))
    dask.threaded.get(graph.__dask_graph__(), first)  # the graph began (its record stored), then was killed
    assert [k.split("/")[0] for k in _records(url, None)] == ["a", "d"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            xr.open_dataset(url, group="d", engine="zarrdask", chunks={}).close()
    assert sum(issubclass(w.category, InterruptedWriteWarning) for w in caught) == 1
    report = zarrdask.verify(url)
    assert sorted(r.call for r in report.interrupted) == ["Dataset.zarrdask.to_zarr", "zarrdask.to_zarr"]
    assert [f.kind for f in report.findings] == ["interrupted", "interrupted"], report
    html = report._repr_html_()
    assert "Interrupted writes" in html and "Dataset.zarrdask.to_zarr" in html and str(os.getpid()) in html
    assert set(report.to_json()["interrupted_writes"][0]) >= {"call", "started", "host", "pid", "region",
                                                              "units", "nbytes", "version"}
    assert sorted(n for n, _ in root.members()) == ["a", "d"]
    assert sorted(n for n, _ in zarrdask.open_group(url, path="d").members()) == ["v"]
    assert sorted(zarr.open_group(url, mode="r").group_keys()) == ["d"]
    assert sorted(zarr.open_group(url, mode="r")["d"].array_keys()) == ["v"]
    assert xr.open_zarr(url, group="d", consolidated=False)["v"].values.tolist() == [0] * 8  # not yet written
    copied = str(tmp_path / "copy.zarr")
    zarrdask.copy(url, copied)
    assert _records(copied, None) == []  # neither the copy's own record nor the source's
    dask.compute(graph)
    assert [k.split("/")[0] for k in _records(url, None)] == ["a"]
    assert zarrdask.open_array(url, path="d/v")[...].tolist() == list(range(8))


@pytest.mark.parametrize("store", ["local", "memory"])
def test_finished_writes_leave_no_record(tmp_path: Path, store: str) -> None:
    def url(name: str) -> Any:
        return str(tmp_path / name) if store == "local" else zarrdask.open_store(f"memory://{tmp_path.name}-{name}",
                                                                                 mode="w")

    x = da.arange(64, chunks=16)
    a = url("a")
    zarrdask.to_zarr(x, a, chunks=(8,), shards=(32,))
    dask.compute(zarrdask.to_zarr(x[:32], a, region=(slice(0, 32),), compute=False))
    zarrdask.to_zarr(x, a, mode="a")
    ds = xr.Dataset({"v": (("y",), x)})
    g = url("g")
    ds.zarrdask.to_zarr(g)
    dask.compute(ds.zarrdask.to_zarr(g, mode="a", append_dim="y", compute=False))
    xr.DataTree.from_dict({"/": ds, "/child": ds}).zarrdask.to_zarr(url("t"))
    c = url("c")
    zarrdask.copy(g, c)
    for target in (a, g, url("t"), c):
        keys = list(zarrdask.open_store(target).list_prefix(""))
        assert not [k for k in keys if is_record(k)], keys
        assert zarrdask.verify(target).ok


def test_a_failed_call_is_recorded_and_the_same_call_clears_it(tmp_path: Path) -> None:
    url = str(tmp_path / "a.zarr")
    zarrdask.create_array(url, shape=(16,), chunks=(4,), dtype="f8")
    calls = {"n": 0}

    def flaky(block: np.ndarray) -> np.ndarray:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("the source failed")
        return block

    x = da.arange(16, chunks=4, dtype="f8").map_blocks(flaky, dtype="f8")
    with pytest.raises(RuntimeError), dask.config.set(scheduler="sync"):
        zarrdask.to_zarr(x, url, mode="r+")
    [record] = zarrdask.verify(url).interrupted
    assert record.region == [[0, 16]] and record.units == 4 and record.nbytes == 128
    zarrdask.to_zarr(x, url, mode="r+")
    assert _records(url, None) == [] and zarrdask.open_array(url)[...].tolist() == list(range(16))


class _CountedDict(dict):
    """A dict store that counts full listings of its keys."""

    listings = 0

    def keys(self):  # type: ignore[override]
        type(self).listings += 1
        return super().keys()

    def __iter__(self):
        type(self).listings += 1
        return super().__iter__()


@pytest.mark.parametrize("kind", ["memory", "dict"])
def test_opens_in_memory_look_for_records_only_where_it_is_free(kind: str) -> None:
    """A failed write into a MemoryStore is reported when the array is opened (its
    directory index answers at once); a plain mapping is not scanned key by key on every
    open (a dict of a large array: milliseconds per member), and ``verify`` still reports it."""
    store: Any = MemoryStore() if kind == "memory" else _CountedDict()
    g = zarrdask.create_group(store)
    big = g.create_array("big", shape=(4000,), chunks=(2,), dtype="u1", fill_value=0)
    big[...] = 1
    g.create_array("a", shape=(16,), chunks=(4,), dtype="f8")

    def flaky(block: np.ndarray) -> np.ndarray:
        if block[0] == 8:
            raise RuntimeError("the source failed")
        return block

    x = da.arange(16, chunks=4, dtype="f8").map_blocks(flaky, dtype="f8")
    with pytest.raises(RuntimeError), dask.config.set(scheduler="sync"):
        zarrdask.to_zarr(x, store, component="a", mode="r+")
    assert len(zarrdask.verify(store).interrupted) == 1
    g = zarrdask.open_group(store)
    _CountedDict.listings = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            g["a"]
            g["big"]
    warned = [w for w in caught if issubclass(w.category, InterruptedWriteWarning)]
    if kind == "memory":
        assert len(warned) == 1 and "'a'" in str(warned[0].message)
    else:
        assert warned == [] and _CountedDict.listings == 0

