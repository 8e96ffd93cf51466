"""``migrate`` (and ``copy``) of N5 containers to Zarr v3 in a new store: containers written
by TensorStore's ``n5`` driver (every compression, every data type, edge blocks), by
n5-java's way of truncating edge blocks and by zarrdask's own N5 writer come out as plain
Zarr v3 (little-endian ``bytes`` and N5's compressor) that zarrdask, zarr-python and
TensorStore's ``zarr3`` driver read bit-exact, with groups, attributes and dimension names
(N5's axes reversed) kept; missing and all-zero blocks stay absent; in place is refused."""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import tensorstore as ts
import xarray as xr
import zarr

import zarrdask
from zarrdask.errors import ContainsNodeError, InvalidModeError, MetadataError

COMPRESSIONS = [{"type": "raw"}, {"type": "gzip"}, {"type": "gzip", "useZlib": True}, {"type": "bzip2"},
                {"type": "xz"}, {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
                {"type": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2}, {"type": "zstd"}]
TYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64"]


def _values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values spanning the type: its extremes, and for floats -0.0, NaN with a payload, inf."""
    rng = np.random.default_rng(1)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        values = (rng.standard_normal(shape) * 1e3).astype(dt)
        bits = np.dtype(f"u{dt.itemsize}")
        nan = np.array([0x7FC00123 if dt.itemsize == 4 else 0x7FF8000000000123], dtype=bits).view(dt)[0]
        values.flat[:5] = [-0.0, nan, np.inf, np.finfo(dt).max, np.finfo(dt).tiny]
        return values
    info = np.iinfo(dt)
    values = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    values.flat[:2] = [info.min, info.max]
    return values


def _tensorstore_n5(path: Path, n5_values: np.ndarray, block, compression, axes=None) -> None:
    """A TensorStore N5 dataset at ``path``; ``n5_values`` in N5's axis order."""
    metadata = {"dimensions": list(n5_values.shape), "blockSize": list(block), "dataType": str(n5_values.dtype),
                "compression": compression, **({"axes": axes} if axes else {})}
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}, "metadata": metadata,
                 "create": True}).result()
    t[...] = n5_values


def _container(root: Path, n5_values: np.ndarray, compression: dict, block=(3, 2, 2)) -> np.ndarray:
    """A container: root attributes, a group with attributes, a dataset with axes and
    attributes of its own; returns the dataset's values in C order."""
    root.mkdir()
    (root / "attributes.json").write_text(json.dumps({"n5": "4.0.0", "title": "scan"}))
    _tensorstore_n5(root / "g" / "vol", n5_values, block, compression, axes=["x", "y", "z"][:n5_values.ndim])
    (root / "g" / "attributes.json").write_text(json.dumps({"units": "nm"}))
    doc = json.loads((root / "g" / "vol" / "attributes.json").read_text())
    (root / "g" / "vol" / "attributes.json").write_text(json.dumps({**doc, "resolution": [4, 4, 40], "note": "é"}))
    return n5_values.transpose()


def _zarr_python(path: Path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns about numcodecs.* codecs
        return zarr.open_array(path, mode="r")[...]


def _assert_bits(got: np.ndarray, want: np.ndarray, who: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, who
    assert got.tobytes() == want.tobytes(), f"{who}: values differ"


def _assert_read_by_all(array_path: Path, want: np.ndarray) -> None:
    """zarrdask, zarr-python and (where it has every codec) TensorStore's zarr3 read ``want``."""
    _assert_bits(zarrdask.open_array(array_path)[...], want, "zarrdask")
    _assert_bits(_zarr_python(array_path), want, "zarr-python")
    doc = json.loads((array_path / "zarr.json").read_text())
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(array_path)}}
    if any(c["name"].startswith("numcodecs.") for c in doc["codecs"]):  # (not TensorStore's)
        with pytest.raises(ValueError, match="is not registered"):
            ts.open(spec).result()
    else:
        _assert_bits(ts.open(spec).result().read().result(), want, "tensorstore")


