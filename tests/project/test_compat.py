"""The private dask and xarray APIs zarrdask uses (``zarrdask/compat/``) still work on
the installed releases: these tests call the private paths directly, so a release that
breaks one fails here loudly instead of silently taking the fallback."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.compat import dask as dask_compat
from zarrdask.compat import xarray as xr_compat
from zarrdask.storage import MemoryStore


def test_dask_private_from_array_serves_the_installed_dask(tmp_path):
    """With query planning on, the private FromArray subclass keys blocks by zarrdask's name."""
    script = textwrap.dedent(f"""
        import numpy as np, dask, dask.array as da
        assert da.array_expr_enabled()
        import zarrdask
        from zarrdask.compat.dask import private_from_array, CHECKED_ON
        from zarrdask.nodes.block_reader import BlockReader
        a = zarrdask.create_array({str(tmp_path / "a.zarr")!r}, shape=(10, 6), dtype="i4", chunks=(4, 3))
        a[...] = np.arange(60).reshape(10, 6)
        x = private_from_array(BlockReader(a), ((4, 4, 2), (3, 3)), "zarrdask-read-test", lock=False,
                               asarray=False, fancy=False, inline_array=True, meta=np.empty((0, 0), "i4"))
        assert x.name == "zarrdask-read-test", (x.name, dask.__version__, CHECKED_ON)
        assert np.array_equal(x.compute(), np.arange(60).reshape(10, 6))
        print("ok", dask.__version__)
    """)
    env = {**os.environ, "DASK_ARRAY__QUERY_PLANNING": "True"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, (
        f"dask's private FromArray path broke (checked on {dask_compat.CHECKED_ON}): {out.stderr[-2000:]}")


def test_dask_fallback_reads_the_same(monkeypatch):
    def broken(*args, **kwargs):
        raise TypeError("a future dask")

    monkeypatch.setattr(dask_compat, "private_from_array", broken)
    monkeypatch.setattr(dask_compat.da, "array_expr_enabled", lambda: True)
    a = zarrdask.create_array(MemoryStore(), shape=(8,), dtype="u1", chunks=(4,))
    a[...] = np.arange(8)
    from zarrdask.nodes.block_reader import BlockReader

    x = dask_compat.named_from_array(BlockReader(a), ((4, 4),), "zarrdask-read-x", lock=False, asarray=False,
                                     fancy=False, inline_array=True, meta=np.empty((0,), "u1"))
    assert np.array_equal(x.compute(), np.arange(8))


def test_dask_lazy_layer_serves_the_installed_dask():
    """The private layer protocol holds on this dask: write graphs stay lazy."""
    from dask.highlevelgraph import MaterializedLayer

    assert dask_compat._lazy_layers_work(), f"dask's Layer protocol changed (checked on {dask_compat.CHECKED_ON})"
    layer = dask_compat.lazy_layer(dask_compat._ProbeSource())
    assert not isinstance(layer, MaterializedLayer) and not layer.is_materialized()


def test_dask_lazy_layer_fallback_writes_the_same(monkeypatch, tmp_path):
    import dask.array as da
    from dask.highlevelgraph import MaterializedLayer

    monkeypatch.setattr(dask_compat, "_lazy_layers_work", lambda: False)
    data = np.arange(100 * 90, dtype="f8").reshape(100, 90)
    delayed = zarrdask.to_zarr(da.from_array(data, chunks=(7, 13)), str(tmp_path / "f.zarr"), chunks=(8, 8),
                               shards=(32, 32), compute=False)
    assert any(isinstance(layer, MaterializedLayer) and any(k[0].startswith("zarrdask-write-") for k in layer)
               for layer in delayed.__dask_graph__().layers.values())
    delayed.compute()
    np.testing.assert_array_equal(zarrdask.open_array(str(tmp_path / "f.zarr"))[...], data)


# -- xarray ----------------------------------------------------------------------------

def test_xarray_private_names_serve_the_installed_xarray():
    missing = [name for name, private in xr_compat.PRIVATE.items() if not private]
    assert not missing, f"xarray {xr.__version__} moved {missing} (checked on {xr_compat.CHECKED_ON})"
    ds = xr_compat.construct_dataset({"a": xr.Variable(("x",), np.arange(3))}, set(), {"x": 3}, None)
    assert isinstance(ds, xr.Dataset) and xr_compat.PRIVATE["construct_dataset"], (
        f"Dataset._construct_direct is gone in xarray {xr.__version__}")
    opened = xr.open_dataset(_small_store(), engine="zarrdask")
    assert xr_compat.lazy_data(opened["a"].variable) is not None and xr_compat.PRIVATE["lazy_data"], (
        f"Variable._data no longer holds the lazy array in xarray {xr.__version__}")


def _plain_dataset() -> xr.Dataset:
    rng = np.random.default_rng(3)
    return xr.Dataset(
        {f"v{i}": (("t", "y"), rng.standard_normal((3, 4)).astype("f4"), {"units": "1", "long_name": f"v {i}"})
         for i in range(6)} | {"packed": (("t", "y"), np.ones((3, 4), "f4"), {"scale_factor": 0.5})},
        coords={"t": np.arange(3), "y": ("y", np.linspace(0, 1, 4), {"units": "m"})},
        attrs={"title": "plain"},
    )


@pytest.mark.parametrize("flags", [{}, {"mask_and_scale": False}, {"chunks": {}}])
def test_xarray_open_shortcuts_are_taken_and_equal_xarrays_own(tmp_path, monkeypatch, flags):
    """engine="zarrdask"'s two open shortcuts (the direct decode of plain variables and
    the Dataset assembled by ``Dataset._construct_direct``) run on the installed xarray,
    and give what xarray's own functions give: the same open with both compat names
    reporting None (as on a release without them) is identical, encodings included."""
    from zarrdask.xarray_backend import backend, decode

    path = str(tmp_path / "plain.zarr")
    _plain_dataset().to_zarr(path, zarr_format=3, consolidated=True)
    plain: list[bool] = []
    built: list[bool] = []
    is_plain = decode.is_plain

    def spy_plain(variable, **kwargs):
        plain.append(is_plain(variable, **kwargs))
        return plain[-1]

    def spy_construct(*args):
        ds = xr_compat.construct_dataset(*args)
        built.append(ds is not None)
        return ds

    monkeypatch.setattr(decode, "is_plain", spy_plain)
    monkeypatch.setattr(backend, "construct_dataset", spy_construct)
    fast = xr.open_dataset(path, engine="zarrdask", **flags)
    assert sum(plain) >= 6 and built == [True], (
        f"the open shortcuts are not taken on xarray {xr.__version__}: plain decodes {plain}, direct Dataset {built}")
    monkeypatch.setattr(decode, "lazy_data", lambda v: None)
    monkeypatch.setattr(backend, "construct_dataset", lambda *a: None)
    own = xr.open_dataset(path, engine="zarrdask", **flags)
    xr.testing.assert_identical(fast, own)
    assert list(fast.variables) == list(own.variables)
    for name in own.variables:
        assert repr(fast[name].encoding) == repr(own[name].encoding), name  # (NaN fill values)
        assert type(fast[name].variable._data) is type(own[name].variable._data), name
    assert fast.encoding == own.encoding
    xr.testing.assert_identical(fast.load(), own.load())


def _small_store():
    group = zarrdask.create_group(MemoryStore())
    group.create_array("a", shape=(3,), dtype="i2", chunks=(3,), dimension_names=["x"])
    return group


def _outcome(fn, *args, **kwargs):
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the type must match
        return ("raised", type(exc))


def _same_outcome(a, b):
    if a[0] == "ok" and isinstance(a[1], xr.Variable):
        return b[0] == "ok" and a[1].identical(b[1])
    return a == b


@pytest.mark.parametrize("name", sorted(xr_compat._TABLE))
def test_xarray_fallbacks_agree_with_xarray(name):
    module, attr, fallback = xr_compat._TABLE[name]
    private = getattr(__import__(module, fromlist=[attr]), attr)
    cases = []
    if name == "normalize_path":
        cases = [(("a/b",), {}), (("~/x",), {}), (("s3://bucket/k",), {}), ((os.path.join("rel", "p"),), {}), ((3,), {})]
    elif name == "encode_variable_name":
        cases = [((None,), {}), (("v",), {}), ((3,), {})]
    elif name == "validate_dataset_names":
        cases = [((xr.Dataset({n: ((), 0)}),), {}) for n in ["ok", "", 3, ("t",)]]
    elif name == "choose_default_mode":
        for mode, append, region in itertools.product([None, "w", "w-", "a", "a-", "r+", "x"], [None, "t"], [None, "auto"]):
            cases.append(((), {"mode": mode, "append_dim": append, "region": region}))
    elif name == "validate_and_transpose_existing_dims":
        existing = xr.Variable(("t", "x"), np.zeros((2, 3)))
        for new in [xr.Variable(("t", "x"), np.zeros((4, 3))), xr.Variable(("x", "t"), np.zeros((3, 2))),
                    xr.Variable(("t", "y"), np.zeros((2, 3))), xr.Variable(("t", "x"), np.zeros((2, 5)))]:
            for region, append in [(None, None), (None, "t"), ({"x": slice(0, 2)}, None)]:
                cases.append((("v", new, existing, region, append), {}))
    else:
        for old, new in itertools.product(["f4", "U3", "S2", "O"], ["f8", "U3", "U5", "S2", "S3", "O"]):
            cases.append((("v", xr.Variable(("x",), np.zeros(2, dtype=old)), xr.Variable(("x",), np.zeros(2, dtype=new))), {}))
    for args, kwargs in cases:
        assert _same_outcome(_outcome(fallback, *args, **kwargs), _outcome(private, *args, **kwargs)), (name, args, kwargs)


def test_zarr_python_tunable_codec_settings():
    """zarr-python's codec objects still mark the settings they fill from the data type
    (checked on 3.1.6); a release without the marker fails here rather than silently
    storing placeholder values."""
    zarr = pytest.importorskip("zarr")
    from zarrdask.compat.zarr_python import tunable_settings

    assert tunable_settings(zarr.codecs.BloscCodec()) == {"typesize", "shuffle"}
    assert tunable_settings(zarr.codecs.BloscCodec(typesize=2, shuffle="noshuffle")) == frozenset()
    assert tunable_settings(zarr.codecs.ZstdCodec()) == frozenset()


def test_zarr_python_stores_open_on_demand(tmp_path):
    """zarr-python's stores still have ``_ensure_open`` (checked on 3.1.6): a ZipStore made
    with mode="r" holds no zip file until it is opened, and zarrdask opens it so."""
    zarr = pytest.importorskip("zarr")
    import zarrdask
    from zarrdask.compat.zarr_python import ensure_open  # noqa: F401

    assert callable(getattr(zarr.storage.ZipStore, "_ensure_open", None))
    with zarr.storage.ZipStore(tmp_path / "z.zip", mode="w") as written:
        zarr.create_array(written, shape=(3,), dtype="i2")[...] = [1, 2, 3]
    assert zarrdask.open_array(zarr.storage.ZipStore(tmp_path / "z.zip", mode="r"))[...].tolist() == [1, 2, 3]


def test_icechunk_fork_of_a_changed_session_merges_back(tmp_path):
    """compat/icechunk.py: a fork of a session with uncommitted changes (which fork()
    refuses) carries them, and merging it back keeps them and adds the fork's writes."""
    import pickle

    import icechunk
    import zarr

    from zarrdask.compat.icechunk import CHECKED_ON, fork_session

    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "ic")))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="a", shape=(10,), chunks=(5,), dtype="i4", fill_value=0)
    with pytest.raises(ValueError):
        session.fork()  # what the compat path exists for
    fork = pickle.loads(pickle.dumps(fork_session(session)))
    zarr.open_array(fork.store, path="a")[5:] = 2
    session.merge(fork)
    session.commit("fork merged")
    back = zarr.open_array(repo.readonly_session("main").store, path="a")[:]
    np.testing.assert_array_equal(back, [0] * 5 + [2] * 5, err_msg=f"checked on icechunk {CHECKED_ON}")


