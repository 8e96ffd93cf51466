"""N5 containers read exact: written by TensorStore's ``n5`` driver (every compression and
data type it writes, shapes with edge blocks), read through open, open_array, open_group,
from_zarr and the xarray engine; N5's axes reversed to C order; n5-java's short edge
blocks; lz4 (no decoder here) refused by name. Written: create_array / to_zarr into a
``.n5`` location give what TensorStore's ``n5`` driver reads exact. Migrated only into a
new store."""

from __future__ import annotations

import json
import struct

import dask.array as da
import numpy as np
import pytest
import tensorstore as ts
import xarray as xr

import zarrdask
from zarrdask.errors import InvalidModeError, MetadataError

COMPRESSIONS = [{"type": "raw"}, {"type": "gzip"}, {"type": "gzip", "useZlib": True}, {"type": "bzip2"},
                {"type": "xz"}, {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
                {"type": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2}, {"type": "zstd"}]
TYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64"]


def _values(dtype, shape):
    """Values spanning the type (its extremes, negative, fractional where it has them)."""
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind == "f":
        values = (rng.standard_normal(shape) / 8 * float(np.finfo(dtype).max) / 8).astype(dtype)
        values.flat[:2] = [np.finfo(dtype).tiny, 0.5]
        return values
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values.flat[:2] = [info.min, info.max]
    return values


def _write_n5(path, n5_values, block, compression, axes=None):
    """A TensorStore N5 dataset at ``path``; ``n5_values`` in N5's axis order (TensorStore's)."""
    metadata = {"dimensions": list(n5_values.shape), "blockSize": list(block), "dataType": str(n5_values.dtype),
                "compression": compression, **({"axes": axes} if axes else {})}
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}, "metadata": metadata,
                 "create": True}).result()
    t[...] = n5_values
    return t


@pytest.mark.parametrize("compression", COMPRESSIONS, ids=lambda c: "-".join(map(str, c.values())))
def test_every_compression_reads_exact_through_every_entry_point(tmp_path, compression):
    root = tmp_path / "data.n5"
    (root).mkdir()
    (root / "attributes.json").write_text(json.dumps({"n5": "4.0.0", "title": "scan"}))
    n5_values = _values("uint16", (7, 5, 3))  # N5 order (x, y, z); edge blocks on every axis
    _write_n5(root / "raw", n5_values, (3, 2, 2), compression, axes=["x", "y", "z"])
    expected = n5_values.transpose()  # C order (z, y, x)

    a = zarrdask.open_array(str(root), path="raw")
    assert a.shape == (3, 5, 7) and a.chunks == (2, 2, 3) and a.metadata.dimension_names == ("z", "y", "x")
    np.testing.assert_array_equal(a[...], expected)
    np.testing.assert_array_equal(a[1:, 2:4, 5:], expected[1:, 2:4, 5:])
    np.testing.assert_array_equal(zarrdask.open(str(root / "raw"))[...], expected)
    group = zarrdask.open_group(str(root), mode="r")
    assert group.attrs.asdict() == {"title": "scan"} and group.array_keys() == ("raw",)
    np.testing.assert_array_equal(group["raw"][...], expected)
    np.testing.assert_array_equal(zarrdask.from_zarr(str(root), component="raw").compute(), expected)
    ds = xr.open_dataset(str(root), engine="zarrdask")
    assert ds["raw"].dims == ("z", "y", "x")
    np.testing.assert_array_equal(ds["raw"].values, expected)


@pytest.mark.parametrize("dtype", TYPES)
def test_every_data_type_reads_exact(tmp_path, dtype):
    n5_values = _values(dtype, (5, 4))
    _write_n5(tmp_path / "a.n5", n5_values, (2, 3), {"type": "gzip"})
    a = zarrdask.open_array(str(tmp_path / "a.n5"))
    assert a.dtype == np.dtype(dtype) and a.metadata.dimension_names is None
    np.testing.assert_array_equal(a[...], n5_values.T)


