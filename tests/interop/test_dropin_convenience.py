"""zarr-python's convenience calls (``zarr.zeros``, ``zarr.array``, ``zarr.save``, ``zarr.load``,
``zarr.group``, ``Group.create_dataset``, ...) typed against zarrdask: the same arrays as
zarr-python makes from the same arguments (generated), readable by it both ways; the
names zarrdask has no namesake for refused with what to use instead."""

from __future__ import annotations

import json
import os
import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import ContainsNodeError, InvalidStoreError, NodeNotFoundError, ReadOnlyError

zarr = pytest.importorskip("zarr")

FUNCTIONS = ("zeros", "ones", "full", "empty")
#: generated cases against zarr-python (``ZARRDASK_CONV_EXAMPLES=600`` for a longer run)
EXAMPLES = int(os.environ.get("ZARRDASK_CONV_EXAMPLES", "40"))


def _zarr_quietly(call: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (zarr-python's own warnings about v2 and defaults)
        return call(*args, **kwargs)


def _chunk_spec(shape: tuple[int, ...]) -> Any:
    """Chunks as zarr.create takes them: one int, False, or per dimension an int, -1 or None."""
    per_dim = st.tuples(*(st.one_of(st.integers(1, max(n, 1)), st.just(-1), st.none()) for n in shape))
    return st.one_of(st.integers(1, max(shape)), st.just(False), per_dim)


@st.composite
def _cases(draw: Any) -> dict[str, Any]:
    shape = draw(st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple))
    return {"function": draw(st.sampled_from(FUNCTIONS)), "shape": shape, "chunks": draw(_chunk_spec(shape)),
            "dtype": draw(st.sampled_from(["f8", "f4", "i2", "u1"])), "zarr_format": draw(st.sampled_from([2, 3])),
            "fill": draw(st.integers(0, 100))}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_cases())
def test_constructors_match_zarr_python(case: dict[str, Any], tmp_path_factory: Any) -> None:
    """zeros/ones/full/empty with zarr.create's chunk forms give zarr-python's array: shape,
    chunks, dtype, fill value, format and values, and each library reads the other's."""
    where = tmp_path_factory.mktemp("c")
    args = [case["shape"], case["fill"]] if case["function"] == "full" else [case["shape"]]
    kwargs = {"chunks": case["chunks"], "dtype": case["dtype"], "zarr_format": case["zarr_format"]}
    ours = getattr(zarrdask, case["function"])(*args, store=str(where / "zd.zarr"), **kwargs)
    theirs = _zarr_quietly(getattr(zarr, case["function"]), *args, store=str(where / "zp.zarr"), **kwargs)
    assert ours.shape == theirs.shape and ours.chunks == theirs.chunks
    assert ours.dtype == theirs.dtype and ours.metadata.zarr_format == theirs.metadata.zarr_format
    assert np.array_equal(np.asarray(ours.fill_value), np.asarray(theirs.fill_value))
    if case["function"] != "empty":
        assert np.array_equal(ours[...], theirs[...])
    read_back = _zarr_quietly(zarr.open_array, str(where / "zd.zarr"), mode="r")
    assert read_back.chunks == theirs.chunks and np.array_equal(read_back[...], theirs[...])
    assert np.array_equal(zarrdask.open_array(str(where / "zp.zarr"))[...], ours[...])


def test_defaults_are_zarr_pythons(tmp_path: Path) -> None:
    """float64 unless a dtype is given; store=None is a new in-memory store; empty() stores
    the data type's default fill value in v2 too (zarr-python writes 0.0, not null)."""
    assert zarrdask.zeros((3,)).dtype == np.float64 == zarr.zeros((3,)).dtype
    assert isinstance(zarrdask.ones(4).store, zarrdask.storage.MemoryStore)
    zarrdask.empty((3,), dtype="f4", zarr_format=2, store=str(tmp_path / "e.zarr"))
    _zarr_quietly(zarr.empty, (3,), dtype="f4", zarr_format=2, store=str(tmp_path / "z.zarr"))
    ours, theirs = (json.loads((tmp_path / n / ".zarray").read_text()) for n in ("e.zarr", "z.zarr"))
    assert ours["fill_value"] == theirs["fill_value"] == 0.0