def test_fsspec_async_file_methods():
    """fsspec's async filesystems still implement reads and writes as ``_cat_file`` /
    ``_pipe_file`` coroutines (checked on 2026.9.0)."""
    import inspect

    from fsspec.asyn import AsyncFileSystem
    from fsspec.implementations.http import HTTPFileSystem

    from zarrdask.compat.fsspec import async_cat_file, async_pipe_file

    for cls in (AsyncFileSystem, HTTPFileSystem):
        assert inspect.iscoroutinefunction(async_cat_file(cls))
        assert inspect.iscoroutinefunction(async_pipe_file(cls))


def test_fsspec_conditional_write_names():
    """What S3 and memory stores guard their read-modify-writes with (checked on s3fs and
    fsspec 2026.9.0, botocore 1.43): s3fs's ``_call_s3`` coroutine with botocore's
    conditional keywords (else S3 stores lose their guard), and the dict fsspec's memory
    filesystem keeps its files in, shared by its instances (else memory stores over one
    filesystem would not exclude each other)."""
    import inspect

    import fsspec
    import s3fs

    from zarrdask.compat.fsspec import memory_files, s3_call
    from zarrdask.storage import FsspecStore

    fs = s3fs.S3FileSystem(anon=True, skip_instance_cache=True)
    assert inspect.iscoroutinefunction(s3_call(fs))
    assert FsspecStore(fs).guard == "compare"
    memory = fsspec.filesystem("memory")
    files = memory_files(memory)
    assert isinstance(files, dict) and files is memory_files(fsspec.filesystem("memory", skip_instance_cache=True))
    memory.pipe_file("/zarrdask-compat/k", b"1")
    assert "/zarrdask-compat/k" in files
    memory.rm_file("/zarrdask-compat/k")
    assert s3_call(memory) is None and memory_files(fsspec.filesystem("file")) is None


