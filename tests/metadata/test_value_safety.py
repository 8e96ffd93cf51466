"""Values are never changed on the way in (issue 41): fill values and written values that
the array's data type cannot hold are refused, naming the value and what the type holds;
the rest round-trip bit-exactly.

The oracle here is exact arithmetic (``fractions.Fraction``), independent of numpy's casts:
an integer type holds a finite integral real value in its range; a float type holds any
real value whose rounding does not overflow to infinity (rounding to the nearest float is
allowed); a real type holds a complex value only with imaginary part zero.
"""

from __future__ import annotations

import json
import warnings
from fractions import Fraction
from typing import Any

import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zarrdask
from zarrdask.errors import DatasetError, InvalidValueError, MetadataError
from zarrdask.metadata.dtypes.casting import held_values
from zarrdask.storage.memory import MemoryStore

SETTINGS = settings(derandomize=True, deadline=None, max_examples=300, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

NUMERIC = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"]


# -- the oracle ----------------------------------------------------------------------


def _real_held(x: float | int, target: np.dtype) -> bool:
    """Whether real ``x`` (a Python number, exact) survives as ``target`` (real, not complex)."""
    if isinstance(x, float) and not np.isfinite(x):
        return target.kind == "f"
    exact = Fraction(x)
    if target.kind == "b":
        return exact in (0, 1)
    if target.kind in "iu":
        info = np.iinfo(target)
        return exact.denominator == 1 and info.min <= exact <= info.max
    info = np.finfo(target)
    overflow_at = (Fraction(float(info.max)) + Fraction(2) ** int(info.maxexp)) / 2  # rounds to infinity from here
    return abs(exact) < overflow_at


def held(value: Any, target: np.dtype) -> bool:
    """Whether ``target`` holds numpy scalar (or Python number) ``value``: the oracle."""
    c = complex(value) if np.iscomplexobj(value) else None
    if c is None:
        x = value.item() if isinstance(value, np.generic) else value
        x = int(x) if isinstance(x, (bool, np.bool_)) else x
        return _real_held(x, target.type(0).real.dtype) if target.kind == "c" else _real_held(x, target)
    if target.kind == "c":
        part = np.dtype(f"f{target.itemsize // 2}")
        return _real_held(c.real, part) and _real_held(c.imag, part)
    return c.imag == 0 and _real_held(c.real, target)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _expected(values: np.ndarray, target: np.dtype) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return (values.real if values.dtype.kind == "c" and target.kind != "c" else values).astype(target)


# -- properties ----------------------------------------------------------------------


@SETTINGS
@given(source=st.sampled_from(NUMERIC), target=st.sampled_from(NUMERIC), zarr_format=st.sampled_from([2, 3]),
       data=st.data())
def test_written_values_refused_exactly_where_they_would_change(source: str, target: str, zarr_format: int,
                                                                 data: st.DataObject) -> None:
    values = data.draw(hnp.arrays(np.dtype(source), st.integers(1, 6),
                                  elements=hnp.from_dtype(np.dtype(source), allow_subnormal=True)))
    dtype = np.dtype(target)
    a = zarrdask.create_array(MemoryStore(), shape=values.shape, chunks=(4,), dtype=dtype, zarr_format=zarr_format)
    if all(held(v, dtype) for v in values):
        a[:] = values
        assert _bits(a[:]) == _bits(_expected(values, dtype))
    else:
        before = a[:]
        with pytest.raises(InvalidValueError, match=f"array of data type {dtype}"):
            a[:] = values
        assert _bits(a[:]) == _bits(before)


_SCALARS = st.one_of(
    st.booleans(), st.integers(-(2**65), 2**65), st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0, 1, -1, 255, 256, 2**63 - 1, 2**63, 2**64 - 1, -(2**63), 65504.0, 65520.0, 1.5, 0.0, -0.0]),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
)


