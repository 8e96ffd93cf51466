"""Writes into variable-length string and bytes arrays take what numpy hands out for text
(``np.str_`` items, ``<U`` arrays, scalars broadcast) as the same text, and refuse anything
that is not text (or not bytes) with an InvalidValueError naming the item and the fix,
before any chunk is written."""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import InvalidValueError
from zarrdask.storage import MemoryStore

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)

#: (name, create_array keywords) for string arrays of every kind of chunk layout
STRING_LAYOUTS = {
    "chunks": {"dtype": str, "chunks": (2,)},
    "shards": {"dtype": str, "chunks": (1,), "shards": (2,)},
    "v2": {"dtype": str, "chunks": (2,), "zarr_format": 2},
}
TEXTS = st.lists(st.tuples(st.text(max_size=5), st.booleans()), min_size=5, max_size=5)


def _numpy_or_python(pairs):
    """Texts as a list mixing Python ``str`` and ``np.str_`` items."""
    return [np.str_(t) if as_numpy else t for t, as_numpy in pairs]


def _text_array(layout: str, n: int = 5):
    a = zarrdask.create_array(MemoryStore(), shape=(n,), **STRING_LAYOUTS[layout])
    a[...] = "-"
    return a


def _as_stored(a) -> list:
    got = a[...].tolist()
    assert all(type(x) is str for x in got), [type(x) for x in got]
    return got


@SETTINGS
@given(pairs=TEXTS, layout=st.sampled_from(sorted(STRING_LAYOUTS)), how=st.sampled_from(["all", "oindex", "vindex"]))
def test_numpy_text_items_are_stored_as_the_same_text(pairs, layout, how):
    a = _text_array(layout)
    values = _numpy_or_python(pairs)
    if how == "all":
        a[...] = values
    elif how == "oindex":
        a.oindex[[0, 1, 2, 3, 4]] = values
    else:
        a.vindex[[4, 3, 2, 1, 0]] = values[::-1]
    assert _as_stored(a) == [t for t, _ in pairs]  # (np.str_'s own str() drops trailing NULs; its text keeps them)


@pytest.mark.parametrize("layout", sorted(STRING_LAYOUTS))
@pytest.mark.parametrize("value", [np.str_("x"), "x", np.array("x"), np.array(["x"] * 5)])
def test_a_text_scalar_or_numpy_array_is_broadcast(layout, value):
    a = _text_array(layout)
    a[...] = value
    a[1] = np.str_("y")
    assert _as_stored(a) == ["x", "y", "x", "x", "x"]


def test_append_takes_numpy_text():
    a = _text_array("shards")
    a.append(np.array(["p", "q"]))
    a.append([np.str_("r")])
    assert _as_stored(a) == ["-"] * 5 + ["p", "q", "r"]


@pytest.mark.parametrize("layout", ["chunks", "shards"])
@pytest.mark.parametrize("bad", [5, 2.5, None, b"x", np.bytes_(b"x"), np.int64(3)])
def test_what_is_not_text_is_refused_and_nothing_is_written(layout, bad):
    a = _text_array(layout)
    values = ["a", "b", "c", "d", bad]  # (the bad item in the last chunk or shard)
    with pytest.raises(InvalidValueError) as err:
        a[...] = values
    message = str(err.value)
    assert f"cannot store {type(bad).__name__} values in a string array" in message
    assert repr(bad) in message and "(item (4,))" in message
    assert ("v.decode()" if isinstance(bad, bytes) else "values.astype(str)") in message
    assert _as_stored(a) == ["-"] * 5  # (refused on the way in: no chunk changed)


def test_bytes_arrays_take_numpy_bytes_and_refuse_text():
    for shards in (None, (2,)):
        b = zarrdask.create_array(MemoryStore(), shape=(4,), dtype=bytes, chunks=(1,) if shards else (2,),
                                  shards=shards)
        b[...] = b"x"  # (a scalar broadcast: a read-only view the codec copies)
        b[1] = np.bytes_(b"q")
        b.vindex[[2]] = [np.bytes_(b"r")]
        assert b[...].tolist() == [b"x", b"q", b"r", b"x"]
        assert all(type(x) is bytes for x in b[...].tolist())
        with pytest.raises(InvalidValueError, match=r"cannot store str values in a bytes array: 'z' .*v\.encode\(\)"):
            b[0] = "z"


def test_v2_object_arrays_take_what_their_object_codec_encodes():
    """A v2 object array's items are held to its object codec (the first filter): vlen-utf8
    text, vlen-bytes bytes, refused before anything is stored; json takes any object."""
    b = zarrdask.create_array(MemoryStore(), shape=(4,), dtype=object, chunks=(2,), zarr_format=2,
                              filters=[numcodecs.VLenBytes()])
    b[...] = [np.bytes_(b"a"), b"b", b"c", b"d"]
    assert b[...].tolist() == [b"a", b"b", b"c", b"d"]
    with pytest.raises(InvalidValueError, match=r"cannot store str values in a bytes array: 'z' \(item \(3,\)\)"):
        b[...] = [b"w", b"x", b"y", "z"]
    assert b[...].tolist() == [b"a", b"b", b"c", b"d"]  # (no chunk written)
    s = _text_array("v2", 4)
    with pytest.raises(InvalidValueError, match=r"cannot store int values in a string array: 2 \(item \(3,\)\)"):
        s[...] = ["p", "q", "r", 2]
    with pytest.raises(InvalidValueError, match="is not str"):
        s.append([None])
    assert s[...].tolist() == ["-"] * 4 and s.shape == (4,)
    j = zarrdask.create_array(MemoryStore(), shape=(3,), dtype=object, chunks=(2,), zarr_format=2,
                              filters=[numcodecs.JSON()])
    j[...] = [1, "two", [3]]
    assert j[...].tolist() == [1, "two", [3]]


def test_zero_dimensional_sharded_text_array():
    """A 0-d value reaches the shard writer as an array, not as its item (``[()]``)."""
    a = zarrdask.to_zarr("r", {}, shards=0)
    assert a.shape == () and a[...] == "r"
    z = zarrdask.create_array(MemoryStore(), shape=(), dtype=str, chunks=(), shards=())
    z[...] = np.str_("k")
    assert z[...] == "k" and type(z[...].item() if isinstance(z[...], np.ndarray) else z[...]) is str
