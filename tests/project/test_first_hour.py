"""Issue 44, "the first hour": what a new user meets first, each as it was reported."""

from __future__ import annotations

import signal
import subprocess
import sys

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import NodeNotFoundError, ReadOnlyError, ShapeMismatchError, UnsupportedDataTypeError
from zarrdask.storage import LocalStore

from _cli import CliProcess


def test_auto_shards_are_whole_multiples_of_given_chunks(tmp_path):
    """shards="auto" beside chunks= picks a grid of whole chunks (it refused its own choice)."""
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=(1000, 1000, 100), dtype="f4", chunks=(10, 100, 100),
                              shards="auto")
    assert a.chunks == (10, 100, 100)
    assert all(s % c == 0 for s, c in zip(a.shards, a.chunks))
    assert a.shards == (20, 300, 100)  # 6 chunks of 400 kB: at most 4 MiB a shard
    small = zarrdask.create_array(tmp_path / "b.zarr", shape=(7, 3), dtype="i2", chunks=(2, 2), shards="auto")
    assert small.shards == (8, 4)  # the whole array in one shard of whole chunks
    small[...] = np.arange(21).reshape(7, 3)
    assert (small[...] == np.arange(21).reshape(7, 3)).all()


@pytest.mark.parametrize("dtype, widest", [("f16", "float64"), ("c32", "complex128")])
def test_a_numpy_number_without_a_zarr_type_is_named(dtype, widest):
    with pytest.raises(UnsupportedDataTypeError) as info:
        zarrdask.create_array({}, shape=(3,), dtype=dtype)
    message = str(info.value)
    assert repr(dtype) in message and "float32" in message and f"dtype={widest!r}" in message


def test_unknown_chunk_sizes_are_explained_before_anything_is_created(tmp_path):
    import dask.array as da

    x = da.random.random((100, 10), chunks=(10, 10))
    masked = x[x[:, 0] > 0.5]
    with pytest.raises(ShapeMismatchError, match=r"unknown chunk sizes.*x\.compute_chunk_sizes\(\)"):
        zarrdask.to_zarr(masked, tmp_path / "a.zarr")
    assert not (tmp_path / "a.zarr").exists()
    zarrdask.to_zarr(masked.compute_chunk_sizes(), tmp_path / "a.zarr")  # the fix it names works
    masked = x[x[:, 0] > 0.5]  # (compute_chunk_sizes() set the sizes of the one before in place)
    with pytest.raises(ShapeMismatchError, match=r"plan_write\(\): .*unknown chunk sizes.*compute_chunk_sizes"):
        zarrdask.plan_write(masked, tmp_path / "missing.zarr")  # (before the target is looked for)
    assert zarrdask.plan_write(masked.compute_chunk_sizes(), tmp_path / "a.zarr").write_tasks >= 1


def test_a_read_only_store_is_named_as_what_is_read_only(tmp_path):
    zarrdask.create_array(tmp_path / "a.zarr", shape=(3,), dtype="i4")
    a = zarrdask.open_array(LocalStore(tmp_path / "a.zarr", read_only=True), mode="r+")
    with pytest.raises(ReadOnlyError) as info:
        a[0] = 5
    message = str(info.value)
    assert "its store file://" in message and "read_only=True" in message and "open a writable store" in message
    assert "it was opened with mode='r'" not in message
    writable = zarrdask.open_array(LocalStore(tmp_path / "a.zarr"), mode="r+")  # the fix it names
    writable[0] = 5
    assert writable[0] == 5


def test_region_errors_show_slices(tmp_path):
    import dask.array as da

    zarrdask.create_array(tmp_path / "a.zarr", shape=(100, 10), dtype="f8", chunks=(10, 10))
    with pytest.raises(ShapeMismatchError) as info:
        zarrdask.to_zarr(da.zeros((40, 10)), tmp_path / "a.zarr", region=(slice(5, 55),))
    assert "region (slice(5, 55), slice(0, 10)) of shape (50, 10)" in str(info.value)
    assert "Span" not in str(info.value)