@SETTINGS
@given(value=_SCALARS, target=st.sampled_from(NUMERIC), zarr_format=st.sampled_from([2, 3]))
def test_fill_values_refused_exactly_where_they_would_change(value: Any, target: str, zarr_format: int) -> None:
    dtype = np.dtype(target)
    store = MemoryStore()
    if not held(value, dtype):
        with pytest.raises(MetadataError, match=r"fill_value: .*data type"):
            zarrdask.create_array(store, shape=(3,), chunks=(2,), dtype=dtype, fill_value=value,
                                  zarr_format=zarr_format)
        return
    zarrdask.create_array(store, shape=(3,), chunks=(2,), dtype=dtype, fill_value=value, zarr_format=zarr_format)
    reopened = zarrdask.open_array(store)
    expected = _expected(np.asarray(value), dtype)
    if not (dtype.kind in "fc" and np.isnan(expected).any() and zarr_format == 2):  # (v2 JSON: one NaN only)
        assert _bits(np.asarray(reopened.fill_value, dtype)) == _bits(expected)
        assert _bits(reopened[:]) == _bits(np.full(3, expected))


@SETTINGS
@given(a=st.sampled_from(NUMERIC), b=st.sampled_from(NUMERIC), value=st.one_of(_SCALARS, st.tuples(_SCALARS, _SCALARS)))
def test_struct_fill_values_are_held_field_by_field(a: str, b: str, value: Any) -> None:
    """One value for every field, or one per field: each held exactly by its field's type
    (numpy would cast a scalar or a tuple to a struct silently: 2.5 -> (2, 2.5))."""
    dtype = np.dtype([("a", a), ("b", b)])
    parts = value if isinstance(value, tuple) else (value, value)
    store = MemoryStore()
    refused = next((name for name, v, t in zip("ab", parts, (a, b)) if not held(v, np.dtype(t))), None)
    if refused is not None:
        with pytest.raises(MetadataError, match=rf"fill_value/{refused}: .*data type"):
            zarrdask.create_array(store, shape=(2,), chunks=(2,), dtype=dtype, fill_value=value)
        return
    zarrdask.create_array(store, shape=(2,), chunks=(2,), dtype=dtype, fill_value=value)
    fill = np.asarray(zarrdask.open_array(store).fill_value, dtype)
    for name, v, t in zip("ab", parts, (a, b)):
        expected = _expected(np.asarray(v), np.dtype(t))
        if not (np.dtype(t).kind in "fc" and np.isnan(expected).any()):  # (a NaN's payload: the JSON's own rules)
            assert _bits(fill[name]) == _bits(expected), (name, v, t)


_TEXT = st.text(alphabet=st.characters(blacklist_characters="\x00", max_codepoint=0x2FF), max_size=6)
_BYTES = st.binary(max_size=6).filter(lambda b: not b.endswith(b"\x00"))  # (numpy's S and U drop trailing NULs)


@SETTINGS
@given(kind=st.sampled_from("USV"), n=st.integers(1, 4), value=st.one_of(_TEXT, _BYTES, st.integers(-5, 500)),
       as_fill=st.booleans())
def test_fixed_size_text_and_bytes_are_never_cut_or_converted(kind: str, n: int, value: Any, as_fill: bool) -> None:
    """numpy writes 'abcdef' into <U3 as 'abc' and 5 as '5'; here a value of another kind,
    or longer than the type holds, is refused (a raw type pads shorter bytes with zeros)."""
    dtype = np.dtype(f"{kind}{n}")
    item = str if kind == "U" else bytes
    ok = isinstance(value, item) and len(value) <= n
    store = MemoryStore()

    def write() -> Any:
        if as_fill:
            return zarrdask.create_array(store, shape=(2,), chunks=(2,), dtype=dtype, fill_value=value)[...]
        a = zarrdask.create_array(store, shape=(2,), chunks=(2,), dtype=dtype)
        a[...] = value
        return a[...]

    if not ok:
        error = MetadataError if as_fill else InvalidValueError
        with pytest.raises(error, match="is longer than data type|is not (str|bytes)"):
            write()
        return
    got = write()
    expected = value.ljust(n, b"\0") if kind == "V" else value
    assert [bytes(x) if kind == "V" else x for x in got.tolist()] == [expected, expected]


@SETTINGS
@given(a=st.sampled_from(NUMERIC), b=st.sampled_from(NUMERIC),
       value=st.one_of(_SCALARS, st.tuples(_SCALARS, _SCALARS), st.lists(st.tuples(_SCALARS, _SCALARS), min_size=2,
                                                                         max_size=2)))
