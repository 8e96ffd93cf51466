"""Attribute values as the documents hold them (``metadata/attribute_values.py``): numpy
scalars and arrays are stored as the Python values they equal, read back equal from a
fresh open; what JSON cannot hold unchanged is refused, naming where it sits, and nothing
is written."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zarrdask
from zarrdask.errors import InvalidTypeError, InvalidValueError

_NUMERIC = st.sampled_from(["?", "i1", "u2", "<i8", "<u8", "<f2", "<f4", "<f8", "<U3"])
_SCALARS = _NUMERIC.flatmap(lambda dt: hnp.from_dtype(np.dtype(dt)))
_ARRAYS = _NUMERIC.flatmap(lambda dt: hnp.arrays(np.dtype(dt), hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)))
_PLAIN = st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats() | st.text(max_size=4)
_VALUES = st.recursive(
    _PLAIN | _SCALARS | _ARRAYS,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


def _equal(given_value, stored) -> bool:
    """``stored`` (read back) is JSON-native and equals ``given_value`` exactly (NaN as NaN)."""
    if isinstance(given_value, (np.ndarray, np.generic)):
        array = np.asarray(given_value)
        if array.ndim == 0:
            return not isinstance(stored, list) and _equal(array.item(), stored)
        return isinstance(stored, list) and len(stored) == len(array) and all(
            _equal(item, got) for item, got in zip(array, stored))
    if isinstance(given_value, dict):
        return isinstance(stored, dict) and stored.keys() == given_value.keys() and all(
            _equal(given_value[k], stored[k]) for k in given_value)
    if isinstance(given_value, (list, tuple)):
        return isinstance(stored, list) and len(stored) == len(given_value) and all(
            _equal(a, b) for a, b in zip(given_value, stored))
    if given_value is None or isinstance(given_value, (bool, str)):
        return type(stored) is type(given_value) and stored == given_value
    if isinstance(given_value, float) and math.isnan(given_value):
        return isinstance(stored, float) and math.isnan(stored)
    return type(stored) in (int, float) and stored == given_value and isinstance(stored, bool) is False


@pytest.mark.parametrize("zarr_format", [2, 3])
@settings(max_examples=60, deadline=None)
@given(value=_VALUES)
def test_numpy_values_are_stored_as_the_python_values_they_equal(tmp_path_factory, zarr_format, value):
    path = str(tmp_path_factory.mktemp("attrs") / "a.zarr")
    a = zarrdask.create_array(path, shape=(2,), chunks=(2,), dtype="i1", zarr_format=zarr_format,
                              attributes={"made": value})
    a.attrs["set"] = value
    a.attrs.update({"updated": value})
    group = zarrdask.open_group(path.replace("a.zarr", "g.zarr"), mode="w", zarr_format=zarr_format)
    group.attrs.put({"put": value})
    stored = zarrdask.open_array(path).attrs.asdict()
    for key in ("made", "set", "updated"):
        assert _equal(value, stored[key]), (key, value, stored[key])
    assert _equal(value, zarrdask.open_group(path.replace("a.zarr", "g.zarr"), mode="r").attrs["put"])


@pytest.mark.parametrize(("value", "error", "where", "fix"), [
    ({1: "a"}, InvalidTypeError, "attributes['k']", "e.g. '1'"),
    ({"a": [{2: 1}]}, InvalidTypeError, "attributes['k']['a'][0]", "e.g. '2'"),
    (b"x", InvalidTypeError, "attributes['k']", "value.decode()"),
    (np.datetime64("2020-01-01"), InvalidTypeError, "attributes['k']", "np.datetime_as_string"),
    (np.timedelta64(3, "s"), InvalidTypeError, "attributes['k']", "np.timedelta64(1, 's')"),
    ([np.complex64(1 + 2j)], InvalidTypeError, "attributes['k'][0]", "[value.real, value.imag]"),
    (np.array([b"a"]), InvalidTypeError, "attributes['k']", "value.decode()"),
    (np.longdouble(1) / 3, InvalidValueError, "attributes['k']", "float(value)"),
    (object(), InvalidTypeError, "attributes['k']", "pass a str, number, bool, None, list or dict"),
])
def test_what_a_document_cannot_hold_unchanged_is_refused_and_nothing_written(tmp_path, value, error, where, fix):
    if isinstance(value, np.longdouble) and np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("this machine's long double is a 64-bit float")
    path = tmp_path / "a.zarr"
    a = zarrdask.create_array(str(path), shape=(2,), chunks=(2,), dtype="i1", attributes={"kept": 1})
    before = (path / "zarr.json").read_bytes()
    with pytest.raises(error) as raised:
        a.attrs["k"] = value
    assert where in str(raised.value) and fix in str(raised.value)
    assert (path / "zarr.json").read_bytes() == before
    with pytest.raises(error):
        zarrdask.create_array(str(tmp_path / "b.zarr"), shape=(2,), chunks=(2,), dtype="i1", attributes={"k": value})
    assert not (tmp_path / "b.zarr").exists()


def test_nan_and_infinity_are_written_as_zarr_python_writes_them(tmp_path):
    """Bare NaN / Infinity tokens: Python's json and zarr-python read them; strict JSON
    readers (TensorStore, zarrs, JavaScript) refuse the document (README, "Decisions")."""
    path = tmp_path / "a.zarr"
    a = zarrdask.create_array(str(path), shape=(2,), chunks=(2,), dtype="f4")
    a.attrs.update({"nan": np.float32("nan"), "inf": [np.inf, -np.inf]})
    doc = (path / "zarr.json").read_text()
    assert '"nan": NaN' in doc and "Infinity" in doc and "-Infinity" in doc
    stored = json.loads(doc)["attributes"]
    assert math.isnan(stored["nan"]) and stored["inf"] == [math.inf, -math.inf]