def test_create_with_legacy_keywords(tmp_path: Path) -> None:
    a = zarrdask.create(100, chunks=10, store=str(tmp_path / "c.zarr"), compressor=None, dimension_separator="/",
                        zarr_format=2, fill_value=-1, dtype="i4")
    meta = json.loads((tmp_path / "c.zarr" / ".zarray").read_text())
    assert meta["compressor"] is None and meta["dimension_separator"] == "/" and meta["fill_value"] == -1
    a[:] = np.arange(100)
    assert (tmp_path / "c.zarr" / "9").exists()
    with pytest.raises(ContainsNodeError, match="overwrite=True"):
        zarrdask.create(100, store=str(tmp_path / "c.zarr"))
    b = zarrdask.create(5, store=str(tmp_path / "c.zarr"), overwrite=True)
    assert b.shape == (5,) and b.metadata.zarr_format == 3


def test_create_array_reads_chunk_forms_as_zarr_python() -> None:
    """True: chosen for the array, False: the whole array, -1/None: a whole dimension; a bool
    inside a tuple is refused (it used to be read as 1)."""
    shape = (6, 8)
    assert zarrdask.create_array(None, shape=shape, dtype="i1", chunks=False).chunks == shape
    assert zarrdask.create_array(None, shape=shape, dtype="i1", chunks=(-1, 2)).chunks == (6, 2)
    assert zarrdask.create_array(None, shape=shape, dtype="i1", chunks=(3, None)).chunks == (3, 8)
    assert zarrdask.create_array(None, shape=shape, dtype="i1", chunks=True).chunks == \
        zarrdask.create_array(None, shape=shape, dtype="i1").chunks
    with pytest.raises(zarrdask.ZarrdaskError, match=r"got \(True, 2\)"):
        zarrdask.create_array(None, shape=shape, dtype="i1", chunks=(True, 2))


def test_array_keeps_data_and_chunks() -> None:
    import dask.array as da

    x = np.arange(12, dtype="i2").reshape(3, 4)
    a = zarrdask.array(x, chunks=(2, 2))
    assert a.chunks == (2, 2) and a.dtype == x.dtype and np.array_equal(a[...], x)
    b = zarrdask.array(da.ones((10, 6), chunks=(5, 3)))
    assert b.chunks == (5, 3) and b[...].sum() == 60
    c = zarrdask.array([1.5, 2.5], dtype="f4", read_only=True)
    assert c.dtype == np.float32 and c.read_only
    with pytest.raises(ReadOnlyError):
        c[0] = 1


def test_like_keeps_a_zarr_arrays_layout(tmp_path: Path) -> None:
    source = zarrdask.create_array(str(tmp_path / "s.zarr"), shape=(20, 20), dtype="i2", chunks=(5, 5),
                                   shards=(10, 10), compressors=None, fill_value=3)
    z = zarrdask.zeros_like(source, store=str(tmp_path / "z.zarr"))
    assert (z.chunks, z.shards, z.compressors, z.fill_value) == ((5, 5), (10, 10), (), 0)
    f = zarrdask.full_like(source)
    assert f.fill_value == 3 and np.all(f[...] == 3)
    e = zarrdask.empty_like(np.ones((4, 3), dtype="u1"))
    assert e.shape == (4, 3) and e.dtype == np.uint8
    other = zarrdask.ones_like(source, zarr_format=2)  # another format: its codecs are not carried over
    assert other.metadata.zarr_format == 2 and np.all(other[...] == 1)
    opened = zarrdask.open_like(source, str(tmp_path / "o.zarr"))
    assert opened.shards == (10, 10) and zarrdask.open_like(source, str(tmp_path / "o.zarr")).shape == (20, 20)