def test_struct_writes_are_held_field_by_field(a: str, b: str, value: Any) -> None:
    """A scalar for every field, a record, or a list of records: each field's values held
    as a write of that field's type is, the error naming the field."""
    dtype = np.dtype([("a", a), ("b", b)])
    records = value if isinstance(value, list) else [value if isinstance(value, tuple) else (value, value)] * 2
    arr = zarrdask.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype)
    refused = next((name for record in records for name, v, t in zip("ab", record, (a, b))
                    if not held(v, np.dtype(t))), None)
    if refused is not None:
        with pytest.raises(InvalidValueError, match=rf"field '{refused}': "):
            arr[...] = value
        return
    arr[...] = value
    got = arr[...]
    for name, t, i in (("a", a, 0), ("b", b, 1)):
        # (value by value: numpy makes [0, 2**63 + 1] or [2**53 + 1, 0.0] a float64 array, losing the 1)
        expected = np.array([_expected(np.array(r[i]), np.dtype(t)) for r in records], dtype=t)
        if not (np.dtype(t).kind in "fc" and np.isnan(expected).any()):
            assert _bits(got[name]) == _bits(expected), (name, value)


@SETTINGS
@given(a=st.sampled_from(NUMERIC), b=st.sampled_from(NUMERIC),
       items=st.one_of(_SCALARS, st.lists(_SCALARS, min_size=2, max_size=2)), other=_SCALARS)
@example(a="int64", b="bool", items=[2**53 + 1, 0.0], other=False)  # (an int beyond float64's exact range)
def test_subarray_fields_are_held_item_by_item(a: str, b: str, items: Any, other: Any) -> None:
    """A field of two values (v2 structured types) takes a list of two (or one value for
    both), each held as a write of the field's item type is (numpy would cast 2.5 into an
    int subarray as 2)."""
    dtype = np.dtype([("a", a, (2,)), ("b", b)])
    arr = zarrdask.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype, zarr_format=2)  # (v2's only)
    listed = items if isinstance(items, list) else [items, items]
    refused = "a" if not all(held(v, np.dtype(a)) for v in listed) else "b" if not held(other, np.dtype(b)) else None
    if refused is not None:
        with pytest.raises(InvalidValueError, match=rf"field '{refused}': "):
            arr[...] = (items, other)
        return
    arr[...] = (items, other)
    got = arr[...]
    # (item by item: numpy makes [2**53 + 1, 0.0] a float64 array, losing the 1)
    expected = np.array([_expected(np.array(v), np.dtype(a)) for v in listed], dtype=a)
    if not (np.dtype(a).kind in "fc" and np.isnan(expected).any()):
        assert all(_bits(row) == _bits(expected) for row in got["a"]), (items, got)


def test_a_subarray_field_of_another_length_is_refused_naming_it() -> None:
    arr = zarrdask.create_array(MemoryStore(), shape=(1,), chunks=(1,), dtype=[("a", "i4", (2,)), ("b", "f8")],
                                zarr_format=2)
    with pytest.raises(InvalidValueError, match=r"field 'a': cannot store values of shape \(3,\) .* holds \(2,\)"):
        arr[...] = ([1, 2, 3], 1.0)


@pytest.mark.parametrize(("dtype", "value", "message"), [
    ("M8[s]", 1.5, "is not a datetime"),
    ("M8[s]", True, "is not a datetime"),
    ("M8[s]", np.timedelta64(5, "s"), "is not a datetime"),
    ("M8[s]", "", "is not a datetime"),
    ("M8[s]", "2020-01-01T00:00:00.5", "cannot be held exactly by data type datetime64"),
    ("m8[ms]", np.datetime64("2020-01-01"), "is not a timedelta"),
    ("m8[ms]", 1.5, "is not a timedelta"),
    ("m8[ms]", "5", "is not a timedelta"),
    ("m8[ms]", -(2**63), "does not fit data type"),
    ("u1", np.datetime64("2020-01-01"), "is not a number"),
    ("i8", np.timedelta64(5, "s"), "is not a number"),
    ("f4", "3", "is not a number"),
    ("bool", b"1", "is not a number"),
])
def test_times_and_numbers_are_not_each_other(dtype: str, value: Any, message: str) -> None:
    """numpy would write a date into uint8 as its day count cut to 8 bits, 1.5 into a
    timedelta as 1 unit, a datetime into a timedelta as a duration, '' as NaT."""
    arr = zarrdask.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype)
    with pytest.raises(InvalidValueError, match=message):
        arr[...] = value
    with pytest.raises(MetadataError, match=message if message != "is not a number" else "(is not|expected) a number"):
        zarrdask.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype, fill_value=value)


