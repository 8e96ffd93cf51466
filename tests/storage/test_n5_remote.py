"""N5 containers on remote stores: read through a moto S3 server (``s3://bucket/x.n5`` with
``storage_options``; also a container found by its root ``attributes.json`` alone) and a
loopback HTTP server (read only; with and without directory indexes), through open,
open_array, open_group, from_zarr and the xarray engine; written to S3 by create_array and
to_zarr (TensorStore's ``n5`` driver reads it back from the same bucket); migrated from S3
to S3. Values bit-exact, N5's axes reversed to C order."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import s3fs
import tensorstore as ts
import xarray as xr
import zarr
from _http import LoopbackServer
from _s3 import BUCKET, s3_storage_options

import zarrdask
from zarrdask.errors import NodeNotFoundError, ReadOnlyError

pytestmark = pytest.mark.s3

VOL = np.arange(7 * 5 * 3, dtype="int32").reshape(7, 5, 3) * -977  # N5 order (x, y, z)
LAB = np.arange(6 * 4, dtype="uint8").reshape(6, 4)  # N5 order (x, y)


def _container(root: Path) -> Path:
    """A container: root attributes; group ``g`` without attributes.json (found by listing)
    holding ``vol`` (gzip, edge blocks on every axis); group ``h`` with attributes holding
    ``lab`` (blosc)."""
    root.mkdir(parents=True)
    (root / "attributes.json").write_text(json.dumps({"n5": "4.0.0", "title": "scan"}))
    for rel, values, block, compression, axes in [
            ("g/vol", VOL, (3, 2, 2), {"type": "gzip"}, ["x", "y", "z"]),
            ("h/lab", LAB, (4, 4), {"type": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 1}, ["x", "y"])]:
        metadata = {"dimensions": list(values.shape), "blockSize": list(block), "dataType": str(values.dtype),
                    "compression": compression, "axes": axes}
        t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(root / rel)}, "metadata": metadata,
                     "create": True}).result()
        t[...] = values
    (root / "h" / "attributes.json").write_text(json.dumps({"units": "nm"}))
    return root


def _bucket(endpoint: str) -> s3fs.S3FileSystem:
    return s3fs.S3FileSystem(**s3_storage_options(endpoint), skip_instance_cache=True)


def _uploaded(tmp_path: Path, endpoint: str, name: str = "c.n5") -> str:
    """The container uploaded to a fresh prefix of the bucket; its ``s3://`` URL."""
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/{name}"
    _bucket(endpoint).put(str(_container(tmp_path / "c.n5")) + "/", url, recursive=True)
    return url


def _assert_reads(url: str, **options) -> None:
    """Every way in reads the container at ``url`` exact."""
    vol, lab = VOL.transpose(), LAB.transpose()
    a = zarrdask.open_array(url, path="g/vol", **options)
    assert a.shape == (3, 5, 7) and a.dimension_names == ("z", "y", "x")
    assert a[...].tobytes() == vol.tobytes()
    assert a[1:, 2:4, 5:].tobytes() == vol[1:, 2:4, 5:].tobytes()
    assert zarrdask.open(f"{url}/h/lab", **options)[...].tobytes() == lab.tobytes()
    g = zarrdask.open_group(url, mode="r", **options)
    assert g.attrs.asdict() == {"title": "scan"} and g["h"].attrs.asdict() == {"units": "nm"}
    assert g["h/lab"][...].tobytes() == lab.tobytes()
    assert zarrdask.from_zarr(url, component="g/vol", **options).compute().tobytes() == vol.tobytes()
    with xr.open_dataset(f"{url}/h/lab", engine="zarrdask", **options) as ds:  # a dataset alone: one variable
        assert ds["lab"].dims == ("y", "x") and ds["lab"].values.tobytes() == lab.tobytes()


def _assert_lists(url: str, **options) -> None:
    """What needs a listing: a group's members, a group without attributes.json."""
    g = zarrdask.open_group(url, mode="r", **options)
    assert g.group_keys() == ("g", "h") and g["g"].array_keys() == ("vol",)
    with xr.open_dataset(url, engine="zarrdask", group="g", **options) as ds:
        assert ds["vol"].dims == ("z", "y", "x") and ds["vol"].values.tobytes() == VOL.transpose().tobytes()


def test_s3_reads_every_way_in(tmp_path, s3_endpoint):
    url = _uploaded(tmp_path, s3_endpoint)
    options = {"storage_options": s3_storage_options(s3_endpoint)}
    _assert_reads(url, **options)
    _assert_lists(url, **options)


def test_s3_container_found_by_its_root_attributes_without_the_suffix(tmp_path, s3_endpoint):
    url = _uploaded(tmp_path, s3_endpoint, name="container")
    options = {"storage_options": s3_storage_options(s3_endpoint)}
    _assert_reads(url, **options)
    _assert_lists(url, **options)