def test_chunk_keys_are_n5_block_paths(tmp_path):
    """Chunk (i, j) of the C-order array is N5's block j/i."""
    _write_n5(tmp_path / "a.n5", np.arange(12, dtype="int32").reshape(4, 3), (2, 2), {"type": "raw"})
    a = zarrdask.open_array(str(tmp_path / "a.n5"))
    assert a.metadata.chunk_key_encoding.encode((1, 0)) == "0/1"
    assert (tmp_path / "a.n5" / "0" / "1").is_file()


def test_short_edge_blocks_as_n5_java_writes_them(tmp_path):
    """n5-java, z5 and zarr-python 2 truncate edge blocks: the header carries the short shape."""
    root = tmp_path / "a.n5"
    (root / "1").mkdir(parents=True)
    (root / "attributes.json").write_text(json.dumps({"dimensions": [3, 2], "blockSize": [2, 2], "dataType": "int16",
                                                      "compression": {"type": "raw"}}))
    n5_values = np.arange(6, dtype="int16").reshape(3, 2) - 3
    for bx in (0, 1):  # N5 order (x, y): block bx/0 holds x in [2 bx, 2 bx + 2)
        block = n5_values[2 * bx:2 * bx + 2]
        header = struct.pack(">HHII", 0, 2, *block.shape)
        (root / str(bx) / "0").parent.mkdir(exist_ok=True)
        (root / str(bx) / "0").write_bytes(header + block.astype(">i2").tobytes(order="F"))
    np.testing.assert_array_equal(zarrdask.open_array(str(root))[...], n5_values.T)


def test_nested_groups_and_groups_without_attributes(tmp_path):
    root = tmp_path / "c.n5"
    _write_n5(root / "a" / "b" / "x", np.ones((2, 2), "uint8"), (2, 2), {"type": "raw"})
    (root / "a" / "attributes.json").write_text(json.dumps({"units": "nm"}))
    g = zarrdask.open_group(str(root), mode="r")
    assert g.group_keys() == ("a",) and g["a"].attrs.asdict() == {"units": "nm"}
    assert g["a"]["b"].array_keys() == ("x",)
    np.testing.assert_array_equal(g["a/b/x"][...], np.ones((2, 2), "uint8"))
    with pytest.raises(KeyError):
        g["missing"]


def test_lz4_is_refused_by_name(tmp_path):
    root = tmp_path / "a.n5"
    root.mkdir()
    (root / "attributes.json").write_text(json.dumps({"dimensions": [4], "blockSize": [2], "dataType": "uint8",
                                                      "compression": {"type": "lz4", "blockSize": 65536}}))
    with pytest.raises(MetadataError, match=r"attributes.json.*lz4.*no decoder") as err:
        zarrdask.open_array(str(root))
    assert "gzip, zstd or blosc" in str(err.value)


def test_a_container_that_is_one_dataset_opens_in_xarray_as_one_variable(tmp_path):
    """TensorStore writes a dataset at the container's root: xarray sees one variable."""
    n5_values = _values("float32", (5, 3))
    _write_n5(tmp_path / "scan.n5", n5_values, (2, 2), {"type": "zstd"}, axes=["x", "t"])
    ds = xr.open_dataset(str(tmp_path / "scan.n5"), engine="zarrdask")
    assert ds["scan.n5"].dims == ("t", "x")
    np.testing.assert_array_equal(ds["scan.n5"].values, n5_values.T)


def _tensorstore_reads(path):
    return ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}, open=True).result().read().result()