@pytest.mark.parametrize(("dtype", "value", "stored"), [
    ("M8[s]", "2020-01-01T00:00:01", np.datetime64("2020-01-01T00:00:01")),
    ("M8[s]", "NaT", np.datetime64("NaT")),
    ("M8[ms]", np.datetime64("2020-01-01"), np.datetime64("2020-01-01T00:00:00.000")),
    ("m8[ms]", 1500, np.timedelta64(1500, "ms")),
    ("m8[ms]", np.timedelta64(2, "s"), np.timedelta64(2000, "ms")),
])
def test_times_a_time_type_holds(dtype: str, value: Any, stored: Any) -> None:
    arr = zarrdask.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype)
    arr[...] = value
    assert _bits(arr[...]) == _bits(np.full(2, stored, dtype=dtype))


@pytest.mark.parametrize(("name", "value", "ok"), [
    ("int4", 7, True), ("int4", 8, False), ("int4", -9, False), ("int4", 1.5, False), ("uint4", -1, False),
    ("float8_e4m3fn", 448.0, True), ("float8_e4m3fn", 1e6, False), ("float8_e4m3fn", float("inf"), False),
    ("bfloat16", 1.1, True), ("bfloat16", 1e39, False), ("bfloat16", float("nan"), True),
    ("float4_e2m1fn", float("nan"), False),
])
def test_ml_dtypes_values_are_checked_as_numbers(name: str, value: Any, ok: bool) -> None:
    """int4 took -374612594 as -2 and 1.5 as 1; float8_e4m3fn (no infinity) 1e6 as NaN."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    dtype = np.dtype(getattr(ml_dtypes, name))
    arr = zarrdask.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype)
    if not ok:
        with pytest.raises(InvalidValueError, match="fit data type|is not an integer"):
            arr[...] = value
        return
    arr[...] = value
    assert _bits(arr[...]) == _bits(np.full(2, value).astype(dtype))


@pytest.mark.parametrize(("dtype", "fill"), [(str, float("nan")), (str, 5), (str, b"x"), (bytes, "x"), (bytes, 5)])
def test_a_text_or_bytes_fill_value_of_another_kind_is_refused(dtype: Any, fill: Any) -> None:
    """A string array's fill value 5 was read back as the item 5."""
    with pytest.raises(MetadataError, match="fill_value: .* is not (str|bytes)"):
        zarrdask.create_array(MemoryStore(), shape=(1,), chunks=(1,), dtype=dtype, fill_value=fill)


def test_a_struct_fill_value_of_another_length_is_refused() -> None:
    with pytest.raises(MetadataError, match=r"fill_value: \(1,\) has 1 values for a struct of 2 fields \['x', 'y'\]"):
        zarrdask.create_array(MemoryStore(), shape=(2,), dtype=[("x", "i2"), ("y", "f4")], fill_value=(1,))


# -- the measured cases ------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("dtype", "fill", "message"), [
    ("u1", 300, "300 does not fit data type uint8 (0..255)"),
    ("i4", float("nan"), "nan: data type int32 has no NaN"),
    ("u2", -1, "-1 does not fit data type uint16 (0..65535)"),
    ("i2", 1e10, "10000000000.0 does not fit data type int16 (-32768..32767)"),
    ("i8", 1.5, "1.5 is not an integer: data type int64 holds integers only"),
    ("f2", 1e6, "1000000.0 does not fit data type float16"),
    ("?", 2, "2 does not fit data type bool"),
    ("f8", 1 + 2j, "has an imaginary part"),
])
def test_fill_value_the_dtype_cannot_hold(dtype: str, fill: Any, message: str, zarr_format: int) -> None:
    for make in (lambda **kw: zarrdask.create_array(MemoryStore(), **kw), lambda **kw: zarrdask.create(**kw)):
        with pytest.raises(MetadataError) as info:
            make(shape=(4,), dtype=dtype, fill_value=fill, zarr_format=zarr_format)
        assert message in str(info.value) and "fill_value" in str(info.value)
    with pytest.raises(ValueError, match="pass a fill_value that"):  # (zarr-python users catch ValueError)
        zarrdask.full((4,), fill, dtype=dtype, zarr_format=zarr_format)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("dtype", "fill"), [("f4", (None,)), ("f4", [1]), ("i4", np.array([1])), ("f8", ()),
                                             ("?", [True]), ("M8[s]", ["NaT"]), ("U3", ["a"])])
