"""Metadata changes by independent writers: appends, resizes and attributes.

Each is one guarded read-modify-write of the node's documents as stored then
(``door.node_io.change_node``), not of the copy an open read long ago: processes
appending to one array at once each get rows of their own, attributes set by several
processes are all kept, and an open whose array was made anew refuses to change it.
"""

from __future__ import annotations

import math
import multiprocessing
import threading
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from _s3 import BUCKET, s3_storage_options
from _util import run_at_once

import zarrdask
from zarrdask.errors import MetadataError, NodeNotFoundError, ShapeMismatchError, WriteConflictError
from zarrdask.storage.fsspec_store import FsspecStore
from zarrdask.storage.memory import MemoryStore

PROCESSES, EACH = 4, 5
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["zarrdask", "numpy"])


def _appender(url: str, k: int, barrier: Any) -> None:
    a = zarrdask.open_array(url, mode="r+")
    barrier.wait()
    for j in range(EACH):
        a.append(np.full((1, 3), 100 * k + j, dtype="int32"))
        a.attrs[f"p{k}-{j}"] = j


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_processes_appending_at_once_each_get_rows_of_their_own(tmp_path, zarr_format):
    url = str(tmp_path / "a.zarr")
    zarrdask.create_array(url, shape=(0, 3), chunks=(2, 3), dtype="int32", zarr_format=zarr_format,
                          attributes={"title": "t"})
    run_at_once(_CONTEXT, _appender, PROCESSES, url)
    a = zarrdask.open_array(url)
    assert a.shape == (PROCESSES * EACH, 3)
    rows = a[...]
    assert (rows == rows[:, :1]).all()
    assert sorted(rows[:, 0].tolist()) == sorted(100 * k + j for k in range(PROCESSES) for j in range(EACH))
    for k in range(PROCESSES):  # (each process's own rows in its order)
        mine = [v for v in rows[:, 0].tolist() if v // 100 == k]
        assert mine == [100 * k + j for j in range(EACH)]
    assert dict(a.attrs) == {"title": "t", **{f"p{k}-{j}": j for k in range(PROCESSES) for j in range(EACH)}}


@pytest.fixture(params=["local", "s3"])
def url(request, tmp_path) -> tuple[str, dict]:
    if request.param == "local":
        return str(tmp_path / "a.zarr"), {}
    endpoint = request.getfixturevalue("s3_endpoint")
    return f"s3://{BUCKET}/{uuid.uuid4().hex}", {"storage_options": s3_storage_options(endpoint)}


def test_an_open_made_before_another_writers_changes_keeps_them(url):
    where, options = url
    zarrdask.create_array(where, shape=(2, 3), chunks=(2, 3), dtype="int32", fill_value=0, **options)
    stale = zarrdask.open_array(where, mode="r+", **options)
    other = zarrdask.open_array(where, mode="r+", **options)
    other.append(np.ones((2, 3), "int32"))
    other.attrs["by"] = "other"
    assert stale.append(np.full((1, 3), 7, "int32")) == (5, 3)  # (after the other's rows, not over them)
    stale.attrs["mine"] = 1
    del stale.attrs["by"]
    fresh = zarrdask.open_array(where, **options)
    assert fresh[...].tolist() == [[0] * 3] * 2 + [[1] * 3] * 2 + [[7] * 3]
    assert dict(fresh.attrs) == {"mine": 1}
    assert stale.shape == (5, 3) and dict(stale.attrs) == {"mine": 1}


def test_an_array_made_anew_since_it_was_opened_is_not_changed(tmp_path):
    where = str(tmp_path / "a.zarr")
    zarrdask.create_array(where, shape=(2,), chunks=(2,), dtype="int32")
    stale = zarrdask.open_array(where, mode="r+")
    zarrdask.create_array(where, shape=(2,), chunks=(2,), dtype="float64", overwrite=True)
    with pytest.raises(MetadataError, match=r"zarr.json.*made anew since.*open it again"):
        stale.append(np.ones(1, "int32"))
    with pytest.raises(MetadataError, match="made anew"):
        stale.attrs["x"] = 1
    fresh = zarrdask.open_array(where)
    assert fresh.shape == (2,) and fresh.dtype == np.float64 and dict(fresh.attrs) == {}
    zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    gone = zarrdask.open_array(where, mode="r+")
    zarrdask.storage.LocalStore(where).delete("zarr.json")
    with pytest.raises(NodeNotFoundError, match="is gone"):
        gone.resize(4)


def test_threads_appending_through_opens_of_their_own_on_s3(s3_endpoint):
    where = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    options = {"storage_options": s3_storage_options(s3_endpoint)}
    zarrdask.create_array(where, shape=(0,), chunks=(4,), dtype="int32", **options)
    opens = [zarrdask.open_array(FsspecStore(where, **options), mode="r+") for _ in range(3)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda k: [opens[k].append(np.array([10 * k + j], "int32")) for j in range(4)], range(3)))
    got = zarrdask.open_array(where, **options)[...].tolist()
    assert sorted(got) == sorted(10 * k + j for k in range(3) for j in range(4))


