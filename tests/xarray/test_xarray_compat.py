"""xarray's own backend test-suite (``CFEncodedBase``) run against zarrdask.

Every inherited test writes with ``zarrdask.xarray_backend.to_zarr`` and reads with
``engine="zarrdask"``, for Zarr v3 and v2. Overrides are the ones xarray's own
``ZarrBase`` makes for the zarr engine (netCDF-only behaviour), each with its reason.
Needs the markers xarray's suite uses registered (``asyncio``, ``flaky``,
``network``, ``skip_if_param``, ``skip_with_dask_array``) in ``tests/conftest.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import xarray as xr
import zarr
from xarray.tests import create_test_data
from xarray.tests.conftest import time_unit, use_dask  # noqa: F401  (fixtures of inherited tests)
from xarray.tests.test_backends import MASK_AND_SCALE_DATA, CFEncodedBase, ZarrBase, create_tmp_file

from zarrdask.xarray_backend import to_zarr
from zarrdask.xarray_backend.write_store import ZarrdaskWritableStore, open_group_for_write


class ZarrdaskCFBase(CFEncodedBase):
    """``CFEncodedBase`` with zarrdask's writer and ``engine="zarrdask"``."""

    engine = "zarrdask"
    zarr_format: int
    #: keywords ``open`` drops, as ``engine="zarr"`` does (see ``test_zarr_fill_value_setting``)
    dropped_open_keywords: tuple[str, ...] = ()

    @pytest.fixture(autouse=True)
    def _default_zarr_format(self) -> Iterator[None]:
        """ZarrBase tests read the format from zarr-python's config (xarray's own
        ``default_zarr_format`` fixture)."""
        with zarr.config.set(default_zarr_format=self.zarr_format):
            yield

    def save(self, dataset: xr.Dataset, path: Any, **kwargs: Any) -> Any:
        return to_zarr(dataset, path, zarr_format=self.zarr_format, **kwargs)

    @contextlib.contextmanager
    def open(self, path: Any, **kwargs: Any) -> Iterator[xr.Dataset]:
        for name in self.dropped_open_keywords:
            kwargs.pop(name, None)
        with xr.open_dataset(path, engine="zarrdask", **kwargs) as ds:
            yield ds

    @contextlib.contextmanager
    def create_store(self) -> Iterator[ZarrdaskWritableStore]:
        with create_tmp_file() as path:
            group = open_group_for_write(
                path, mode="w", path=None, zarr_format=self.zarr_format, storage_options=None
            )
            yield ZarrdaskWritableStore(group, mode="w")

    @pytest.mark.parametrize("decoded_fn, encoded_fn", MASK_AND_SCALE_DATA)
    @pytest.mark.parametrize(
        "dtype",
        [
            np.dtype("float64"),
            pytest.param(
                np.dtype("float32"),
                marks=pytest.mark.xfail(
                    strict=True,
                    reason="JSON attributes keep no float32 scale_factor, so packed data "
                    "decodes to float64 (xarray's ZarrBase skips these too)",
                ),
            ),
        ],
    )
    def test_roundtrip_mask_and_scale(
        self, decoded_fn: Any, encoded_fn: Any, dtype: np.dtype
    ) -> None:
        super().test_roundtrip_mask_and_scale(decoded_fn, encoded_fn, dtype)

    def test_encoding_kwarg_fixed_width_string(self) -> None:
        """Zarr keeps strings as strings: ``encoding["dtype"] = "S1"`` does not become a
        character array (as in xarray's ZarrBase, which skips this netCDF test)."""
        for strings in [[b"foo", b"bar", b"baz"], ["foo", "bar", "baz"]]:
            ds = xr.Dataset({"x": strings})
            with self.roundtrip(ds, save_kwargs={"encoding": {"x": {"dtype": "S1"}}}) as actual:
                xr.testing.assert_identical(actual, ds)

    @pytest.mark.xfail(
        strict=True, raises=TypeError, reason="Zarr has no unlimited dimensions: no such keyword"
    )
    def test_encoding_unlimited_dims(self) -> None:
        super().test_encoding_unlimited_dims()

    def test_load_async(self) -> None:
        """xarray's async test, run with ``asyncio.run`` (no pytest-asyncio needed)."""
        asyncio.run(super().test_load_async())

    @pytest.mark.parametrize("dtype", [int, float])
    def test_zarr_fill_value_setting(self, dtype: type) -> None:
        """xarray's ZarrBase test: v2 ``encoding={"_FillValue": fv}`` sets the Zarr
        ``fill_value`` (v3: ``encoding={"fill_value": fv}``), and v2 refuses ``fill_value``.
        Its reads pass ``use_zarr_fill_value_as_mask=False``, which ``engine="zarr"`` drops
        (it opens with None; xarray#10269) and zarrdask honours, so the reads here drop it
        too: they are the reads xarray's engine makes, which the expected values assume."""
        self.dropped_open_keywords = ("use_zarr_fill_value_as_mask",)
        ZarrBase.test_zarr_fill_value_setting(self, dtype)

    def test_append_with_invalid_dim_raises(self) -> None:
        """Zarr's message differs from netCDF's (as in xarray's ZarrBase)."""
        data = create_test_data()
        with create_tmp_file(allow_cleanup_failure=False) as tmp_file:
            self.save(data, tmp_file, mode="w")
            data["var9"] = data["var2"] * 3
            data = data.isel(dim1=slice(2, 6))
            with pytest.raises(ValueError, match="different dimension sizes"):
                self.save(data, tmp_file, mode="a")


class TestZarrdaskCFv3(ZarrdaskCFBase):
    zarr_format = 3

    def test_zarr_fill_value_in_encoding_on_read(self) -> None:
        """xarray's ZarrBase test (v3 only there too): the Zarr ``fill_value`` is kept in
        ``encoding`` on read and survives open -> write -> open."""
        ZarrBase.test_zarr_fill_value_in_encoding_on_read(self)


class TestZarrdaskCFv2(ZarrdaskCFBase):
    zarr_format = 2
