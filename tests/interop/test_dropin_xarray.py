"""The xarray layer as a drop-in for xarray's own zarr writer and engine: the accessors
take xarray's keywords (plus ``progress``), DataArrays round-trip as xarray writes them,
misspelt keywords name the public function and the nearest keyword, and every refusal
names a fix that works (each test runs the hinted fix)."""

from __future__ import annotations

import inspect
import re
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from xarray.backends.writers import _datatree_to_zarr

import zarrdask
from zarrdask.errors import (
    ContainsNodeError,
    DatasetError,
    DatasetKeyError,
    MetadataError,
    NodeNotFoundError,
    UnexpectedKeywordError,
)

pytest.importorskip("zarr")

INTERNAL = ("WriteBehindStore", "ArrayOptions", "Accessor", "Entrypoint", "overwrite=True")


def _params(fn):
    return {k: (p.kind, p.default) for k, p in inspect.signature(fn).parameters.items() if k != "self"}


@pytest.mark.parametrize("obj", [xr.Dataset(), xr.DataArray(0)], ids=["Dataset", "DataArray"])
def test_dataset_and_dataarray_accessors_take_xarrays_keywords(obj):
    ours = _params(obj.zarrdask.to_zarr)
    assert ours.pop("progress") == (inspect.Parameter.KEYWORD_ONLY, False)
    assert ours.pop("task_size") == (inspect.Parameter.KEYWORD_ONLY, None)
    assert ours.pop("staging") == (inspect.Parameter.KEYWORD_ONLY, None)
    theirs = _params(obj.to_zarr)
    assert list(ours) == list(theirs)
    assert ours == theirs


def test_datatree_accessor_takes_xarrays_keywords():
    ours = _params(xr.DataTree().zarrdask.to_zarr)
    assert ours.pop("progress") == (inspect.Parameter.KEYWORD_ONLY, False)
    assert ours.pop("task_size") == (inspect.Parameter.KEYWORD_ONLY, None)
    assert ours.pop("staging") == (inspect.Parameter.KEYWORD_ONLY, None)
    theirs = _params(xr.DataTree.to_zarr)
    assert theirs.pop("kwargs")[0] is inspect.Parameter.VAR_KEYWORD
    # DataTree.to_zarr passes **kwargs on to this function: its keyword-only parameters
    passed_on = {k: v for k, v in _params(_datatree_to_zarr).items()
                 if v[0] is inspect.Parameter.KEYWORD_ONLY and k not in theirs}
    assert ours == {**theirs, **passed_on}
    assert list(ours)[: len(theirs)] == list(theirs)