@pytest.mark.parametrize("compression", COMPRESSIONS, ids=lambda c: "-".join(map(str, c.values())))
def test_every_compression_migrates_bit_exact(tmp_path, compression):
    want = _container(tmp_path / "in.n5", _values("uint16", (7, 5, 3)), compression)  # edge blocks on every axis
    nodes = zarrdask.migrate(tmp_path / "in.n5", target=tmp_path / "out.zarr")
    assert [n.key for n in nodes] == ["zarr.json", "g/zarr.json", "g/vol/zarr.json"]
    assert all(n.removed == () for n in nodes)
    out = tmp_path / "out.zarr"
    _assert_read_by_all(out / "g" / "vol", want)
    doc = json.loads((out / "g" / "vol" / "zarr.json").read_text())
    assert doc == nodes[2].document
    assert doc["shape"] == [3, 5, 7] and doc["chunk_grid"]["configuration"]["chunk_shape"] == [2, 2, 3]
    assert doc["dimension_names"] == ["z", "y", "x"] and doc["fill_value"] == 0
    assert doc["chunk_key_encoding"] == {"name": "default", "configuration": {"separator": "/"}}
    assert doc["codecs"][0] == {"name": "bytes", "configuration": {"endian": "little"}} and len(doc["codecs"]) <= 2
    assert doc["attributes"] == {"resolution": [4, 4, 40], "note": "é"}  # as they were (N5's axis order)
    g = zarrdask.open_group(out, mode="r")
    assert g.zarr_format == 3 and g.attrs.asdict() == {"title": "scan"} and g["g"].attrs.asdict() == {"units": "nm"}
    assert not list(out.rglob("attributes.json")) and zarrdask.verify(out).ok
    assert zarr.open_group(out, mode="r").attrs.asdict() == {"title": "scan"}


@pytest.mark.parametrize("dtype", TYPES)
def test_every_data_type_migrates_bit_exact(tmp_path, dtype):
    n5_values = _values(dtype, (5, 4))
    _tensorstore_n5(tmp_path / "a.n5", n5_values, (2, 3), {"type": "blosc", "cname": "zstd", "clevel": 5,
                                                           "shuffle": 1})
    zarrdask.migrate(tmp_path / "a.n5", target=tmp_path / "a.zarr")  # a dataset at the container's root
    _assert_read_by_all(tmp_path / "a.zarr", n5_values.T)
    assert json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())["codecs"][1]["configuration"]["typesize"] \
        == np.dtype(dtype).itemsize


def _short_block(n5_block: np.ndarray, compression: str) -> bytes:
    """An N5 block as n5-java writes one at an edge: the header carries its own short shape."""
    header = struct.pack(f">HH{n5_block.ndim}I", 0, n5_block.ndim, *n5_block.shape)
    data = n5_block.astype(n5_block.dtype.newbyteorder(">")).tobytes(order="F")
    return header + (gzip.compress(data) if compression == "gzip" else data)


def test_missing_and_all_zero_blocks_stay_absent(tmp_path):
    """N5 readers fill missing blocks with 0; so does the v3 array (fill value 0). A block of
    -0.0 is not zero bit for bit: it is written."""
    n5_values = np.zeros((6, 4), "float32")
    metadata = {"dimensions": [6, 4], "blockSize": [2, 2], "dataType": "float32", "compression": {"type": "gzip"}}
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(tmp_path / "a.n5")},
                 "metadata": metadata, "create": True}).result()
    t[0:2, 0:2] = 1.5  # N5 block 0/0
    t[4:6, 0:2] = -0.0  # block 2/0
    (tmp_path / "a.n5" / "1").mkdir()  # block 1/1 stored, all zero (TensorStore stores none such)
    (tmp_path / "a.n5" / "1" / "1").write_bytes(_short_block(np.zeros((2, 2), "float32"), "gzip"))
    n5_values[0:2, 0:2] = 1.5
    n5_values[4:6, 0:2] = -0.0
    assert sorted(p.relative_to(tmp_path / "a.n5").as_posix() for p in (tmp_path / "a.n5").rglob("*")
                  if p.is_file() and p.name != "attributes.json") == ["0/0", "1/1", "2/0"]
    zarrdask.migrate(tmp_path / "a.n5", target=tmp_path / "a.zarr")
    stored = sorted(p.relative_to(tmp_path / "a.zarr").as_posix() for p in (tmp_path / "a.zarr").rglob("*")
                    if p.is_file() and p.name != "zarr.json")
    assert stored == ["c/0/0", "c/0/2"]  # C-order chunk (0, 0) and (0, 2): N5's blocks 0/0 and 2/0
    _assert_read_by_all(tmp_path / "a.zarr", n5_values.T)


