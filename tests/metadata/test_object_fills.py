"""Fill values of Zarr v2 object arrays (``|O``): what an item no write has reached reads as.

A v2 object array's ``fill_value`` is a bare JSON value; what it means depends on the object
codec. For text (``vlen-utf8``) and bytes (``vlen-bytes``) arrays it is read as an item of
that kind, as zarr-python 3 reads it: null as the empty item, a number or boolean as its
text (zarr-python 2 wrote ``0`` by default; zarrs and zarr-python 3 read ``"0"``), bytes
as base64 text. Whatever the fill reads as, a chunk no write reached and the unwritten
items of a chunk written in part read the same, before and after the write.
"""

from __future__ import annotations

import base64
import json

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import MetadataError

SETTINGS = settings(derandomize=True, deadline=None, max_examples=150, database=None)

JSON_SCALARS = st.one_of(st.none(), st.text(), st.booleans(), st.integers(-2**53, 2**53),
                         st.floats(allow_nan=False, allow_infinity=False))


def _store(fill: object, codec: str) -> dict[str, bytes]:
    """A v2 object array of 4 items in chunks of 2, chunk 0 written ("a", "bb"), chunk 1 not."""
    filters = [{"id": codec}] if codec != "json2" else [numcodecs.JSON().get_config()]
    meta = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|O", "compressor": None,
            "fill_value": fill, "order": "C", "filters": filters}
    items = np.array([b"a", b"bb"] if codec == "vlen-bytes" else ["a", "bb"], dtype=object)
    return {".zarray": json.dumps(meta).encode(), "0": numcodecs.get_codec(filters[0]).encode(items)}


def _expected(fill: object, codec: str) -> object:
    """The oracle: what an unwritten item of such an array reads as (the module docstring)."""
    if codec == "json2":
        return fill
    if fill is None:
        return "" if codec == "vlen-utf8" else b""
    if codec == "vlen-utf8":
        return fill if isinstance(fill, str) else str(fill)
    return base64.b64decode(fill) if isinstance(fill, str) else str(fill).encode()


@pytest.mark.parametrize(("fill", "codec", "item"), [
    (None, "vlen-utf8", ""), (0, "vlen-utf8", "0"), ("x", "vlen-utf8", "x"), (1.5, "vlen-utf8", "1.5"),
    (True, "vlen-utf8", "True"), (None, "vlen-bytes", b""), ("eA==", "vlen-bytes", b"x"), (0, "vlen-bytes", b"0"),
    (None, "json2", None), (0, "json2", 0),
])
def test_an_unwritten_chunk_reads_as_an_item_of_the_array(fill, codec, item):
    a = zarrdask.open_array(_store(fill, codec))
    got = a[...]
    assert got.tolist() == [b"a", b"bb", item, item] if codec == "vlen-bytes" else ["a", "bb", item, item]
    assert [type(v) for v in got[2:]] == [type(item)] * 2


@SETTINGS
@given(fill=JSON_SCALARS)
def test_text_items_unwritten_read_the_same_before_and_after_a_write_beside_them(fill):
    store = _store(fill, "vlen-utf8")
    a = zarrdask.open_array(store, mode="r+")
    expected = _expected(fill, "vlen-utf8")
    assert a[2:].tolist() == [expected, expected]
    a[3] = "q"  # (chunk 1 written in part: item 2 stays unwritten)
    assert a[...].tolist() == ["a", "bb", expected, "q"]
    assert zarrdask.open_array(store)[2] == expected  # (and as stored, through a new open)


@SETTINGS
@given(fill=st.one_of(st.none(), st.binary().map(lambda b: base64.b64encode(b).decode()), st.integers(0, 99)))
def test_bytes_items_unwritten_read_the_same_before_and_after_a_write_beside_them(fill):
    store = _store(fill, "vlen-bytes")
    a = zarrdask.open_array(store, mode="r+")
    expected = _expected(fill, "vlen-bytes")
    assert a[2:].tolist() == [expected, expected]
    a[3] = b"q"
    assert a[...].tolist() == [b"a", b"bb", expected, b"q"]


@pytest.mark.parametrize(("fill", "codec", "expected"), [
    ([1], "vlen-utf8", "expected a string for the string items of a vlen-utf8 array, got [1]"),
    ("not base64!", "vlen-bytes", "expected the base64 text of a vlen-bytes array's fill value, got 'not base64!'"),
])
def test_a_fill_value_that_is_no_item_of_the_array_is_refused_naming_it(fill, codec, expected):
    with pytest.raises(MetadataError) as info:
        zarrdask.open_array(_store(fill, codec))
    assert "fill_value" in str(info.value) and expected in str(info.value) and ".zarray" in str(info.value)


