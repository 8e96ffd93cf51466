"""Arrays and groups on a real S3 API (moto's server on 127.0.0.1) through s3:// URLs."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from _s3 import s3_storage_options

import zarrdask

pytestmark = pytest.mark.s3


def test_sharded_array_on_s3(s3_url, s3_endpoint):
    options = s3_storage_options(s3_endpoint)
    data = np.arange(40 * 30, dtype="float32").reshape(40, 30)
    a = zarrdask.create_array(f"{s3_url}/a.zarr", shape=data.shape, dtype="f4", chunks=(5, 5), shards=(20, 15),
                              storage_options=options, dimension_names=["y", "x"])
    a[...] = data
    b = zarrdask.open_array(f"{s3_url}/a.zarr", storage_options=options)
    np.testing.assert_array_equal(b[...], data)
    np.testing.assert_array_equal(b[3:9, 14:17], data[3:9, 14:17])
    assert b.dimension_names == ("y", "x")
    z = zarr.open_array(f"{s3_url}/a.zarr", mode="r", storage_options=options)
    np.testing.assert_array_equal(z[...], data)


def test_group_consolidated_on_s3(s3_url, s3_endpoint):
    options = s3_storage_options(s3_endpoint)
    g = zarrdask.create_group(f"{s3_url}/g.zarr", storage_options=options, attributes={"a": 1})
    g.create_array("v", shape=(4,), dtype="i2", chunks=(2,))[...] = [1, 2, 3, 4]
    zarrdask.consolidate_metadata(f"{s3_url}/g.zarr", storage_options=options)
    back = zarrdask.open_group(f"{s3_url}/g.zarr", storage_options=options)
    assert back.consolidated and back["v"][...].tolist() == [1, 2, 3, 4] and dict(back.attrs) == {"a": 1}