def test_like_and_from_array_keep_a_rectilinear_grid() -> None:
    import dask.array as da

    x = da.from_array(np.arange(60, dtype="i4").reshape(10, 6), chunks=((3, 7), (1, 5)))
    zarrdask.to_zarr(x, "memory://rectilinear-source", chunks="dask")
    source = zarrdask.open_array("memory://rectilinear-source")
    assert zarrdask.zeros_like(source).chunks == ((3, 7), (1, 5))
    copied = zarrdask.from_array(None, data=source)
    assert copied.chunks == ((3, 7), (1, 5)) and np.array_equal(copied[...], x.compute())


def test_from_array_keeps_a_zarr_python_arrays_layout(tmp_path: Path) -> None:
    source = zarr.create_array(str(tmp_path / "zp.zarr"), shape=(20, 30), chunks=(5, 10), shards=(10, 30),
                               dtype="i2", fill_value=7, compressors=None, dimension_names=["y", "x"],
                               attributes={"units": "K"})
    source[...] = np.arange(600, dtype="i2").reshape(20, 30)
    copied = zarrdask.from_array(str(tmp_path / "zd.zarr"), data=source)
    assert (copied.chunks, copied.shards, copied.compressors) == ((5, 10), (10, 30), ())
    assert copied.fill_value == 7 and dict(copied.attrs) == {"units": "K"}
    assert copied.dimension_names == ("y", "x")
    assert np.array_equal(copied[...], source[...])
    assert np.array_equal(zarr.open_array(str(tmp_path / "zd.zarr"), mode="r")[...], source[...])
    empty = zarrdask.from_array(str(tmp_path / "meta.zarr"), data=source, write_data=False)
    assert empty.nchunks_initialized == 0 and empty.shards == (10, 30)
    v2 = zarrdask.from_array(str(tmp_path / "v2.zarr"), data=source, zarr_format=2)
    assert v2.metadata.zarr_format == 2 and v2.chunks == (5, 10) and np.array_equal(v2[...], source[...])
    plain = zarrdask.from_array(str(tmp_path / "np.zarr"), data=np.ones((3, 3)), chunks=(2, 2))
    assert plain.chunks == (2, 2) and plain.shards is None


def test_save_and_load_both_ways(tmp_path: Path) -> None:
    x = np.arange(10, dtype="f4")
    zarrdask.save(str(tmp_path / "a.zarr"), x)
    assert np.array_equal(_zarr_quietly(zarr.load, str(tmp_path / "a.zarr")), x)
    _zarr_quietly(zarr.save, str(tmp_path / "b.zarr"), x * 2)
    assert np.array_equal(zarrdask.load(str(tmp_path / "b.zarr")), x * 2)
    with pytest.raises(ContainsNodeError, match="mode='w'"):
        zarrdask.save(str(tmp_path / "a.zarr"), x)
    zarrdask.save_array(str(tmp_path / "a.zarr"), x[:3], mode="w")
    assert zarrdask.load(str(tmp_path / "a.zarr")).shape == (3,)
    zarrdask.save(str(tmp_path / "g.zarr"), x, np.ones(2), temp=np.zeros((2, 2)))
    loaded = zarrdask.load(str(tmp_path / "g.zarr"))
    assert sorted(loaded) == ["arr_0", "arr_1", "temp"] and np.array_equal(loaded["arr_0"], x)
    assert np.array_equal(zarr.open_group(str(tmp_path / "g.zarr"), mode="r")["temp"][...], np.zeros((2, 2)))
    with pytest.raises(KeyError):
        loaded["nothing"]
    with pytest.raises(TypeError, match="'label'"):
        zarrdask.save_group(str(tmp_path / "h.zarr"), x, label="not an array")