#: the command line in a process of its own (tests/_cli.py); the closed pipe below is ``python -m zarrdask``
_cli = CliProcess()


def test_cli_storage_option_asks_for_key_value(tmp_path):
    zarrdask.create_group(tmp_path / "g.zarr")
    done = _cli("info", str(tmp_path / "g.zarr"), "--storage-option", "badformat")
    assert done.returncode == 2
    assert "--storage-option: expected KEY=VALUE" in done.stderr and "'badformat'" in done.stderr
    assert "AioSession" not in done.stderr and "Traceback" not in done.stderr


def test_cli_output_into_a_closed_pipe_ends_quietly(tmp_path):
    group = zarrdask.create_group(tmp_path / "g.zarr")
    for i in range(300):  # far more text than a pipe buffers
        group.create_array(f"x{i}", shape=(3,), dtype="i4")
    proc = subprocess.Popen([sys.executable, "-m", "zarrdask", "info", str(tmp_path / "g.zarr")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 128 + signal.SIGPIPE
    assert err == b""


def test_cli_missing_nodes_offer_no_mode_keyword(tmp_path):
    zarrdask.create_group(tmp_path / "g.zarr")
    for args in (["info", str(tmp_path / "missing")], ["info", str(tmp_path / "g.zarr"), "--path", "nope"],
                 ["tree", str(tmp_path / "missing")]):
        done = _cli(*args)
        assert done.returncode == 2 and "does not exist" in done.stderr, done.stderr
        assert "creates a group" not in done.stderr and "shape=" not in done.stderr
    with pytest.raises(NodeNotFoundError, match=r"mode='a' or 'w' creates a group there \(with shape="):
        zarrdask.open(tmp_path / "missing")  # where the keyword exists, the hint stays


def test_names_users_type(tmp_path):
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=(10, 10), dtype="i4", chunks=(2, 5), shards=(4, 10),
                              attributes={"units": "K"})
    assert a.metadata.to_dict()["shape"] == [10, 10] and a.metadata.to_dict()["node_type"] == "array"
    assert a.nshards == 3 and a.nshards_initialized == 0
    assert repr(a).startswith(f"<zarrdask.Array {(tmp_path / 'a.zarr').as_uri()} '/' shape=(10, 10)")
    plain = zarrdask.create_array({}, shape=(3,), dtype="i4", zarr_format=2, attributes={"u": 1})
    assert plain.nshards is None
    assert plain.metadata.to_dict()["attributes"] == {"u": 1}  # as zarr-python's v2 to_dict
    assert "mapping://" in repr(plain) and "mapping://" in repr(zarrdask.create_group({}))


def test_packaging_license_is_an_spdx_string():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["license"] == "BSD-3-Clause"  # a TOML table is deprecated from setuptools 77
    assert "setuptools>=77" in project["build-system"]["requires"][0]


def test_readme_says_what_replaces_open_zarr():
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert '| `xr.open_zarr(p)` | `xr.open_dataset(p, engine="zarrdask", chunks={})` |' in readme


def test_open_dataset_of_a_missing_group_offers_no_mode(tmp_path):
    import xarray as xr

    zarrdask.create_group(tmp_path / "g.zarr")
    with pytest.raises(NodeNotFoundError) as info:
        xr.open_dataset(tmp_path / "g.zarr", group="nope", engine="zarrdask")
    assert "'nope'" in str(info.value) and "creates a group" not in str(info.value)


def test_a_v2_encoding_passed_to_xarrays_own_v3_writer_fails_as_after_engine_zarr(tmp_path):
    """A v2 store opened with engine="zarrdask" and written as v3 by xarray's own to_zarr:
    the encoding's codecs are numcodecs objects, as engine="zarr" shows them, so zarr-python
    refuses them with the same TypeError (it was a raw KeyError 'name' from its codec
    registry); zarrdask's writer turns them into their v3 codecs, and v2 targets take them."""
    import xarray as xr

    xr.Dataset({"a": (("x", "y"), np.arange(12.0).reshape(3, 4))}).to_zarr(
        tmp_path / "v2.zarr", zarr_format=2, mode="w", consolidated=False)
    errors = []
    for engine in ("zarr", "zarrdask"):
        opened = xr.open_dataset(tmp_path / "v2.zarr", engine=engine, chunks={})
        assert type(opened.a.encoding["compressors"][0]).__name__ == "Blosc"
        with pytest.raises(TypeError) as info:
            opened.to_zarr(tmp_path / f"{engine}-v3.zarr", zarr_format=3, mode="w")
        errors.append(str(info.value))
        opened.to_zarr(tmp_path / f"{engine}-again-v2.zarr", zarr_format=2, mode="w")
    assert errors[0] == errors[1] and "Expected a BytesBytesCodec" in errors[0]
    opened.zarrdask.to_zarr(tmp_path / "ours-v3.zarr", zarr_format=3, mode="w")
    codecs = zarrdask.open_array(tmp_path / "ours-v3.zarr", path="a").metadata.to_json()["codecs"]
    assert [c["name"] for c in codecs] == ["bytes", "blosc"]
    assert (xr.open_dataset(tmp_path / "ours-v3.zarr", engine="zarrdask").a.values == opened.a.values).all()


@pytest.mark.parametrize("dtype", ["f8", "i1", "bool", "M8[s]"])
def test_v2_default_compressors_are_zarr_pythons_and_xarrays(tmp_path, dtype):
    """zarr-python 3 compresses v2 arrays with Zstd(level=0) from its top-level functions and
    with numcodecs.Blosc() (lz4) from a group's, which is what xarray's to_zarr writes;
    zarrdask writes what the same call writes there."""
    import warnings

    import xarray as xr
    import zarr

    def ours(a):
        return a.metadata.to_json()["compressor"]

    def config(a):  # (zarrdask leaves out zstd's "checksum": false, which TensorStore's v2 driver rejects)
        return {k: v for k, v in a.metadata.compressor.get_config().items() if (k, v) != ("checksum", False)}

    warnings.simplefilter("ignore")  # (zarr-python's v2 warnings)
    top = config(zarr.create_array({}, shape=(3,), dtype=dtype, zarr_format=2))
    assert ours(zarrdask.create_array({}, shape=(3,), dtype=dtype, zarr_format=2)) == top
    theirs = zarr.open_group({}, mode="w", zarr_format=2).create_array("a", shape=(3,), dtype=dtype)
    here = zarrdask.open_group({}, mode="w", zarr_format=2).create_array("a", shape=(3,), dtype=dtype)
    assert ours(here) == config(theirs) != top
    data = xr.Dataset({"a": ("x", np.zeros(3, dtype=dtype))})
    data.to_zarr(tmp_path / "xarray.zarr", zarr_format=2, mode="w")
    data.zarrdask.to_zarr(tmp_path / "zarrdask.zarr", zarr_format=2, mode="w")
    assert ours(zarrdask.open_array(tmp_path / "zarrdask.zarr", path="a")) == config(
        zarr.open_array(tmp_path / "xarray.zarr", path="a"))


def test_a_missing_node_on_a_server_offers_no_way_to_create_it(tmp_path):
    """Over HTTP nothing can be written, so the not-found error offers no mode='a' (it does
    on a store that can be written)."""
    from _http import LoopbackServer

    zarrdask.create_group(tmp_path / "g.zarr")
    with LoopbackServer(root=str(tmp_path)) as server:
        for call in (zarrdask.open_group, zarrdask.open_array):
            with pytest.raises(NodeNotFoundError) as info:
                call(f"{server.url}/g.zarr", path="nope", mode="r")
            assert "mode='a'" not in str(info.value) and "nope" in str(info.value), info.value
    with pytest.raises(NodeNotFoundError, match="mode='a'"):
        zarrdask.open_group(tmp_path / "g.zarr", path="nope", mode="r")
