"""The fill value an array gets when none is given, and what a v2 array without one (null)
reads as: zarr-python 3's choices (its ``create_array`` defaults and its reads of null),
checked against the peer in ``tests/interop/test_zarr34_interop.py``."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("dtype", "document", "item"), [
    ("<M8[s]", -2**63, np.datetime64("NaT")), ("<m8[ms]", -2**63, np.timedelta64("NaT")),
    ("<f4", 0.0, 0.0), ("<U3", "", ""), (str, "", ""),
])
def test_an_array_created_without_a_fill_value_reads_its_types_default(tmp_path, zarr_format, dtype, document, item):
    path = tmp_path / "a.zarr"
    a = zarrdask.create_array(str(path), shape=(4,), chunks=(2,), dtype=dtype, zarr_format=zarr_format)
    doc = json.loads((path / (".zarray" if zarr_format == 2 else "zarr.json")).read_text())
    assert doc["fill_value"] == document
    got = a[...]
    if isinstance(item, (np.datetime64, np.timedelta64)):
        assert np.isnat(got).all()
    else:
        assert got.tolist() == [item] * 4


def test_v2_records_and_bytes_get_zero_and_empty_fill_values(tmp_path):
    records = zarrdask.create_array(str(tmp_path / "r.zarr"), shape=(2,), chunks=(2,), zarr_format=2,
                                    dtype=np.dtype([("a", "<i4"), ("b", "<f8")]))
    assert json.loads((tmp_path / "r.zarr" / ".zarray").read_text())["fill_value"] == "AAAAAAAAAAAAAAAA"
    assert records[...].tolist() == [(0, 0.0), (0, 0.0)]
    items = zarrdask.create_array(str(tmp_path / "b.zarr"), shape=(2,), chunks=(2,), zarr_format=2, dtype=bytes)
    assert json.loads((tmp_path / "b.zarr" / ".zarray").read_text())["fill_value"] == ""
    assert items.fill_value == b"" and items[...].tolist() == [b"", b""]


@pytest.mark.parametrize("dtype", ["<M8[s]", "<m8[us]"])
def test_a_v2_date_array_without_a_fill_value_reads_nat_where_unwritten(dtype):
    doc = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": dtype, "compressor": None, "fill_value": None,
           "order": "C", "filters": None}
    store = {".zarray": json.dumps(doc).encode(), "0": np.arange(2, dtype="<i8").tobytes()}
    got = zarrdask.open_array(store)[...]
    assert got[:2].astype("i8").tolist() == [0, 1] and np.isnat(got[2:]).all()
