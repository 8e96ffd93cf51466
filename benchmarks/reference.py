"""Reference data sets shared by the dask and xarray scenarios, written once by the peers.

They are written by zarr-python / xarray's own zarr engine (the reference implementation), so
every library reads bytes none of them is biased towards. They are cached under the data
directory with a stamp naming their parameters, and rewritten when the parameters change.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np

from harness import Geometry, make_data, rmtree
from libs import LIB_OBJECTS, Layout

STAMP_VERSION = 1


def _fresh(path: str, params: dict) -> bool:
    stamp = path + ".stamp.json"
    if not os.path.isdir(path) or not os.path.exists(stamp):
        return False
    try:
        with open(stamp) as f:
            return json.load(f) == params
    except (OSError, ValueError):
        return False


def _stamp(path: str, params: dict) -> None:
    with open(path + ".stamp.json", "w") as f:
        json.dump(params, f)


def sharded_array(geom: Geometry, data_dir: str) -> str:
    """The small-inner-chunk sharded array, written by zarr-python."""
    path = os.path.join(data_dir, "ref", "sharded_array.zarr")
    params = {"v": STAMP_VERSION, "shape": geom.shape, "shard": geom.shard, "inner": geom.inner}
    params = json.loads(json.dumps(params))
    if not _fresh(path, params):
        print(f"  .. writing reference sharded array with zarr-python: {path}", flush=True)
        rmtree(path)
        LIB_OBJECTS["zarr-python"].write(path, make_data(geom.shape), Layout(geom.inner, geom.shard))
        _stamp(path, params)
    return path


def climate_dataset(geom: Geometry, data_dir: str) -> str:
    """A (time, lat, lon) dataset with one sharded float32 variable, written by xarray's zarr engine."""
    import pandas as pd
    import xarray as xr
    from zarr.codecs import ZstdCodec

    path = os.path.join(data_dir, "ref", "climate_sharded.zarr")
    params = {"v": STAMP_VERSION, "shape": geom.shape, "shard": geom.shard, "inner": geom.inner}
    params = json.loads(json.dumps(params))
    if not _fresh(path, params):
        print(f"  .. writing reference climate dataset with xarray engine=zarr: {path}", flush=True)
        rmtree(path)
        t, y, x = geom.shape
        ds = xr.Dataset(
            {"t2m": (("time", "lat", "lon"), make_data(geom.shape), {"units": "K", "long_name": "2 m temperature"})},
            coords={
                "time": pd.date_range("2000-01-01", periods=t, freq="D"),
                "lat": np.linspace(-90, 90, y, dtype="f8"),
                "lon": np.linspace(0, 360, x, endpoint=False, dtype="f8"),
            },
            attrs={"title": "zarrdask benchmark data"},
        )
        enc = {"t2m": {"chunks": geom.inner, "shards": geom.shard, "compressors": [ZstdCodec(level=1)]}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_zarr(path, mode="w", zarr_format=3, consolidated=True, encoding=enc)
        _stamp(path, params)
    return path


def many_variables_dataset(data_dir: str, n_vars: int = 50) -> str:
    """A dataset of ``n_vars`` small (time, lat, lon) float32 variables with attributes."""
    import pandas as pd
    import xarray as xr

    path = os.path.join(data_dir, "ref", f"vars{n_vars}.zarr")
    params = {"v": STAMP_VERSION, "n_vars": n_vars}
    if not _fresh(path, params):
        print(f"  .. writing reference {n_vars}-variable dataset with xarray engine=zarr: {path}", flush=True)
        rmtree(path)
        rng = np.random.default_rng(2)
        t, y, x = 24, 45, 90
        data_vars = {
            f"var{i:02d}": (
                ("time", "lat", "lon"),
                rng.standard_normal((t, y, x), dtype=np.float32),
                {"units": "1", "long_name": f"variable number {i}", "cell_methods": "time: mean"},
            )
            for i in range(n_vars)
        }
        ds = xr.Dataset(
            data_vars,
            coords={
                "time": pd.date_range("2000-01-01", periods=t, freq="MS"),
                "lat": np.linspace(-90, 90, y),
                "lon": np.linspace(0, 360, x, endpoint=False),
            },
            attrs={"title": f"{n_vars} variables"},
        )
        enc = {name: {"chunks": (12, 45, 90)} for name in data_vars}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_zarr(path, mode="w", zarr_format=3, consolidated=True, encoding=enc)
        _stamp(path, params)
    return path
