"""Which chunks are "empty" (equal to the fill value, so not stored) is decided bit for
bit, by one test whose fill bits are worked out once per array (``fill_test``): it agrees
with a comparison of the raw bytes for every kind of data type and memory layout."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.codecs.sharding import fill_test, is_empty_chunk

_DTYPES = ["i1", "u2", "<i4", ">i4", "f2", "<f4", ">f8", "c8", "c16", "S3", "S8", "U2", "?", "V6",
           [("a", "<i2"), ("b", "f4")], "M8[s]", "m8[ns]"]


@settings(max_examples=300, deadline=None)
@given(dtype=st.sampled_from(_DTYPES), shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
       raw=st.binary(min_size=16, max_size=16), flips=st.lists(st.integers(0, 10**6), max_size=3),
       transposed=st.booleans(), step=st.sampled_from([1, 2]))
def test_fill_test_is_byte_equality(dtype, shape, raw, flips, transposed, step):
    dt = np.dtype(dtype)
    fill = np.frombuffer((raw * (dt.itemsize // 16 + 1))[: dt.itemsize], dtype=dt)[0]
    base = np.full([n * step for n in shape], fill, dtype=dt)
    flat = base.reshape(-1).view(np.uint8)
    for f in flips:
        if flat.size:
            flat[f % flat.size] ^= 1 << (f % 8)
    array = base[(*(slice(None, None, step) for _ in shape), ...)]
    if transposed:
        array = array.T
    expected = np.ascontiguousarray(array).tobytes() == np.full(array.shape, fill, dtype=dt).tobytes()
    assert fill_test(dt, fill)(array) is expected
    assert is_empty_chunk(array, fill) is expected


def test_object_chunks_compare_by_value():
    test = fill_test(np.dtype("O"), "")
    assert test(np.array(["", ""], dtype=object))
    assert not test(np.array(["", "x"], dtype=object))
    assert test(np.array([], dtype=object))
