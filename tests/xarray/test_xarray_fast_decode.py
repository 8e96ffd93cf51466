"""The fast paths of engine="zarrdask"'s open give exactly xarray's results.

* ``zarrdask.xarray_backend.decode.decode_cf_variables`` (plain variables decoded
  directly) against ``xarray.conventions.decode_cf_variables``, for generated dtypes x
  mixes of attributes x decoding flags (hypothesis): same variables in the same order,
  identical values, attrs, encoding, dtypes and data wrappers, same coordinate names,
  global attributes and warnings. The shortcut pays (benchmarks/README.md: the
  50-variable open) and this property keeps it equal to xarray.
* ``backend._dataset`` (direct Dataset assembly) against the Dataset constructor.
* Whole opens against the reference path (xarray's ``StoreBackendEntrypoint`` on the
  same zarrdask store), for datasets written by xarray (v2 and v3), flags on and off.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xarray import Variable, conventions
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.coordinates import Coordinates

from zarrdask.xarray_backend.backend import _dataset, _open_store
from zarrdask.xarray_backend.decode import decode_cf_variables, is_plain

# the registered name (a class given as engine gets no ``open_dataset_parameters``, which
# ``decode_cf=False`` needs)
ENGINE = "zarrdask"
NAN = float("nan")


# -- comparison helpers -----------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equality that treats NaN as equal to NaN and compares types of numbers too."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype):
            return False
        if a.dtype.kind == "O":
            return a.shape == b.shape and all(map(_same, a.ravel(), b.ravel()))
        if a.dtype.kind in "mM":  # NaT == NaT too
            return np.array_equal(a.view("i8"), b.view("i8"))
        return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if type(a) is not type(b):
        return False
    if isinstance(a, float | np.floating) and np.isnan(a):
        return bool(np.isnan(b))
    return bool(a == b)


def _values(var: Variable) -> Any:
    """The loaded values, or the error loading raises (which must match as well)."""
    try:
        return np.asarray(var.values)
    except Exception as exc:  # noqa: BLE001
        return (type(exc).__name__, str(exc))


def assert_same_variable(got: Variable, want: Variable, name: Any) -> None:
    assert got.dims == want.dims, name
    assert got.dtype == want.dtype, name
    assert type(got._data) is type(want._data), name
    assert _same(dict(got.attrs), dict(want.attrs)), (name, got.attrs, want.attrs)
    assert _same(dict(got.encoding), dict(want.encoding)), (name, got.encoding, want.encoding)
    got_values, want_values = _values(got), _values(want)
    assert _same(got_values, want_values), name
    if isinstance(want_values, np.ndarray):
        xr.testing.assert_identical(got, want)


def assert_same_dataset(got: xr.Dataset, want: xr.Dataset) -> None:
    xr.testing.assert_identical(got, want)
    assert list(got.variables) == list(want.variables)
    assert list(got.data_vars) == list(want.data_vars)
    assert set(got.coords) == set(want.coords)
    assert list(got.xindexes) == list(want.xindexes)
    assert dict(got.sizes) == dict(want.sizes)
    assert _same(got.encoding, want.encoding)
    assert _same(dict(got.attrs), dict(want.attrs))
    for name in want.variables:
        g, w = got.variables[name], want.variables[name]
        assert type(g) is type(w), name
        assert g.dtype == w.dtype, name
        assert _same(dict(g.encoding), dict(w.encoding)), (name, g.encoding, w.encoding)
        assert _same(dict(g.attrs), dict(w.attrs)), name


# -- decode_cf_variables: matrix --------------------------------------------------------

_DTYPES = [
    "f4", "f8", ">f4", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "c8",
    "bool", "S1", "S4", "U4", "O", "M8[ns]", "m8[ns]",
]  # fmt: skip

_ATTRS: list[dict[str, Any]] = [
    {},
    {"units": "K", "long_name": "temperature", "cell_methods": "time: mean"},
    {"units": "1"},
    {"units": "m s-1", "standard_name": "wind_speed"},
    {"units": "days since 2000-01-01"},
    {"units": "hours since 1970-01-01 00:00:00", "calendar": "noleap"},
    {"units": "seconds"},
    {"units": "hours"},
    {"units": "Days"},
    {"units": ["not", "a", "string"]},
    {"units": 3},
    {"_FillValue": NAN},
    {"_FillValue": np.float32("nan")},
    {"_FillValue": np.float64("nan"), "units": "K"},
    {"_FillValue": -9999.0},
    {"_FillValue": 0},
    {"_FillValue": None},
    {"_FillValue": [NAN]},
    {"_FillValue": "NaN"},
    {"missing_value": NAN},
    {"missing_value": -1},
    {"_FillValue": NAN, "missing_value": NAN},
    {"scale_factor": 0.5},
    {"add_offset": 10.0},
    {"scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -32768},
    {"_Unsigned": "true"},
    {"_Unsigned": "false", "_FillValue": -1},
    {"_Encoding": "utf-8"},
    {"_SomethingPrivate": 1},
    {"dtype": "bool"},
    {"dtype": "timedelta64[s]", "units": "seconds"},
    {"coordinates": "lat lon"},
    {"coordinates": "not_here"},
    {"bounds": "other"},
    {"grid_mapping": "crs"},
    {"cell_measures": "area: other"},
    {"formula_terms": "a: other"},
    {"climatology": "other"},
    {"valid_range": [0, 1], "valid_min": 0, "flag_values": [1, 2]},
    {"calendar": "standard"},
]

_FLAGS = [
    {},
    {"mask_and_scale": False},
    {"decode_times": False},
    {"decode_times": False, "decode_timedelta": False},
    {"decode_timedelta": True},
    {"decode_timedelta": False},
    {"concat_characters": False},
    {"decode_coords": False},
    {"decode_coords": "all"},
    {"mask_and_scale": {"v": False}},
    {"decode_times": xr.coders.CFDatetimeCoder(time_unit="s")},
    {"use_cftime": True},
    {"mask_and_scale": False, "decode_times": False, "decode_coords": False},
]


def _data(dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.array([[0.0, 1.5, np.nan], [-9999.0, 2.0, 3.0]], dtype=dt)
    if dt.kind == "c":
        return np.array([[0, 1j, 2], [3, 4, 5]], dtype=dt)
    if dt.kind in "iu":
        return np.array([[0, 1, 2], [3, 4, 5]], dtype=dt)
    if dt.kind == "b":
        return np.array([[True, False, True], [False, True, False]])
    if dt.kind == "S":
        return np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]], dtype=dt)
    if dt.kind == "U":
        return np.array([["a", "bb", "c"], ["d", "e", "f"]], dtype=dt)
    if dt.kind == "O":
        return np.array([["a", "bb", "c"], ["d", "e", "f"]], dtype=object)
    if dt.kind == "M":
        return np.array([["2000-01-01", "2000-01-02", "NaT"], ["2001-01-01"] * 3], dtype=dt)
    return np.array([[0, 1, 2], [3, 4, 5]], dtype="m8[s]").astype(dt)


def _variables(dtype: str, attrs: dict[str, Any]) -> dict[str, Variable]:
    """A fresh set of encoded variables (xarray's decoder mutates its input attrs)."""

    def var(dims: tuple[str, ...], values: np.ndarray, attrs: dict[str, Any]) -> Variable:
        data = indexing.LazilyIndexedArray(indexing.NumpyIndexingAdapter(values))
        return Variable(dims, data, dict(attrs), {"chunks": values.shape})

    return {
        "v": var(("y", "x"), _data(dtype), attrs),
        "plain": var(("y", "x"), _data("f4"), {"units": "K", "_FillValue": NAN}),
        "other": var(("y", "x"), _data("f8"), {"long_name": "other"}),
        "lat": var(("y",), np.array([1.0, 2.0]), {"units": "degrees_north"}),
        "lon": var(("x",), np.array([1.0, 2.0, 3.0]), {}),
        "crs": var((), np.array(0, dtype="i4"), {"grid_mapping_name": "latitude_longitude"}),
        "area": var(("y", "x"), _data("f4"), {"units": "m2"}),
    }


def _decode(function, dtype, attrs, flags, global_attrs=None):
    variables = _variables(dtype, attrs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = function(variables, dict(global_attrs or {"title": "t"}), **flags)
        except Exception as exc:  # noqa: BLE001 - errors must match too
            result = exc
    return result, [(w.category, str(w.message)) for w in caught]


def _check_same_decoding(dtype, attrs, flags, global_attrs=None) -> None:
    """Same results as xarray, both copying and changing the given variables in place
    (xarray's reference result afresh each time: reading lazily decoded timedeltas twice
    can give another resolution)."""
    for in_place in (False, True):
        want, want_warnings = _decode(conventions.decode_cf_variables, dtype, attrs, flags, global_attrs)
        got, got_warnings = _decode(
            functools.partial(decode_cf_variables, in_place=in_place), dtype, attrs, flags, global_attrs
        )
        _check_same_result(got, got_warnings, want, want_warnings)


def _check_same_result(got, got_warnings, want, want_warnings) -> None:
    assert got_warnings == want_warnings
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
        return
    assert not isinstance(got, Exception), got
    got_vars, got_attrs, got_coords = got
    want_vars, want_attrs, want_coords = want
    assert list(got_vars) == list(want_vars)
    assert got_coords == want_coords
    assert _same(dict(got_attrs), dict(want_attrs))
    for name in want_vars:
        assert_same_variable(got_vars[name], want_vars[name], name)


@st.composite
def _attribute_sets(draw) -> dict[str, Any]:
    """Attributes of a variable: the union of one to three of the cases above (later
    ones win on a shared key), so active and inert attributes meet in every mix."""
    attrs: dict[str, Any] = {}
    for case in draw(st.lists(st.sampled_from(_ATTRS), min_size=1, max_size=3)):
        attrs.update(case)
    return attrs


@settings(max_examples=600, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(dtype=st.sampled_from(_DTYPES), attrs=_attribute_sets(), flags=st.sampled_from(_FLAGS))
def test_fast_decode_matches_xarray(dtype, attrs, flags):
    """The fast path is a shortcut only: for any data type, mix of attributes and decoding
    flags, the result (variables, order, attrs, encoding, data wrappers, warnings, errors)
    is xarray's."""
    _check_same_decoding(dtype, attrs, flags)


@pytest.mark.parametrize("drop", [None, "v", ["plain", "lat"], ("crs",), {"other", "nothere"}])
def test_fast_decode_matches_xarray_drop_variables(drop):
    for attrs in ({}, {"_FillValue": NAN}, {"coordinates": "lat"}, {"grid_mapping": "crs"}):
        _check_same_decoding("f4", attrs, {"drop_variables": drop})
        _check_same_decoding("f4", attrs, {"drop_variables": drop, "decode_coords": "all"})


@pytest.mark.parametrize(
    "global_attrs", [{"coordinates": "plain other"}, {"coordinates": "missing"}, {}]
)
def test_fast_decode_matches_xarray_global_coordinates(global_attrs):
    _check_same_decoding("f4", {"units": "K"}, {}, global_attrs)
    _check_same_decoding("f4", {"units": "K"}, {"decode_coords": False}, global_attrs)


def test_bounds_target_of_a_time_variable_goes_through_xarray():
    """xarray copies a time variable's units onto its bounds variable before decoding."""

    def variables():
        t = np.array([0.0, 1.0])
        lazy = lambda a: indexing.LazilyIndexedArray(indexing.NumpyIndexingAdapter(a))  # noqa: E731
        return {
            "time": Variable(("time",), lazy(t), {"units": "days since 2000-01-01", "bounds": "tb"}),
            "tb": Variable(("time", "nv"), lazy(np.array([[0.0, 1.0], [1.0, 2.0]])), {}),
        }

    for flags in ({}, {"decode_times": False}):
        want = conventions.decode_cf_variables(variables(), {}, **flags)
        got = decode_cf_variables(variables(), {}, **flags)
        assert list(got[0]) == list(want[0])
        for name in want[0]:
            assert_same_variable(got[0][name], want[0][name], name)
    assert got[0]["tb"].dtype == np.float64  # decode_times=False: left alone


@pytest.mark.parametrize(
    "attrs, plain",
    [
        ({"units": "K", "long_name": "x"}, True),
        ({"_FillValue": NAN}, True),
        ({"_FillValue": np.float32("nan")}, True),
        ({"_FillValue": 1.0}, False),
        ({"units": "days since 2000-01-01"}, False),
        ({"units": "seconds"}, False),
        ({"scale_factor": 2.0}, False),
        ({"coordinates": "lat"}, False),
        ({"_Unsigned": "true"}, False),
        ({"dtype": "bool"}, False),
    ],
)
def test_is_plain_takes_the_fast_path_where_expected(attrs, plain):
    """The matrix above really exercises the fast path (and refuses what it must)."""
    var = _variables("f4", attrs)["v"]
    assert is_plain(var) is plain
    assert is_plain(var, use_cftime=True) is False
    assert is_plain(_variables("i4", {})["v"]) is True
    assert is_plain(_variables("i4", {"_FillValue": NAN})["v"]) is False
    assert is_plain(_variables(">f4", {})["v"]) is False
    assert is_plain(_variables("bool", {})["v"]) is False
    assert is_plain(_variables("O", {})["v"]) is False


# -- direct Dataset assembly ------------------------------------------------------------


def _split(variables, coord_names):
    data_vars, coord_vars = {}, {}
    for name, var in variables.items():
        if name in coord_names or var.dims == (name,):
            coord_vars[name] = var
        else:
            data_vars[name] = var
    return data_vars, coord_vars


@st.composite
def _variable_sets(draw) -> tuple[dict[str, Variable], set[str], Any]:
    """Variables over dimensions x, y, z of drawn sizes (sometimes conflicting), some named
    like a dimension, some scalar; drawn coordinate names and attributes."""
    lazy = lambda a: indexing.LazilyIndexedArray(indexing.NumpyIndexingAdapter(a))  # noqa: E731
    sizes = {d: draw(st.integers(0, 3)) for d in "xyz"}
    variables: dict[str, Variable] = {}
    for name in draw(st.lists(st.sampled_from(["a", "b", "c", "s", "x", "y", "z"]), unique=True, max_size=6)):
        dims = tuple(draw(st.lists(st.sampled_from("xyz"), unique=True, max_size=2)))
        shape = tuple(sizes[d] + (draw(st.integers(0, 1)) if draw(st.integers(0, 9)) == 0 else 0) for d in dims)
        attrs = {"u": 1} if draw(st.booleans()) else {}
        variables[name] = Variable(dims, lazy(np.zeros(shape)), attrs, {"e": 2} if draw(st.booleans()) else {})
    coord_names = set(draw(st.lists(st.sampled_from(sorted(variables) or ["a"]), unique=True, max_size=2)))
    attrs = draw(st.sampled_from([{"title": "t"}, {}, None]))
    return variables, coord_names, attrs


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(case=_variable_sets())
def test_direct_dataset_matches_constructor(case):
    """Direct assembly is a shortcut only: for any set of variables (conflicting sizes, data
    variables named like dimensions, scalars, none) the result, or error, is the
    constructor's."""
    variables, coord_names, attrs = case

    def build(function):
        data_vars, coord_vars = _split(variables, coord_names)
        try:
            return function(data_vars, coord_vars, attrs)
        except Exception as exc:  # noqa: BLE001
            return exc

    want = build(lambda d, c, a: xr.Dataset(d, coords=Coordinates(c, indexes={}), attrs=a))
    got = build(_dataset)
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
        return
    assert_same_dataset(got, want)
    assert got.attrs is not attrs or attrs is None
    assert (got._attrs is None) == (want._attrs is None)
    assert got.xindexes.keys() == want.xindexes.keys() == set()


# -- whole opens against the reference path ---------------------------------------------


def _reference_open(path, **kwargs):
    """xarray's StoreBackendEntrypoint (xarray's decoding and Dataset constructor) on
    the same zarrdask store: the behaviour before the fast paths."""

    class Reference(xr.backends.BackendEntrypoint):
        open_dataset_parameters = (
            "filename_or_obj", "drop_variables", "mask_and_scale", "decode_times",
            "concat_characters", "decode_coords", "use_cftime", "decode_timedelta",
        )  # fmt: skip

        def open_dataset(self, filename_or_obj, *, drop_variables=None, **decoders):
            store = _open_store(
                filename_or_obj, group=None, consolidated=None, storage_options=None,
                zarr_format=None,
            )  # fmt: skip
            return StoreBackendEntrypoint().open_dataset(
                store, drop_variables=drop_variables, **decoders
            )

    return xr.open_dataset(path, engine=Reference, **kwargs)


def _mixed_dataset() -> xr.Dataset:
    rng = np.random.default_rng(0)
    shape = (4, 3, 5)
    dims = ("time", "lat", "lon")
    packed = rng.normal(280, 5, shape).astype("f4")
    packed[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            "plain32": (dims, rng.standard_normal(shape).astype("f4"), {"units": "K", "long_name": "p"}),
            "plain64": (dims, rng.standard_normal(shape), {"cell_methods": "time: mean"}),
            "ints": (dims, rng.integers(0, 100, shape).astype("i2"), {"units": "1"}),
            "uints": (dims, rng.integers(0, 100, shape).astype("u1")),
            "packed": (dims, packed, {"units": "K"}),
            "masked_int": (dims, rng.integers(0, 9, shape).astype("i4")),
            "flag": (dims, rng.integers(0, 2, shape).astype(bool)),
            "duration": (dims, rng.integers(0, 9, shape).astype("m8[s]").astype("m8[ns]")),
            "when": (("time",), pd.date_range("2001-01-01", periods=4), {"long_name": "w"}),
            "label": (("lon",), np.array(["a", "bb", "c", "d", "e"], dtype=object)),
            "fixed": (("lon",), np.array([b"a", b"b", b"c", b"d", b"e"])),
            "with_coords": (("lat", "lon"), rng.standard_normal((3, 5)), {"units": "m"}),
            "scalar": ((), 1.5, {"units": "Pa"}),
        },
        coords={
            "time": pd.date_range("2000-01-01", periods=4, freq="D"),
            "lat": ("lat", np.linspace(-45, 45, 3), {"units": "degrees_north"}),
            "lon": ("lon", np.arange(5.0), {"units": "degrees_east"}),
            "aux": (("lat", "lon"), rng.standard_normal((3, 5)), {"units": "1"}),
        },
        attrs={"title": "mixed", "history": "made up"},
    )
    ds["packed"].encoding = {"dtype": "i2", "scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -32768}
    ds["masked_int"].encoding = {"_FillValue": -1}
    ds["plain64"].encoding = {"_FillValue": -9999.0}
    return ds


_OPEN_FLAGS = [
    {},
    {"mask_and_scale": False},
    {"decode_times": False},
    {"decode_timedelta": True},
    {"decode_coords": False},
    {"decode_coords": "all"},
    {"concat_characters": False},
    {"drop_variables": ["plain32", "ints"]},
    {"mask_and_scale": False, "decode_times": False, "decode_coords": False},
    {"chunks": {}},
    {"create_default_indexes": False},
    {"decode_cf": False},
]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("flags", _OPEN_FLAGS, ids=[repr(f)[:60] for f in _OPEN_FLAGS])
def test_open_matches_reference_path(tmp_path, zarr_format, flags):
    path = tmp_path / "mixed.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _mixed_dataset().to_zarr(path, zarr_format=zarr_format, consolidated=True)
    with warnings.catch_warnings(record=True) as want_warnings:
        warnings.simplefilter("always")
        want = _reference_open(path, **flags)
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = xr.open_dataset(path, engine=ENGINE, **flags)
    assert [str(w.message) for w in got_warnings] == [str(w.message) for w in want_warnings]
    assert_same_dataset(got, want)
    if "chunks" in flags:
        for name in want.data_vars:
            assert got[name].chunks == want[name].chunks
    assert_same_dataset(got.load(), want.load())


def test_open_many_plain_variables_matches_reference_path(tmp_path):
    """The benchmark's shape: many plain float32 variables with NaN ``_FillValue``."""
    rng = np.random.default_rng(1)
    ds = xr.Dataset(
        {
            f"v{i}": (("time", "y"), rng.standard_normal((3, 4)).astype("f4"), {"units": "1", "n": i})
            for i in range(12)
        },
        coords={"time": pd.date_range("2000-01-01", periods=3), "y": np.arange(4.0)},
    )
    for zarr_format, consolidated in itertools.product((2, 3), (True, False)):
        path = tmp_path / f"many{zarr_format}{consolidated}.zarr"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_zarr(path, zarr_format=zarr_format, consolidated=consolidated)
        for flags in ({}, {"mask_and_scale": False}, {"chunks": {}}):
            got = xr.open_dataset(path, engine=ENGINE, **flags)
            want = _reference_open(path, **flags)
            assert_same_dataset(got, want)
            if flags.get("mask_and_scale", True):  # else _FillValue stays an attribute
                xr.testing.assert_identical(got, ds)
            # the plain variables did take the fast path and still carry the NaN fill
            enc = got["v3"].encoding
            assert enc["dtype"] == np.dtype("f4")
            if flags.get("mask_and_scale", True):
                assert np.isnan(enc["_FillValue"])
