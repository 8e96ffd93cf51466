"""Object, string and bytes variables of any shape (0-d, 1-d, n-d; coordinates and data
variables; v2 and v3) read identically to ``engine="zarr"`` under every indexing form,
lazily and dask-chunked, whichever engine wrote them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from zarrdask.xarray_backend.backend import ZarrdaskBackendEntrypoint

pytest.importorskip("zarr")


def _dataset() -> xr.Dataset:
    return xr.Dataset(
        {"names2d": (("x", "y"), np.array([["a", "bb", "ccc"], ["d", "", "ffff"]], dtype=object)),
         "scalar": ((), np.array("only", dtype=object)),
         "raw": (("x",), np.array([b"ab", b"c"], dtype=object)),
         "fixed": (("y",), np.array(["u", "vv", "www"], dtype="U3")),
         "fixedb": (("y",), np.array([b"u", b"vv", b"www"], dtype="S3")),
         "val": (("x", "y"), np.arange(6.0).reshape(2, 3))},
        coords={"station": ("x", np.array(["alpha", "beta"], dtype=object)), "y": ["p", "q", "r"]})


SELECTIONS = [
    {}, {"x": 0}, {"x": 0, "y": 1}, {"x": [1, 0]}, {"y": slice(None, None, -1)}, {"y": slice(1, None)},
    {"x": xr.DataArray([0, 1, 1], dims="k"), "y": xr.DataArray([2, 0, 1], dims="k")},
]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("writer", ["xarray", "zarrdask"])
@pytest.mark.parametrize("chunks", [None, {}], ids=["lazy", "dask"])
def test_string_variables_read_as_engine_zarr(tmp_path, zarr_format, writer, chunks):
    ds = _dataset()
    path = str(tmp_path / "s.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if writer == "xarray":
            ds.to_zarr(path, mode="w", zarr_format=zarr_format, consolidated=False)
        else:
            ds.zarrdask.to_zarr(path, mode="w", zarr_format=zarr_format)
        ref = xr.open_dataset(path, engine="zarr", chunks=chunks, consolidated=False)
    got = xr.open_dataset(path, engine=ZarrdaskBackendEntrypoint, chunks=chunks)
    for sel in SELECTIONS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = ref.isel(sel).load()
        xr.testing.assert_identical(got.isel(sel).load(), expected)
    xr.testing.assert_identical(got.sel(y="q").load(), ref.sel(y="q").load())
    assert got["scalar"].values.dtype == object and got["scalar"].values[()] == "only"
    assert got["station"][0].values.dtype == object