def test_fsspec_filesystems_say_how_they_write_their_paths():
    """``fs._strip_protocol`` (what fsspec's own mappers root themselves with; checked on
    fsspec 2026.9.0): memory paths start with ``/``, local ones are absolute, S3 ones are
    ``bucket/key``. Without it, an FsspecStore over a memory filesystem given ``a/b`` lists
    none of its keys (the filesystem lists ``/a/b/...``)."""
    import os

    import fsspec
    import s3fs

    from zarrdask.compat.fsspec import canonical_path

    assert canonical_path(fsspec.filesystem("memory"), "a/b") == "/a/b"
    assert canonical_path(fsspec.filesystem("file"), "a/b") == os.path.abspath("a/b").replace(os.sep, "/")
    assert canonical_path(s3fs.S3FileSystem(anon=True, skip_instance_cache=True), "s3://bucket/a") == "bucket/a"


def test_s3fs_retries_are_a_per_instance_count():
    """s3fs tries each call ``fs.retries`` times (5 by default; checked on s3fs 2026.9.0).
    zarrdask sets it to 1 on the filesystems it makes, so its own RetryPolicy is the only
    retrying layer; if s3fs renames the attribute, its tries multiply the policy's again."""
    import inspect

    import s3fs

    from zarrdask.compat.fsspec import single_try

    fs = s3fs.S3FileSystem(anon=True, skip_instance_cache=True)
    assert fs.retries == 5
    assert "retries=self.retries" in inspect.getsource(s3fs.S3FileSystem._call_s3)
    single_try(fs)
    assert fs.retries == 1 and s3fs.S3FileSystem.retries == 5