def test_a_fill_value_of_many_values_is_refused(dtype: str, fill: Any, zarr_format: int) -> None:
    """numpy would make an array of it ((None,) as [NaN]), stored as some other value or failing later."""
    x = da.ones((4,), chunks=2, dtype=dtype)
    for make in (lambda: zarrdask.create_array(MemoryStore(), shape=(4,), dtype=dtype, fill_value=fill,
                                               zarr_format=zarr_format),
                 lambda: zarrdask.to_zarr(x, MemoryStore(), fill_value=fill, zarr_format=zarr_format)):
        with pytest.raises(MetadataError, match=r"fill_value: .* is not one value: .* pass one, such as"):
            make()


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("dtype", "fill"), [("i4", 0.0), ("u8", 2**64 - 1), ("i8", -(2**63)), ("f4", 0.1),
                                             ("?", 1), ("c8", 1 + 2j), ("f2", 65504.0), ("i2", np.int64(-5))])
def test_fill_value_the_dtype_holds(dtype: str, fill: Any, zarr_format: int) -> None:
    a = zarrdask.create_array(MemoryStore(), shape=(4,), dtype=dtype, fill_value=fill, zarr_format=zarr_format)
    assert _bits(np.asarray(a.fill_value, dtype)) == _bits(_expected(np.asarray(fill), np.dtype(dtype)))


def test_time_fill_value_in_a_coarser_unit() -> None:
    with pytest.raises(MetadataError, match=r"2020-01-01T06 cannot be held exactly by data type datetime64\[D\]"):
        zarrdask.create_array(MemoryStore(), shape=(2,), dtype="M8[D]", fill_value=np.datetime64("2020-01-01T06"))


@pytest.mark.parametrize(("doc_fill", "ok"), [(0.0, True), (7, True), (300, False), (1.5, False), ("NaN", False)])
def test_stored_v2_fill_values_read_as_today_where_held(doc_fill: Any, ok: bool) -> None:
    store = MemoryStore()
    doc = {"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|u1", "fill_value": doc_fill, "order": "C",
           "compressor": None, "filters": None}
    store._data["a/.zarray"] = json.dumps(doc).encode()
    if ok:
        assert zarrdask.open_array(store, path="a").fill_value == int(doc_fill)
    else:
        with pytest.raises(MetadataError, match=r"a/\.zarray: fill_value: invalid fill value"):
            zarrdask.open_array(store, path="a")


@pytest.mark.parametrize(("doc_fill", "ok"), [(0, True), (1, True), (True, True), (2, False)])
def test_stored_v2_bool_fill_values(doc_fill: Any, ok: bool) -> None:
    store = MemoryStore()
    doc = {"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|b1", "fill_value": doc_fill, "order": "C",
           "compressor": None, "filters": None}
    store._data["a/.zarray"] = json.dumps(doc).encode()
    if ok:
        assert zarrdask.open_array(store, path="a").fill_value == bool(doc_fill)
    else:
        with pytest.raises(MetadataError, match="fill_value: .*2 does not fit data type bool"):
            zarrdask.open_array(store, path="a")