def test_group_open_consolidated_and_stores(tmp_path: Path) -> None:
    g = zarrdask.group(str(tmp_path / "g.zarr"), attributes={"title": "t"})
    g.create_group("sub")
    assert zarrdask.group(str(tmp_path / "g.zarr")).attrs["title"] == "t"
    assert list(zarrdask.group(str(tmp_path / "g.zarr"), overwrite=True)) == []
    with pytest.raises(NodeNotFoundError, match="consolidate_metadata"):
        zarrdask.open_consolidated(str(tmp_path / "g.zarr"))
    zarrdask.consolidate_metadata(str(tmp_path / "g.zarr"))
    assert zarrdask.open_consolidated(str(tmp_path / "g.zarr")).consolidated
    with pytest.raises(TypeError, match="use_consolidated=False"):
        zarrdask.open_consolidated(str(tmp_path / "g.zarr"), use_consolidated=False)
    assert isinstance(zarrdask.group().store, zarrdask.storage.MemoryStore)
    held: dict[str, bytes] = {}
    assert zarrdask.zeros((2,), store=held)[...].tolist() == [0.0, 0.0] and "zarr.json" in held  # as zarr-python 3


def test_group_methods_of_zarr_python_and_h5py(tmp_path: Path) -> None:
    g = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    assert g.zeros("z", shape=(4,), chunks=2).dtype == np.float64
    assert np.all(g.full("f", shape=(3,), fill_value=2, dtype="i4")[...] == 2)
    assert g.empty("e", shape=(2,)).shape == (2,)
    d = g.create_dataset("d", data=np.arange(6).reshape(2, 3), compressor=None)
    assert d.compressors == () and np.array_equal(d[...], np.arange(6).reshape(2, 3))
    assert g.require_dataset("d", shape=(2, 3)).name == d.name
    assert np.all(g.ones_like("o", d)[...] == 1) and g["o"].dtype == d.dtype
    assert np.array_equal(g.array("a", data=np.ones(3))[...], np.ones(3))
    assert sorted(zarr.open_group(str(tmp_path / "g.zarr"), mode="r").array_keys()) == ["a", "d", "e", "f", "o", "z"]
    with pytest.raises(AttributeError, match="zarrdask.copy"):
        g.move("a", "b")
    with pytest.raises(AttributeError, match="'Group' object has no attribute 'nothing'"):
        g.nothing  # noqa: B018
    assert pickle.loads(pickle.dumps(g)).name == g.name


def test_array_members_of_zarr_python() -> None:
    v2 = zarrdask.create_array(None, shape=(4,), dtype="f4", zarr_format=2)
    assert v2.compressor == {"id": "zstd", "level": 0}
    assert zarrdask.create_array(None, shape=(4,), dtype="f4", zarr_format=2, compressors=None).compressor is None
    with pytest.raises(TypeError, match="use a.compressors"):
        zarrdask.zeros(4).compressor  # noqa: B018
    with pytest.raises(AttributeError, match="with_options"):
        zarrdask.zeros(4).with_config  # noqa: B018
    a = zarrdask.zeros(4)
    assert pickle.loads(pickle.dumps(a)).shape == (4,) and np.asarray(a).shape == (4,)


@pytest.mark.parametrize("name", ["copy_all", "copy_store", "tree", "config", "AsyncArray", "set_format"])
def test_names_without_a_namesake_say_what_to_use(name: str) -> None:
    with pytest.raises(AttributeError, match="zarr-python name"):
        getattr(zarrdask, name)
    assert not hasattr(zarrdask, "no_such_thing")


def test_every_zarr_python_top_level_name_is_there_or_explained() -> None:
    """Each name of zarr-python's public API (``zarr.__all__``) is zarrdask's too, or its
    absence says what to use (modules excepted)."""
    import types

    for name in zarr.__all__:
        if isinstance(getattr(zarr, name), types.ModuleType):
            continue
        try:
            getattr(zarrdask, name)
        except AttributeError as exc:
            assert "zarr-python name" in str(exc), name