# -- xarray's internals (outside its public and backend API) ---------------------------
# The xarray modules the engine may import from outside compat/: xarray's public top level
# and its documented backend API (BackendEntrypoint, BackendArray, AbstractDataStore, the
# lazy-indexing adapter), the CF conventions and coders, and typing-only imports.
_PUBLIC_XARRAY = {"xarray", "xarray.backends", "xarray.backends.common", "xarray.core.indexing",
                  "xarray.conventions", "xarray.coding", "xarray.core.types"}
_BACKEND_API = {"AbstractDataStore", "BackendArray", "BackendEntrypoint", "NONE_VAR_NAME"}


def test_xarray_internals_serve_the_installed_xarray():
    moved = [name for name, own in xr_compat.INTERNAL.items() if not own]
    assert not moved, f"xarray {xr.__version__} moved {moved} (checked on {xr_compat.CHECKED_ON})"
    from xarray.backends import common, writers, zarr as xr_zarr

    assert xr_compat.dump_to_store is writers.dump_to_store
    assert xr_compat.AbstractWritableDataStore is common.AbstractWritableDataStore
    assert xr_compat.datatree_from_dict_with_io_cleanup is common.datatree_from_dict_with_io_cleanup
    assert xr_compat.encode_zarr_variable is xr_zarr.encode_zarr_variable
    assert xr_compat.encode_zarr_attr_value is xr_zarr.encode_zarr_attr_value
    assert xr_compat.FillValueCoder is xr_zarr.FillValueCoder