@pytest.mark.parametrize("compression", ["raw", "gzip"])
def test_short_edge_blocks_migrate_bit_exact(tmp_path, compression):
    root = tmp_path / "a.n5"
    n5_values = _values("int32", (5, 3))  # N5 order (x, y); blocks (2, 2): short at x = 4 and y = 2
    root.mkdir()
    (root / "attributes.json").write_text(json.dumps({"dimensions": [5, 3], "blockSize": [2, 2], "dataType": "int32",
                                                      "compression": {"type": compression}, "axes": ["x", "y"]}))
    for bx in range(3):
        for by in range(2):
            (root / str(bx)).mkdir(exist_ok=True)
            block = n5_values[2 * bx:2 * bx + 2, 2 * by:2 * by + 2]
            (root / str(bx) / str(by)).write_bytes(_short_block(block, compression))
    zarrdask.migrate(root, target=tmp_path / "a.zarr")
    _assert_read_by_all(tmp_path / "a.zarr", n5_values.T)
    assert zarrdask.open_array(tmp_path / "a.zarr").dimension_names == ("y", "x")


@pytest.mark.parametrize("compressor", [None, {"name": "gzip", "configuration": {"level": 5}}, "zstd",
                                        {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5}},
                                        "numcodecs.bz2"], ids=lambda c: c if c is None or isinstance(c, str) else c["name"])
def test_what_zarrdask_writes_as_n5_migrates_bit_exact(tmp_path, compressor):
    values = _values("float64", (5, 7, 3))
    g = zarrdask.create_group(tmp_path / "out.n5", attributes={"made": "here"})
    a = g.create_array("vol", shape=values.shape, dtype="float64", chunks=(2, 3, 2),
                       compressors=[compressor] if compressor else None, dimension_names=["z", "y", "x"],
                       attributes={"units": ["m", "m", "s"]})
    a[...] = values
    assert (tmp_path / "out.n5" / "vol" / "attributes.json").exists()
    zarrdask.migrate(tmp_path / "out.n5", target=tmp_path / "out.zarr")
    _assert_read_by_all(tmp_path / "out.zarr" / "vol", values)
    b = zarrdask.open_group(tmp_path / "out.zarr")
    assert b.attrs.asdict() == {"made": "here"} and b["vol"].attrs.asdict() == {"units": ["m", "m", "s"]}
    assert b["vol"].dimension_names == ("z", "y", "x")


def test_xarray_reads_the_migrated_container_as_the_n5_one(tmp_path):
    n5_values = _values("float32", (6, 4))
    _tensorstore_n5(tmp_path / "a.n5" / "temp", n5_values, (4, 3), {"type": "zstd"}, axes=["x", "t"])
    zarrdask.migrate(tmp_path / "a.n5", target=tmp_path / "a.zarr")
    with xr.open_dataset(tmp_path / "a.n5", engine="zarrdask") as before:
        for engine in ("zarrdask", "zarr"):
            with xr.open_dataset(tmp_path / "a.zarr", engine=engine, consolidated=False) as after:
                assert after["temp"].dims == ("t", "x")
                xr.testing.assert_identical(after.load(), before.load())


def test_a_node_below_the_root_migrates_to_the_target_root(tmp_path):
    want = _container(tmp_path / "in.n5", _values("int8", (4, 3, 2)), {"type": "gzip"})
    nodes = zarrdask.migrate(tmp_path / "in.n5", path="g", target=tmp_path / "g.zarr")
    assert [n.key for n in nodes] == ["zarr.json", "vol/zarr.json"]
    assert zarrdask.open_group(tmp_path / "g.zarr").attrs.asdict() == {"units": "nm"}
    _assert_read_by_all(tmp_path / "g.zarr" / "vol", want)


def test_in_place_dry_run_and_a_full_target(tmp_path):
    _container(tmp_path / "in.n5", _values("uint8", (2, 2, 2)), {"type": "raw"})
    before = sorted(p.as_posix() for p in (tmp_path / "in.n5").rglob("*"))
    with pytest.raises(InvalidModeError, match=r"is an N5 container.*needs a copy.*target=new_store"):
        zarrdask.migrate(tmp_path / "in.n5")
    nodes = zarrdask.migrate(tmp_path / "in.n5", target=tmp_path / "out.zarr", dry_run=True)
    assert [n.key for n in nodes] == ["zarr.json", "g/zarr.json", "g/vol/zarr.json"]
    assert nodes[2].document["dimension_names"] == ["z", "y", "x"]
    assert not (tmp_path / "out.zarr").exists() or not any((tmp_path / "out.zarr").iterdir())
    zarrdask.migrate(tmp_path / "in.n5", target=tmp_path / "out.zarr")
    with pytest.raises(ContainsNodeError, match="not empty: migrate copies an N5 container into an empty one"):
        zarrdask.migrate(tmp_path / "in.n5", target=tmp_path / "out.zarr")
    assert sorted(p.as_posix() for p in (tmp_path / "in.n5").rglob("*")) == before  # the source untouched