def _tensorstore_s3(endpoint: str, url: str) -> np.ndarray:
    """TensorStore's ``n5`` driver reading the dataset at ``url`` from the moto bucket."""
    path = url.removeprefix(f"s3://{BUCKET}/") + "/"
    spec = {"driver": "n5", "kvstore": {"driver": "s3", "bucket": BUCKET, "path": path, "endpoint": endpoint,
                                        "aws_region": "us-east-1"}}
    return ts.open(spec, open=True).result().read().result()


def test_s3_writes_n5_that_tensorstore_reads_from_the_bucket(s3_url, s3_endpoint):
    options = s3_storage_options(s3_endpoint)
    values = VOL.transpose().copy()
    g = zarrdask.create_group(f"{s3_url}/w.n5", attributes={"made": "here"}, storage_options=options)
    a = g.create_array("vol", shape=values.shape, dtype="int32", chunks=(2, 2, 3), dimension_names=["z", "y", "x"],
                       compressors=[{"name": "gzip", "configuration": {"level": 3}}])
    a[...] = values
    a[1:, 1:3, 2:6] = 17  # a region write: read-modify-write of N5 blocks on S3
    values[1:, 1:3, 2:6] = 17
    keys = _bucket(s3_endpoint).find(f"{s3_url}/w.n5")
    assert f"{s3_url}/w.n5/vol/attributes.json".removeprefix("s3://") in keys
    assert not any(k.endswith("zarr.json") for k in keys)
    assert _tensorstore_s3(s3_endpoint, f"{s3_url}/w.n5/vol").tobytes() == values.T.tobytes()
    b = zarrdask.open_array(f"{s3_url}/w.n5", path="vol", storage_options=options)
    assert b.metadata.source_format == "N5" and b[...].tobytes() == values.tobytes()
    dask_values = np.random.default_rng(0).standard_normal((9, 10))
    zarrdask.to_zarr(da.from_array(dask_values, chunks=(4, 5)), f"{s3_url}/d.n5", component="x",
                     storage_options=options)
    assert _tensorstore_s3(s3_endpoint, f"{s3_url}/d.n5/x").tobytes() == dask_values.T.tobytes()


def test_migrate_from_s3_to_s3(tmp_path, s3_endpoint, s3_url):
    url = _uploaded(tmp_path, s3_endpoint)
    options = s3_storage_options(s3_endpoint)
    nodes = zarrdask.migrate(url, storage_options=options, target=f"{s3_url}/m.zarr", target_storage_options=options)
    assert [n.key for n in nodes] == ["zarr.json", "g/zarr.json", "g/vol/zarr.json", "h/zarr.json", "h/lab/zarr.json"]
    z = zarr.open_group(f"{s3_url}/m.zarr", mode="r", storage_options=options)
    assert z.attrs.asdict() == {"title": "scan"} and z["h"].attrs.asdict() == {"units": "nm"}
    assert z["g/vol"][...].tobytes() == VOL.transpose().tobytes()
    assert z["h/lab"][...].tobytes() == LAB.transpose().tobytes()
    assert zarrdask.open_array(f"{s3_url}/m.zarr", path="g/vol", storage_options=options).dimension_names == \
        ("z", "y", "x")


def test_http_reads_every_way_in_and_lists_where_the_server_indexes(tmp_path):
    _container(tmp_path / "c.n5")
    with LoopbackServer(root=str(tmp_path), listing=True) as server:
        _assert_reads(f"{server.url}/c.n5")
        _assert_lists(f"{server.url}/c.n5")


def test_http_without_directory_indexes(tmp_path):
    """Without a listing only what has a document is found: arrays, groups with
    attributes.json; a group's members and a group without attributes.json need a
    listing, which the error says."""
    _container(tmp_path / "c.n5")
    with LoopbackServer(root=str(tmp_path)) as server:
        url = f"{server.url}/c.n5"
        _assert_reads(url)
        assert zarrdask.open_group(url, mode="r").group_keys() == ()
        with pytest.raises(NodeNotFoundError, match=r"'g'.*N5 group without attributes\.json.*listing"):
            zarrdask.open_group(url, path="g", mode="r")


def test_http_is_read_only(tmp_path):
    _container(tmp_path / "c.n5")
    with LoopbackServer(root=str(tmp_path)) as server:
        with pytest.raises(ReadOnlyError):
            zarrdask.open_array(f"{server.url}/c.n5", path="h/lab", mode="r+")[0, 0] = 1
        with pytest.raises(ReadOnlyError):
            zarrdask.create_array(f"{server.url}/new.n5", name="a", shape=(2,), dtype="uint8")
    assert not (tmp_path / "new.n5").exists()