@pytest.mark.parametrize(("dtype", "fill", "stored", "item"), [
    (str, "x", "x", "x"), (str, None, None, ""), (bytes, b"x", "eA==", b"x"), (bytes, None, None, b""),
])
def test_a_v2_text_or_bytes_array_keeps_the_fill_value_it_is_created_with(tmp_path, dtype, fill, stored, item):
    path = str(tmp_path / "a.zarr")
    a = zarrdask.create_array(path, shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2, fill_value=fill)
    a[2] = "c" if dtype is str else b"c"
    with open(f"{path}/.zarray") as f:
        assert json.load(f)["fill_value"] == stored
    assert a.fill_value == fill
    assert zarrdask.open_array(path)[...].tolist() == [item, item, a[2], item]


@pytest.mark.parametrize(("dtype", "fill"), [(str, 5), (str, b"x"), (bytes, "x")])
def test_a_fill_value_of_another_kind_than_the_items_is_refused_on_create(tmp_path, dtype, fill):
    with pytest.raises(MetadataError, match="fill_value: .* pass a"):
        zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2,
                              fill_value=fill)
    assert not (tmp_path / "a.zarr").exists()


def test_migrating_to_v3_keeps_what_unwritten_items_read_as(tmp_path):
    path = str(tmp_path / "a.zarr")
    store = _store(0, "vlen-utf8")
    (tmp_path / "a.zarr").mkdir()
    for name, value in store.items():
        (tmp_path / "a.zarr" / name).write_bytes(value)
    before = zarrdask.open_array(path)[...].tolist()
    zarrdask.migrate(path)
    after = zarrdask.open_array(path)
    assert after.metadata.zarr_format == 3 and after[...].tolist() == before == ["a", "bb", "0", "0"]


@pytest.mark.parametrize(("dtype", "fill", "written"), [("bytes", b"\x00y", b"c"), (str, "x", "c")])
def test_a_copy_to_v2_keeps_a_text_or_bytes_fill_value(tmp_path, dtype, fill, written):
    source, target = str(tmp_path / "v3.zarr"), str(tmp_path / "v2.zarr")
    a = zarrdask.create_array(source, shape=(4,), chunks=(2,), dtype=dtype, fill_value=fill)
    a[3] = written
    copied = zarrdask.copy(source, target, zarr_format=2)
    assert copied.metadata.zarr_format == 2 and copied.fill_value == fill
    assert zarrdask.open_array(target)[...].tolist() == [fill, fill, fill, written]


@pytest.mark.parametrize("fill", [[1, "a"], {"k": [2, 3]}, [[0]], []])
def test_a_list_or_dict_fill_value_is_every_unwritten_item_whole(fill):
    """In an array of any objects (json2) a list or dict fill value is one item, not values
    spread over the items (numpy's broadcasting of a bare list)."""
    store = _store(fill, "json2")
    a = zarrdask.open_array(store, mode="r+")
    assert a[...].tolist() == ["a", "bb", fill, fill]
    a[3] = "q"
    assert a[...].tolist() == ["a", "bb", fill, "q"]
    a.resize(1)
    a.resize(4)
    assert a[...].tolist() == ["a", fill, fill, fill]


@pytest.mark.parametrize("fill, change", [([1, "a"], lambda item: item.append("x")),
                                          ({"k": [2, 3]}, lambda item: item.update(x=1))])
def test_every_unwritten_item_is_an_object_of_its_own(fill, change):
    """A change to one unwritten item read back changes neither the others, nor the fill
    value, nor what a later write stores beside it (one shared object would carry it)."""
    store = _store(fill, "json2")
    a = zarrdask.open_array(store, mode="r+")
    for items in (a[...], zarrdask.from_zarr(a).compute()):
        assert items[2] == items[3] == fill and items[2] is not items[3]
        change(items[2])
        assert items[3] == fill and a.fill_value == fill
    original = json.loads(store[".zarray"])["fill_value"]
    a[3] = "q"  # (chunk 1 read, its item 2 unwritten: stored as the fill value)
    assert zarrdask.open_array(store)[...].tolist() == ["a", "bb", original, "q"]