def test_a_dataset_zarrdask_cannot_decode_is_refused_by_key_before_anything_is_written(tmp_path):
    (tmp_path / "in.n5" / "lz").mkdir(parents=True)
    (tmp_path / "in.n5" / "lz" / "attributes.json").write_text(json.dumps({
        "dimensions": [4], "blockSize": [2], "dataType": "uint8", "compression": {"type": "lz4"}}))
    with pytest.raises(MetadataError, match=r"lz/attributes.json.*lz4"):
        zarrdask.migrate(tmp_path / "in.n5", target=tmp_path / "out.zarr")
    assert not (tmp_path / "out.zarr").exists() or not any((tmp_path / "out.zarr").iterdir())


def test_copy_of_n5_is_the_migrated_container_and_takes_a_new_layout(tmp_path):
    want = _container(tmp_path / "in.n5", _values("uint32", (7, 5, 3)), {"type": "xz"})
    copied = zarrdask.copy(tmp_path / "in.n5", tmp_path / "same.zarr")
    assert copied.zarr_format == 3
    zarrdask.migrate(tmp_path / "in.n5", target=tmp_path / "migrated.zarr")
    for p in (tmp_path / "migrated.zarr").rglob("*"):
        if p.is_file():
            assert (tmp_path / "same.zarr" / p.relative_to(tmp_path / "migrated.zarr")).read_bytes() == p.read_bytes()
    plan = zarrdask.copy(tmp_path / "in.n5", tmp_path / "new.zarr", chunks=(3, 5, 4), shards=(3, 5, 8),
                         compressors="zstd", dry_run=True)
    assert [a.bytes_copied for a in plan.arrays] == [False]
    zarrdask.copy(tmp_path / "in.n5", tmp_path / "new.zarr", chunks=(3, 5, 4), shards=(3, 5, 8), compressors="zstd")
    new = zarrdask.open_array(tmp_path / "new.zarr", path="g/vol")
    assert new.chunks == (3, 5, 4) and new.shards == (3, 5, 8)
    _assert_read_by_all(tmp_path / "new.zarr" / "g" / "vol", want)
    zarrdask.copy(tmp_path / "in.n5", tmp_path / "v2.zarr", zarr_format=2)
    v2 = zarrdask.open_array(tmp_path / "v2.zarr", path="g/vol")
    assert v2.zarr_format == 2 and v2.dimension_names == ("z", "y", "x")
    _assert_bits(v2[...], want, "zarrdask v2")
    _assert_bits(_zarr_python(tmp_path / "v2.zarr" / "g" / "vol"), want, "zarr-python v2")


def test_cli_migrates_n5_to_a_target(tmp_path):
    want = _container(tmp_path / "in.n5", _values("int16", (4, 3, 2)), {"type": "zstd"})
    run = [sys.executable, "-m", "zarrdask", "migrate", str(tmp_path / "in.n5")]
    refused = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "N5 container" in refused.stderr and "--target" in refused.stderr
    dry = subprocess.run([*run, "--target", str(tmp_path / "out.zarr"), "--dry-run"], capture_output=True, text=True,
                         timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert [n["key"] for n in json.loads(dry.stdout)["nodes"]] == ["zarr.json", "g/zarr.json", "g/vol/zarr.json"]
    done = subprocess.run([*run, "--target", str(tmp_path / "out.zarr")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "migrated 3 node(s)" in done.stdout
    _assert_read_by_all(tmp_path / "out.zarr" / "g" / "vol", want)


def test_an_interrupted_migrate_is_resumed(tmp_path, monkeypatch):
    """copy's record (written before the first byte, deleted after the last) stays when the
    writes stop; migrate run again redoes the copy into the same target."""
    import zarrdask.tools.copy as copy_module

    want = _container(tmp_path / "in.n5", _values("float32", (7, 5, 3)), {"type": "gzip"})

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(copy_module, "run_writes", interrupted)
    with pytest.raises(KeyboardInterrupt):
        zarrdask.migrate(tmp_path / "in.n5", target=tmp_path / "out.zarr")
    assert list((tmp_path / "out.zarr").rglob(".zarrdask-writes/*.json"))
    monkeypatch.undo()
    zarrdask.migrate(tmp_path / "in.n5", target=tmp_path / "out.zarr")
    assert not list((tmp_path / "out.zarr").rglob(".zarrdask-writes/*.json"))
    _assert_read_by_all(tmp_path / "out.zarr" / "g" / "vol", want)