WRITE_COMPRESSORS = [None, {"name": "gzip", "configuration": {"level": 3}}, {"name": "numcodecs.zlib"},
                     {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
                     {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"}},
                     {"name": "numcodecs.bz2", "configuration": {"level": 5}}, {"name": "numcodecs.lzma"}]


@pytest.mark.parametrize("compressor", WRITE_COMPRESSORS, ids=lambda c: c["name"] if c else "raw")
def test_create_array_writes_what_tensorstore_reads(tmp_path, compressor):
    values = _values("int16", (5, 7, 3))
    a = zarrdask.create_array(str(tmp_path / "out.n5"), name="g/vol", shape=values.shape, dtype="int16",
                              chunks=(2, 3, 2), compressors=[compressor] if compressor else None,
                              dimension_names=["z", "y", "x"], attributes={"resolution": [1, 2, 3]})
    a[...] = values
    doc = json.loads((tmp_path / "out.n5" / "g" / "vol" / "attributes.json").read_text())
    assert doc["dimensions"] == [3, 7, 5] and doc["blockSize"] == [2, 3, 2] and doc["axes"] == ["x", "y", "z"]
    assert json.loads((tmp_path / "out.n5" / "attributes.json").read_text())["n5"]
    np.testing.assert_array_equal(_tensorstore_reads(tmp_path / "out.n5" / "g" / "vol"), values.T)
    b = zarrdask.open_array(str(tmp_path / "out.n5"), path="g/vol", mode="r+")
    np.testing.assert_array_equal(b[...], values)
    b[1:3, 2:6, 1] = -5
    b.attrs["note"] = "edited"
    values[1:3, 2:6, 1] = -5
    np.testing.assert_array_equal(_tensorstore_reads(tmp_path / "out.n5" / "g" / "vol"), values.T)
    assert zarrdask.open_group(str(tmp_path / "out.n5"), path="g")["vol"].attrs["note"] == "edited"


def test_to_zarr_writes_what_tensorstore_reads(tmp_path):
    values = _values("float64", (9, 10))
    zarrdask.to_zarr(da.from_array(values, chunks=(4, 5)), str(tmp_path / "out.n5"), component="vol")
    np.testing.assert_array_equal(_tensorstore_reads(tmp_path / "out.n5" / "vol"), values.T)
    np.testing.assert_array_equal(zarrdask.from_zarr(str(tmp_path / "out.n5"), component="vol").compute(), values)


@pytest.mark.parametrize("keywords, message", [
    ({"fill_value": 3}, "N5 has no fill value"),
    ({"shards": (4, 4)}, "no filters, serializer or shards"),
    ({"dtype": "float16"}, "N5 has no data type 'float16'"),
    ({"compressors": [{"name": "numcodecs.lz4"}]}, "N5 holds one compressor"),
    ({"attributes": {"dimensions": [1]}}, "rename"),
])
def test_what_n5_cannot_hold_is_refused_before_anything_is_written(tmp_path, keywords, message):
    spec = {"shape": (4, 4), "dtype": "uint8", "chunks": (2, 2), **keywords}
    with pytest.raises(MetadataError, match=message):
        zarrdask.create_array(str(tmp_path / "out.n5"), name="a", **spec)
    assert not (tmp_path / "out.n5").exists()


def test_migrate_in_place_is_refused_with_the_way_out_and_copy_converts(tmp_path):
    """N5 blocks have no Zarr v3 form other readers take: migrate needs a target (its
    conversions: tests/tools/test_migrate_n5.py); copy writes the same Zarr v3."""
    _write_n5(tmp_path / "a.n5", np.arange(4, dtype="uint8").reshape(2, 2), (2, 2), {"type": "raw"})
    with pytest.raises(InvalidModeError, match=r"N5 container.*needs a copy.*target=new_store"):
        zarrdask.migrate(str(tmp_path / "a.n5"))
    copied = zarrdask.copy(str(tmp_path / "a.n5"), str(tmp_path / "b.zarr"))
    assert copied.zarr_format == 3 and copied.metadata.source_format is None
    np.testing.assert_array_equal(copied[...], np.arange(4, dtype="uint8").reshape(2, 2).T)