def test_xarray_internal_fallbacks_agree_with_xarray():
    own = {name: getattr(__import__(module, fromlist=[attr]), attr)
           for name, (module, attr, _) in xr_compat._INTERNAL_TABLE.items()}
    fallback = {name: entry[2] for name, entry in xr_compat._INTERNAL_TABLE.items()}
    for name in ("DIMENSION_KEY", "DATAARRAY_NAME", "DATAARRAY_VARIABLE"):
        assert fallback[name] == own[name], name
    import dask.array as da

    for value in [np.zeros(3), da.zeros(3, chunks=1), [1, 2], 3.0, xr.Variable(("x",), np.zeros(2)),
                  xr.Variable(("x",), da.zeros(2, chunks=1)), np.ma.zeros(2)]:
        assert fallback["is_chunked_array"](value) == own["is_chunked_array"](value), type(value)
    for dtype in [np.dtype("f4"), np.dtype("O"), np.dtype("O", metadata={"element_type": str}),
                  np.dtype("O", metadata={"vlen": bytes}), np.dtype("U3")]:
        assert fallback["check_vlen_dtype"](dtype) == own["check_vlen_dtype"](dtype), dtype
    for frozen in (fallback["Frozen"], own["Frozen"]):
        view = frozen({"a": 1})
        assert dict(view) == {"a": 1} and len(view) == 1 and "a" in view
        with pytest.raises(TypeError):
            view["b"] = 2  # type: ignore[index]

    class Closing:
        closed = False

        def close(self):
            self.closed = True

    for close_on_error in (fallback["close_on_error"], own["close_on_error"]):
        f = Closing()
        with close_on_error(f):
            pass
        assert not f.closed
        with pytest.raises(KeyError), close_on_error(f):
            raise KeyError("x")
        assert f.closed


def test_the_engine_imports_xarray_internals_only_through_compat():
    """Every ``from xarray... import`` outside compat/ names a public or backend-API module."""
    import ast
    import pathlib

    import zarrdask

    root = pathlib.Path(zarrdask.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        if path.parent.name == "compat":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "xarray":
                names = {alias.name for alias in node.names}
                if node.module == "xarray.backends.common" and names <= _BACKEND_API:
                    continue
                if node.module == "xarray.core" and names == {"indexing"}:
                    continue
                if node.module not in _PUBLIC_XARRAY or node.module == "xarray.backends.common":
                    found.append(f"{path.relative_to(root)}: from {node.module} import {', '.join(sorted(names))}")
    assert not found, "xarray internals imported outside zarrdask/compat/xarray.py:\n" + "\n".join(found)
