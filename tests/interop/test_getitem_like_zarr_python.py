"""``a[selection]`` and ``a[selection] = value`` read and write what zarr-python 3 does with
the same selection: a tuple of one integer array per dimension picks points
(``a[[0, 2], [1, 3]]`` is two elements, as in numpy, not a 2 x 2 block), a boolean mask of
the array's shape picks its True elements, any other selection holding arrays picks along
each dimension on its own. Where zarr-python refuses a selection, zarrdask either refuses
it too or reads what numpy reads. Selections are generated (hypothesis)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import SelectionError
from zarrdask.storage import MemoryStore

zarr = pytest.importorskip("zarr")

SETTINGS = settings(derandomize=True, deadline=None, max_examples=300, database=None)
SHAPES = st.sampled_from([(7,), (5, 6), (4, 3, 5)])


@st.composite
def items(draw, n: int) -> Any:
    """One dimension's part of a selection: an int, a slice, a list or array of ints (any
    order, repeats, negatives) or a boolean list or array of the dimension's length."""
    kind = draw(st.sampled_from(["int", "slice", "list", "array", "bools"]))
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    if kind == "slice":
        return slice(draw(st.none() | st.integers(-n, n)), draw(st.none() | st.integers(-n, n)),
                     draw(st.none() | st.integers(1, 3)))
    if kind == "bools":
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        return values if draw(st.booleans()) else np.array(values)
    values = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=4))
    return values if kind == "list" else np.array(values)


@st.composite
def selections(draw, shape: tuple[int, ...]) -> Any:
    """A tuple of one part per dimension (or fewer), a single part, or a mask of ``shape``."""
    form = draw(st.sampled_from(["tuple", "tuple", "tuple", "single", "mask"]))
    if form == "mask":
        return np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
                        ).reshape(shape)
    if form == "single":
        return draw(items(shape[0]))
    count = draw(st.integers(1, len(shape)))
    return tuple(draw(items(n)) for n in shape[:count])


def _outcome(fn) -> tuple[str, Any]:
    try:
        return "ok", np.asarray(fn())
    except Exception as exc:  # noqa: BLE001 - (either library's refusal, of any class)
        return "refused", type(exc).__name__


@SETTINGS
@given(st.data(), SHAPES)
def test_reads_as_zarr_python_reads(data, shape) -> None:
    values = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    ours = zarrdask.create_array(MemoryStore(), shape=shape, dtype="int32", chunks=(2,) * len(shape))
    ours[...] = values
    theirs = zarr.create_array({}, shape=shape, dtype="int32", chunks=(2,) * len(shape))
    theirs[...] = values
    sel = data.draw(selections(shape))
    got, expected = _outcome(lambda: ours[sel]), _outcome(lambda: theirs[sel])
    if expected[0] == "ok":
        assert got[0] == "ok", f"{sel!r}: zarr-python reads {expected[1]!r}, zarrdask raised {got[1]}"
        assert got[1].shape == expected[1].shape and (got[1] == expected[1]).all(), sel
    elif got[0] == "ok":  # (zarr-python refuses it: zarrdask may read what numpy reads)
        numpy = _outcome(lambda: values[sel])
        assert numpy[0] == "ok" and got[1].shape == numpy[1].shape and (got[1] == numpy[1]).all(), sel


@SETTINGS
@given(st.data(), SHAPES)
def test_writes_as_zarr_python_writes(data, shape) -> None:
    """The same selection and value, written into both arrays: the same elements change
    (a scalar, so the value fits whatever the selection picks)."""
    ours = zarrdask.create_array(MemoryStore(), shape=shape, dtype="int32", chunks=(2,) * len(shape), fill_value=0)
    theirs = zarr.create_array({}, shape=shape, dtype="int32", chunks=(2,) * len(shape), fill_value=0)
    sel = data.draw(selections(shape))
    expected = _outcome(lambda: theirs.__setitem__(sel, 7))
    got = _outcome(lambda: ours.__setitem__(sel, 7))
    if expected[0] == "ok":
        assert got[0] == "ok", f"{sel!r}: zarr-python writes it, zarrdask raised {got[1]}"
        assert (ours[...] == theirs[...]).all(), sel
    elif got[0] == "ok":
        numpy = np.zeros(shape, "int32")
        numpy[sel] = 7
        assert (ours[...] == numpy).all(), sel


def test_points_not_a_block() -> None:
    """The case users meet first: two integer lists pick two elements, read and written."""
    a = zarrdask.create_array(MemoryStore(), shape=(4, 5), dtype="int32", chunks=(2, 2), fill_value=0)
    a[...] = np.arange(20).reshape(4, 5)
    assert a[[0, 2], [1, 3]].tolist() == [1, 13]
    a[[0, 2], [1, 3]] = [-1, -2]
    assert (a[...] < 0).sum() == 2 and a[0, 1] == -1 and a[2, 3] == -2
    values = a[...]
    mask = values % 2 == 0
    assert a[mask].tolist() == values[mask].tolist()
    with pytest.raises(SelectionError, match=r"a\.oindex\[\.\.\.\] to pick along each dimension"):
        a[[0, 2], [1, 3], ...]
    with pytest.raises(SelectionError, match=r"None \(np\.newaxis\).*a\[\.\.\.\]\[\.\.\., None\]"):
        a[..., None]