def _open(path, engine, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataarray(path, engine=engine, **kwargs).load()


def _dataarray(name, chunked):
    data = np.arange(12.0).reshape(3, 4)
    data[1, 1] = np.nan
    arr = xr.DataArray(data, dims=("y", "x"), coords={"x": np.arange(4), "label": ("y", list("abc"))},
                       name=name, attrs={"units": "m"})
    return arr.chunk({"y": 2}) if chunked else arr


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("name", [None, "temperature", "x"], ids=["unnamed", "named", "named-like-a-coord"])
@pytest.mark.parametrize("chunked", [False, True], ids=["numpy", "dask"])
def test_dataarray_writes_round_trip_as_xarrays(tmp_path, zarr_format, name, chunked):
    arr = _dataarray(name, chunked)
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    arr.zarrdask.to_zarr(ours, zarr_format=zarr_format)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arr.to_zarr(theirs, zarr_format=zarr_format)
    expected = _open(theirs, "zarr")
    xr.testing.assert_identical(_open(ours, "zarr"), expected)
    xr.testing.assert_identical(_open(ours, "zarrdask"), expected)
    xr.testing.assert_identical(expected, arr.load())


@pytest.mark.parametrize("dtype", [int, float])
def test_v2_fill_value_from_encoding_matches_xarrays_store(tmp_path, dtype):
    """v2: ``encoding={"_FillValue": -1}`` is the Zarr ``fill_value``; unwritten chunks
    read as it, masked (default) or not (``mask_and_scale=False``), as with xarray."""
    ds = xr.Dataset({"foo": ("x", da.zeros(3, dtype=dtype, chunks=3))})
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    kwargs = dict(zarr_format=2, compute=False, consolidated=False, encoding={"foo": {"_FillValue": -1}})
    ds.zarrdask.to_zarr(ours, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(theirs, **kwargs)
    assert zarrdask.open_array(ours, path="foo").fill_value == -1
    for decode in ({}, {"mask_and_scale": False}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = xr.open_dataset(theirs, engine="zarr", **decode).load()
            xr.testing.assert_identical(xr.open_dataset(ours, engine="zarr", **decode).load(), expected)
        xr.testing.assert_identical(xr.open_dataset(ours, engine="zarrdask", **decode).load(), expected)
        assert np.isnan(expected["foo"].values).all() == (not decode)


def _tree():
    return xr.DataTree.from_dict({"/": xr.Dataset({"a": ("x", [1, 2])}),
                                  "/child": xr.Dataset({"b": ("y", [1.0, 2.0, 3.0])})})


@pytest.mark.parametrize(
    ("call", "function", "wrong", "meant"),
    [
        (lambda p, kw: xr.Dataset({"a": ("x", [1])}).zarrdask.to_zarr(p, **kw),
         "Dataset.zarrdask.to_zarr()", "consolidatd", "consolidated"),
        (lambda p, kw: xr.DataArray([1], dims="x").zarrdask.to_zarr(p, **kw),
         "DataArray.zarrdask.to_zarr()", "zarr_fromat", "zarr_format"),
        (lambda p, kw: _tree().zarrdask.to_zarr(p, **kw),
         "DataTree.zarrdask.to_zarr()", "write_inherited_coord", "write_inherited_coords"),
        (lambda p, kw: xr.Dataset({"a": ("x", [1])}).zarrdask.to_zarr(p, **kw),
         "Dataset.zarrdask.to_zarr()", "progres", "progress"),
    ],
)
def test_misspelt_writer_keywords_name_the_accessor_and_write_nothing(tmp_path, call, function, wrong, meant):
    path = tmp_path / "w.zarr"
    with pytest.raises(UnexpectedKeywordError) as err:
        call(path, {wrong: True})
    assert isinstance(err.value, TypeError)
    assert str(err.value) == (f"{function} got an unexpected keyword argument {wrong!r} "
                              f"(did you mean {meant!r}?)")
    assert not path.exists()
    call(path, {meant: True} if meant != "zarr_format" else {meant: 2})  # the suggestion works
    assert path.exists()


@pytest.mark.parametrize(("opener", "function"), [(xr.open_dataset, "xr.open_dataset(engine='zarrdask')"),
                                                  (xr.open_datatree, "xr.open_datatree(engine='zarrdask')")])
def test_misspelt_open_keywords_name_the_xarray_call(tmp_path, opener, function):
    path = tmp_path / "r.zarr"
    _tree().zarrdask.to_zarr(path)
    for wrong, meant in [("consolidatd", "consolidated"), ("decode_time", "decode_times")]:
        with pytest.raises(UnexpectedKeywordError, match=re.escape(
                f"{function} got an unexpected keyword argument {wrong!r} (did you mean {meant!r}?)")):
            opener(path, engine="zarrdask", **{wrong: True})
        opener(path, engine="zarrdask", **{meant: True})


def test_too_many_positional_arguments_name_the_accessor():
    with pytest.raises(UnexpectedKeywordError, match=re.escape("Dataset.zarrdask.to_zarr() takes at most 4")):
        xr.Dataset().zarrdask.to_zarr(None, "w", None, None, True)


def _no_internal_names(message):
    assert not any(name in message for name in INTERNAL), message


def test_existing_store_names_mode_w_which_works(tmp_path):
    path = tmp_path / "e.zarr"
    xr.Dataset({"a": ("x", [1, 2])}).zarrdask.to_zarr(path)
    new = xr.Dataset({"b": ("y", [5.0])})
    with pytest.raises(ContainsNodeError, match="mode='w'") as err:
        new.zarrdask.to_zarr(path)
    _no_internal_names(str(err.value))
    assert "Dataset.zarrdask.to_zarr" in str(err.value) and str(path) in str(err.value)
    new.zarrdask.to_zarr(path, mode="w")
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarrdask").load(), new)


def test_mode_r_plus_on_nothing_names_mode_a_which_works(tmp_path):
    path = tmp_path / "n.zarr"
    arr = xr.DataArray([1, 2], dims="x", name="a")
    with pytest.raises(NodeNotFoundError, match="mode='a'") as err:
        arr.zarrdask.to_zarr(path, mode="r+")
    _no_internal_names(str(err.value))
    assert "DataArray.zarrdask.to_zarr" in str(err.value)
    arr.zarrdask.to_zarr(path, mode="a")
    xr.testing.assert_identical(xr.open_dataarray(path, engine="zarrdask").load(), arr)


def test_format_mismatch_names_fixes_which_work(tmp_path):
    path = tmp_path / "f.zarr"
    ds = xr.Dataset({"a": ("x", [1, 2])})
    ds.zarrdask.to_zarr(path, zarr_format=2)
    with pytest.raises(MetadataError, match="mode='w'") as err:
        ds.zarrdask.to_zarr(path, mode="a", zarr_format=3)
    _no_internal_names(str(err.value))
    ds.assign(b=ds.a * 2).zarrdask.to_zarr(path, mode="a")  # "leave zarr_format out"
    ds.zarrdask.to_zarr(path, mode="w", zarr_format=3)  # "or mode='w'"
    assert zarrdask.open_group(path, mode="r").zarr_format == 3


def test_v2_arrays_without_dimension_names_are_refused_with_a_fix_that_works(tmp_path):
    path = tmp_path / "v2.zarr"
    group = zarrdask.create_group(path, zarr_format=2)
    group.create_array("a", shape=(3,), dtype="i4", chunks=(3,), zarr_format=2)[...] = np.arange(3)
    group.create_array("b", shape=(2, 4), dtype="f8", chunks=(2, 4), zarr_format=2)[...] = np.ones((2, 4))
    fixed = set()
    while True:
        try:
            ds = xr.open_dataset(path, engine="zarrdask")
            break
        except DatasetKeyError as err:
            assert isinstance(err, KeyError)
            message = str(err)
            _no_internal_names(message)
            name = re.search(r"Zarr v2 array '(\w+)' is missing the attribute `_ARRAY_DIMENSIONS`", message)[1]
            fix = re.search(r"zarrdask\.open_array\(store, .*?\] = \[[^\]]*\]", message)[0]
            exec(fix, {"zarrdask": zarrdask, "store": path})
            assert name not in fixed
            fixed.add(name)
    assert fixed == {"a", "b"}
    assert ds["a"].ndim == 1 and ds["b"].ndim == 2 and len(ds.dims) == 3


def test_datatree_group_writes_the_tree_there(tmp_path):
    path = tmp_path / "g.zarr"
    tree = _tree()
    tree.zarrdask.to_zarr(path, group="deep/tree")
    xr.testing.assert_identical(xr.open_datatree(path, engine="zarrdask", group="deep/tree").load(), tree)


def test_datatree_append_dim_is_refused_with_the_per_node_fix(tmp_path):
    path = tmp_path / "t.zarr"
    _tree().zarrdask.to_zarr(path)
    more = xr.Dataset({"b": ("y", [4.0])})
    with pytest.raises(UnexpectedKeywordError, match=re.escape("group=<node path>, append_dim=")) as err:
        xr.DataTree.from_dict({"/child": more}).zarrdask.to_zarr(path, mode="a", append_dim="y")
    assert "DataTree.zarrdask.to_zarr" in str(err.value)
    more.zarrdask.to_zarr(path, group="child", append_dim="y")
    got = xr.open_datatree(path, engine="zarrdask").load()
    np.testing.assert_array_equal(got["child"]["b"].values, [1.0, 2.0, 3.0, 4.0])


def test_progress_writes_nothing_into_captured_output(tmp_path, capsys):
    ds = xr.Dataset({"a": ("x", da.arange(8, chunks=2))})
    ds.zarrdask.to_zarr(tmp_path / "p.zarr", progress=True)
    assert capsys.readouterr().out == ""
    ds.zarrdask.to_zarr(tmp_path / "q.zarr")
    assert capsys.readouterr().out == ""
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "p.zarr", engine="zarrdask").load(), ds.load())


@pytest.mark.parametrize("other", [{"compute": False}, {"chunkmanager_store_kwargs": {"scheduler": "threads"}}])
def test_progress_refusals_name_a_progress_bar_that_works(tmp_path, capsys, other):
    from dask.diagnostics import ProgressBar

    ds = xr.Dataset({"a": ("x", da.arange(8, chunks=2))})
    path = tmp_path / "p.zarr"
    with pytest.raises(DatasetError, match=re.escape("with dask.diagnostics.ProgressBar():")):
        ds.zarrdask.to_zarr(path, progress=True, **other)
    assert not path.exists()
    with ProgressBar():
        written = ds.zarrdask.to_zarr(path, **other)
        if other.get("compute") is False:
            written.compute()
    assert "100%" in capsys.readouterr().out
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarrdask").load(), ds.load())


def test_misspelt_encoding_key_suggests_the_right_one(tmp_path):
    ds = xr.Dataset({"a": ("x", np.arange(4))})
    with pytest.raises(DatasetError, match=re.escape("['chunk'] (did you mean 'chunks'?)")):
        ds.zarrdask.to_zarr(tmp_path / "e.zarr", encoding={"a": {"chunk": 2}})
    ds.zarrdask.to_zarr(tmp_path / "e.zarr", encoding={"a": {"chunks": 2}})
    assert zarrdask.open_array(tmp_path / "e.zarr", path="a").chunks == (2,)


def test_encoding_for_an_existing_variable_names_fixes_which_work(tmp_path):
    path = tmp_path / "x.zarr"
    ds = xr.Dataset({"a": ("x", np.arange(4))})
    ds.zarrdask.to_zarr(path)
    with pytest.raises(DatasetError, match="drop its encoding") as err:
        ds.zarrdask.to_zarr(path, mode="a", encoding={"a": {"chunks": 2}})
    assert "mode='w'" in str(err.value)
    ds.zarrdask.to_zarr(path, mode="a")
    ds.zarrdask.to_zarr(path, mode="w", encoding={"a": {"chunks": 2}})
    assert zarrdask.open_array(path, path="a").chunks == (2,)