def _stale_write_case(data: Any) -> tuple[dict, tuple[int, ...], int, int, tuple[slice, ...]]:
    """An array's layout, its shape, the axis another writer grows it along and by how
    much, and a region inside the old shape."""
    ndim = data.draw(st.integers(1, 2))
    chunks = tuple(data.draw(st.integers(1, 4)) for _ in range(ndim))
    layout: dict[str, Any] = {"chunks": chunks}
    if data.draw(st.booleans()):
        layout["shards"] = tuple(c * data.draw(st.integers(1, 3)) for c in chunks)
    shape = tuple(data.draw(st.integers(1, 9)) for _ in range(ndim))
    region = []
    for n in shape:
        lo = data.draw(st.integers(0, n - 1))
        region.append(slice(lo, data.draw(st.integers(lo + 1, n))))
    return layout, shape, data.draw(st.integers(0, ndim - 1)), data.draw(st.integers(1, 6)), tuple(region)


def _write_through_stale_open(store: Any, layout: dict, shape: tuple[int, ...], axis: int, grow: int,
                              region: tuple[slice, ...], **options: Any) -> None:
    """Open, let another open grow the array and fill the new part, then write ``region``
    through the first open (whose shape is the old one): everything the other stored stays."""
    a = zarrdask.create_array(store, shape=shape, dtype="int32", fill_value=-1, overwrite=True, **layout)
    a[...] = np.arange(a.size, dtype="int32").reshape(shape)
    stale, other = (zarrdask.open_array(store, mode="r+").with_options(**options) for _ in range(2))
    added = tuple(grow if i == axis else n for i, n in enumerate(shape))
    other.append(1000 + np.arange(math.prod(added), dtype="int32").reshape(added), axis=axis)
    expected = other[...]
    part = tuple(s.stop - s.start for s in region)
    values = -2 - np.arange(math.prod(part), dtype="int32").reshape(part)
    expected[region] = values
    stale[region] = values
    np.testing.assert_array_equal(zarrdask.open_array(store)[...], expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_write_through_an_older_shape_keeps_what_others_stored_past_its_edge(tmp_path, data):
    # (the unit the old edge cuts is merged, not written whole with fill past the edge)
    _write_through_stale_open(str(tmp_path / f"{uuid.uuid4().hex}.zarr"), *_stale_write_case(data))


def test_a_write_through_an_older_shape_on_s3(s3_endpoint):
    store = FsspecStore(f"s3://{BUCKET}/{uuid.uuid4().hex}", storage_options=s3_storage_options(s3_endpoint))
    _write_through_stale_open(store, {"chunks": (2, 3), "shards": (4, 3)}, (5, 3), 0, 2, (slice(3, 5), slice(0, 3)))
    _write_through_stale_open(store, {"chunks": (4,)}, (6,), 0, 1, (slice(0, 6),))


class _Unguarded(MemoryStore):
    guard = None


def test_a_write_through_an_older_shape_on_an_unguarded_store_with_a_lock():
    # (no guard, but one lock serialising the writers: the cut unit is merged under it)
    _write_through_stale_open(_Unguarded(), {"chunks": (4,)}, (6,), 0, 1, (slice(0, 6),), lock=threading.Lock())


def test_resize_from_a_shape_another_writer_changed_is_refused(tmp_path):
    where = str(tmp_path / "a.zarr")
    zarrdask.create_array(where, shape=(6, 2), chunks=(4, 2), dtype="int32", fill_value=0)[...] = 1
    stale, other = (zarrdask.open_array(where, mode="r+") for _ in range(2))
    stale.resize((8, 2), from_shape=(6, 2))  # (the shape as stored: done)
    for new in [(10, 2), (3, 2)]:  # (growing; shrinking, whose edge reset would come first)
        with pytest.raises(WriteConflictError, match=r"shape as stored is \(8, 2\), not from_shape=\(6, 2\)"):
            other.resize(new, from_shape=other.shape)
    fresh = zarrdask.open_array(where)
    assert fresh.shape == (8, 2) and fresh[...].tolist() == [[1, 1]] * 6 + [[0, 0]] * 2
    other.resize(3, 2, from_shape=(8, 2))
    assert zarrdask.open_array(where)[...].tolist() == [[1, 1]] * 3
    with pytest.raises(ShapeMismatchError, match=r"resize's from_shape needs 2 non-negative integers, got \(3,\)"):
        other.resize((4, 2), from_shape=3)


def test_a_resize_through_an_older_shape_resets_by_the_stored_one(tmp_path):
    # (another open grew axis 1 since; shrinking both axes from this one resets and deletes
    # what lies past the new edges as stored, so growing again shows the fill value)
    where = str(tmp_path / "a.zarr")
    zarrdask.create_array(where, shape=(6, 3), chunks=(4, 4), dtype="int32", fill_value=0)[...] = 1
    stale = zarrdask.open_array(where, mode="r+")
    other = zarrdask.open_array(where, mode="r+")
    other.resize(6, 9)
    other[:, 3:] = 2
    stale.resize(5, 2)
    fresh = zarrdask.open_array(where, mode="r+")
    assert fresh.shape == (5, 2) and fresh[...].tolist() == [[1, 1]] * 5
    fresh.resize(6, 9)
    assert fresh[...].tolist() == [[1, 1] + [0] * 7] * 5 + [[0] * 9]