@pytest.mark.parametrize(("target", "value", "message"), [
    ("i2", np.array([1, 40000], "i4"), "cannot store int32 values in an array of data type int16: 40000 does not "
                                        "fit data type int16 (-32768..32767)"),
    ("i8", np.array([1.5, 2.0]), "1.5 is not an integer: data type int64 holds integers only"),
    ("i4", np.array([np.nan, 1.0]), "nan: data type int32 has no NaN"),
    ("u1", 300, "300 does not fit data type uint8 (0..255)"),
    ("u8", [2**64, 1], "18446744073709551616 does not fit data type uint64"),
    ("f2", np.array([70000.0]), "70000.0 does not fit data type float16"),
    ("f4", [1e39], "1e+39 does not fit data type float32"),
    ("f8", np.array([1 + 1j]), "(1+1j) has an imaginary part"),
    ("?", [0, 2], "2 does not fit data type bool"),
    ("M8[D]", np.array(["2026-01-04T06:00"], "M8[ns]"), "cannot be held exactly by data type datetime64[D]"),
])
def test_written_values_the_dtype_cannot_hold(target: str, value: Any, message: str) -> None:
    a = zarrdask.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=target)
    before = a[:]
    for write in (a.__setitem__, a.oindex.__setitem__, a.vindex.__setitem__):
        selection = slice(None) if write == a.__setitem__ else ([0, 1],)
        with pytest.raises(InvalidValueError) as info:
            write(selection, value)
        assert message in str(info.value) and "values.astype(" in str(info.value)
    assert _bits(a[:]) == _bits(before)


@pytest.mark.parametrize(("target", "value"), [
    ("i2", np.array([1, -32768], "i4")), ("u8", [2**64 - 1, 1]), ("i8", np.array([1.0, -(2.0**63)])),
    ("f4", np.array([0.1, 16777217])), ("f2", [65504.0, 1e-8]), ("c8", np.array([1e30 + 1e-30j, np.nan])),
    ("?", [0, 1]), ("i4", np.array([3 + 0j, 4])), ("M8[ns]", np.array(["2026-01-04"], "M8[D]")),
    ("u1", np.array([True, False])), ("f8", np.array([np.inf, -np.inf, np.nan], "f4")),
])
def test_written_values_the_dtype_holds(target: str, value: Any) -> None:
    a = zarrdask.create_array(MemoryStore(), shape=(np.size(value),), chunks=(2,), dtype=target)
    a[:] = value
    expected = np.array(value, dtype=target) if isinstance(value, list) else _expected(value, np.dtype(target))
    assert _bits(a[:]) == _bits(expected)


def test_a_field_written_alone_is_checked() -> None:
    a = zarrdask.create_array(MemoryStore(), shape=(2,), dtype=[("x", "i2"), ("y", "f4")])
    a.set_basic_selection(slice(None), [1, 2], fields="x")
    with pytest.raises(InvalidValueError, match="40000 does not fit data type int16"):
        a.set_basic_selection(slice(None), [40000, 2], fields="x")
    assert a[:]["x"].tolist() == [1, 2]


def test_same_dtype_is_neither_checked_nor_copied() -> None:
    values = np.arange(10, dtype="f4")
    assert held_values(values, np.dtype("f4")) is values


def test_dask_to_zarr_checks_every_block() -> None:
    da = pytest.importorskip("dask.array")
    good = da.from_array(np.arange(8, dtype="i4"), chunks=4)
    bad = da.from_array(np.array([0, 1, 2, 3, 4, 5, 6, 40000], "i4"), chunks=4)
    a = zarrdask.create_array(MemoryStore(), shape=(8,), chunks=(4,), dtype="i2")
    zarrdask.to_zarr(good, a)
    assert a[:].tolist() == list(range(8))
    with pytest.raises(InvalidValueError, match="40000 does not fit data type int16"):
        zarrdask.to_zarr(bad, a)
    assert a[:].tolist() == list(range(8))  # (the block with 40000 was not written)


def test_zarr_python_reads_the_fill_values(tmp_path: Any) -> None:
    zarr = pytest.importorskip("zarr")
    for zarr_format in (2, 3):
        for dtype, fill in [("u1", 255), ("i8", -(2**63)), ("u8", 2**64 - 1), ("f4", 0.1), ("c16", 1 - 2j),
                            ("?", True), ("i2", -7.0)]:
            path = str(tmp_path / f"{dtype}-{zarr_format}.zarr")
            zarrdask.create_array(path, shape=(2,), dtype=dtype, fill_value=fill, zarr_format=zarr_format)
            z = zarr.open_array(path, mode="r")
            assert _bits(np.asarray(z.fill_value, dtype)) == _bits(_expected(np.asarray(fill), np.dtype(dtype)))
            assert _bits(z[:]) == _bits(np.full(2, _expected(np.asarray(fill), np.dtype(dtype))))


# -- the xarray writer -------------------------------------------------------------


