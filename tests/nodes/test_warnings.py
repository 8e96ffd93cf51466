"""zarrdask's warnings point at the line the user wrote, however deep the call that warns
(an open through xarray's engine, a resize, a Dask graph), so Python's default filter shows
each once per line of theirs; and the decoded-chunk cache's warning is given once per open."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarrdask
from dask.array.core import PerformanceWarning

from zarrdask.errors import StaleConsolidatedMetadataWarning


def _caught(call) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    return seen


def test_the_cache_warning_names_the_value_and_a_fix_once_per_open():
    zarr = pytest.importorskip("zarr")
    store = zarr.storage.MemoryStore()
    zarrdask.create_array(store, shape=(4,), chunks=(2,), dtype="f8", fill_value=0)
    (seen,) = _caught(lambda: zarrdask.open_array(store, mode="r+", cache_bytes="1 MiB"))
    assert seen.filename == __file__
    assert "cache_bytes=1048576" in str(seen.message) and "open it by its path or URL" in str(seen.message)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarrdask.open_array(store, mode="r+", cache_bytes="1 MiB")
    assert _caught(lambda: (a.resize(6), a.append(np.ones(2)), a[...])) == []
    np.testing.assert_array_equal(a[...], [0, 0, 0, 0, 0, 0, 1, 1])


def test_warnings_from_deep_calls_point_at_the_callers_line(tmp_path: Path):
    path = tmp_path / "a.zarr"
    zarrdask.create_array(path, shape=(10,), chunks=(4,), dtype="f4", fill_value=0)
    (seen,) = _caught(lambda: zarrdask.from_zarr(path, chunks=3))
    assert seen.category is PerformanceWarning and seen.filename == __file__

    group = zarrdask.create_group(tmp_path / "u.zarr")
    group.create_array("a", shape=(3,), dtype="int32", chunks=(3,))
    (seen,) = [w for w in _caught(lambda: xr.open_dataset(tmp_path / "u.zarr", engine="zarrdask"))
               if "no dimension names" in str(w.message)]
    assert seen.filename == __file__  # (through xarray's open_dataset, not inside it)

    g = zarrdask.create_group(tmp_path / "c.zarr")
    g.create_array("a", shape=(2,), dtype="f4", chunks=(2,))
    zarrdask.consolidate_metadata(tmp_path / "c.zarr")
    zarrdask.create_array(tmp_path / "c.zarr" / "b", shape=(2,), dtype="f4", chunks=(2,))  # (not through g)
    opened = zarrdask.open_group(tmp_path / "c.zarr")
    (seen,) = _caught(lambda: opened["b"])
    assert seen.category is StaleConsolidatedMetadataWarning and seen.filename == __file__