@pytest.fixture
def stored(tmp_path: Any) -> str:
    xr = pytest.importorskip("xarray")
    pd = pytest.importorskip("pandas")
    import zarrdask.xarray_backend  # noqa: F401  (the accessor)

    path = str(tmp_path / "ds.zarr")
    ds = xr.Dataset({"v": ("time", np.array([1, 2, 3], "i2"))},
                    coords={"time": pd.date_range("2026-01-01", periods=3, freq="D")})
    ds.zarrdask.to_zarr(path, encoding={"time": {"units": "days since 2026-01-01", "dtype": "int64"}})
    return path


def _appended(times: Any, values: Any, chunked: bool = False) -> Any:
    import xarray as xr

    ds = xr.Dataset({"v": ("time", values)}, coords={"time": times})
    return ds.chunk() if chunked else ds


@pytest.mark.filterwarnings("ignore:Times can't be serialized faithfully")
@pytest.mark.parametrize("chunked", [False, True])
def test_append_of_times_the_stored_units_cannot_hold(stored: str, chunked: bool) -> None:
    import pandas as pd
    import xarray as xr

    new = _appended(pd.date_range("2026-01-04", periods=2, freq="6h"), np.array([4, 5], "i2"), chunked)
    with pytest.raises(DatasetError) as info:
        new.zarrdask.to_zarr(stored, append_dim="time")
    message = str(info.value)
    assert "append to 'time': 2026-01-04 06:00:00 cannot be stored as int64 'days since 2026-01-01'" in message
    assert "encoding={'time': {'units': 'hours since 2026-01-01'}}" in message
    back = xr.open_dataset(stored, engine="zarrdask")
    assert back.sizes["time"] == 3  # nothing was appended


@pytest.mark.parametrize("chunked", [False, True])
def test_append_of_whole_days_and_rounded_floats(stored: str, chunked: bool) -> None:
    import pandas as pd
    import xarray as xr

    new = _appended(pd.date_range("2026-01-04", periods=2, freq="D"), np.array([7.4, 8.6]), chunked)
    new.zarrdask.to_zarr(stored, append_dim="time")
    back = xr.open_dataset(stored, engine="zarrdask")
    assert back.v.dtype == np.int16 and back.v.values.tolist() == [1, 2, 3, 7, 9]  # (xarray's rounding into ints)
    assert str(back.time.values[-1])[:10] == "2026-01-05"


def test_append_overflowing_the_stored_dtype(stored: str) -> None:
    import pandas as pd
    import xarray as xr

    new = _appended(pd.date_range("2026-01-04", periods=2, freq="D"), np.array([4, 40000], "i4"))
    with pytest.raises(DatasetError) as info:
        new.zarrdask.to_zarr(stored, append_dim="time")
    message = str(info.value)
    assert "append to 'v': 40000 does not fit data type int16 (-32768..32767)" in message
    assert "encoding={'v': {'dtype': 'int32'}}" in message
    assert xr.open_dataset(stored, engine="zarrdask").sizes["time"] == 3  # refused before anything grew


def test_dask_append_overflowing_the_stored_dtype_fails_as_computed(stored: str) -> None:
    import pandas as pd

    new = _appended(pd.date_range("2026-01-04", periods=2, freq="D"), np.array([4, 40000], "i4"), chunked=True)
    with pytest.raises(DatasetError, match="append to 'v': 40000 does not fit data type int16"):
        new.zarrdask.to_zarr(stored, append_dim="time")


def test_region_write_overflowing_the_stored_dtype(stored: str) -> None:
    import xarray as xr

    ds = xr.open_dataset(stored, engine="zarrdask").drop_vars("time").load()
    ds["v"] = ds.v.astype("f8") * 20000
    with pytest.raises(DatasetError, match="write to 'v': 60000.0 does not fit data type int16"):
        ds.zarrdask.to_zarr(stored, region={"time": slice(0, 3)})


def test_append_of_values_the_dtype_cannot_hold_is_refused_before_the_array_grows() -> None:
    a = zarrdask.create_array(None, shape=(2,), dtype="i2", chunks=(2,), fill_value=0)
    with pytest.raises(InvalidValueError, match="40000 does not fit data type int16"):
        a.append(np.array([40000], dtype="i4"))
    assert a.shape == (2,)
    a.append(np.array([7], dtype="i4"))
    assert a[...].tolist() == [0, 0, 7]
