"""Property tests (hypothesis): zarrdask behaves like numpy on the same data.

* random shape / chunks / dtype / codec chain (optionally sharded) -> write, read, bit-equal;
* random basic selections (ints incl. negative, slices with any step incl. negative,
  ellipsis), orthogonal selections (``oindex``: int arrays, bool masks, slices, ints) and
  coordinate / mask selections (``vindex``) -> the same result as numpy;
* the same selections used for ``__setitem__`` -> the same array as numpy.

Runs on an in-memory store. Example counts are bounded and the run is derandomized
(a fixed profile), so the module is fast and stable in CI.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zarrdask
from zarrdask.storage.memory import MemoryStore

from _util import assert_same

settings.register_profile(
    "zarrdask-acceptance",
    derandomize=True,
    deadline=None,
    max_examples=40,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
PROFILE = settings.get_profile("zarrdask-acceptance")

NUMERIC_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                  "float16", "float32", "float64", "complex64", "complex128"]


# ======================================================================================
# strategies
# ======================================================================================
@st.composite
def shapes_and_chunks(draw, max_dims=3, max_side=9, allow_zero=True):
    ndim = draw(st.integers(0, max_dims))
    lo = 0 if allow_zero else 1
    shape = tuple(draw(st.integers(lo, max_side)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, max(1, s) + 2)) for s in shape)
    return shape, chunks


def _element_strategy(dt: np.dtype):
    """Elements including the bit patterns that matter (NaN, -0.0, inf, extremes)."""
    if dt.kind == "f":
        return hnp.from_dtype(dt, allow_nan=True, allow_infinity=True, allow_subnormal=True)
    if dt.kind == "c":
        return hnp.from_dtype(dt, allow_nan=True, allow_infinity=True)
    return hnp.from_dtype(dt)


@st.composite
def arrays_for(draw, dtype: str, shape: tuple[int, ...]):
    dt = np.dtype(dtype)
    return draw(hnp.arrays(dt, shape, elements=_element_strategy(dt)))


def _compressor_strategy(itemsize: int):
    return st.one_of(
        st.builds(lambda lv: {"name": "gzip", "configuration": {"level": lv}}, st.integers(0, 9)),
        st.builds(lambda lv, ck: {"name": "zstd", "configuration": {"level": lv, "checksum": ck}},
                  st.integers(-3, 9), st.booleans()),
        st.builds(
            lambda cname, shuffle, clevel, bs, ts: {"name": "blosc", "configuration": {
                "cname": cname, "clevel": clevel, "shuffle": shuffle, "typesize": ts, "blocksize": bs}},
            st.sampled_from(["blosclz", "lz4", "lz4hc", "zlib", "zstd"]),
            st.sampled_from(["noshuffle", "shuffle", "bitshuffle"]),
            st.integers(0, 9), st.sampled_from([0, 0, 64, 1024]), st.sampled_from([itemsize, itemsize, 1, 4, 8])),
        st.just({"name": "crc32c"}),
    )


@st.composite
def codec_chains(draw, ndim: int, itemsize: int):
    """A valid v3 chain: [transpose?] bytes(endian) [bytes->bytes codecs...]."""
    chain = []
    if ndim > 1 and draw(st.booleans()):
        chain.append({"name": "transpose", "configuration": {"order": list(draw(st.permutations(range(ndim))))}})
    if itemsize > 1:
        chain.append({"name": "bytes", "configuration": {"endian": draw(st.sampled_from(["little", "big"]))}})
    else:
        chain.append({"name": "bytes"})
    chain.extend(draw(st.lists(_compressor_strategy(itemsize), max_size=2)))
    return chain


def new_store():
    return MemoryStore()


# ======================================================================================
# write -> read
# ======================================================================================
@st.composite
def roundtrip_cases(draw):
    dtype = draw(st.sampled_from(NUMERIC_DTYPES))
    itemsize = np.dtype(dtype).itemsize
    shape, chunks = draw(shapes_and_chunks())
    sharded = len(shape) > 0 and draw(st.booleans())
    codecs = draw(codec_chains(len(shape), itemsize))
    shards = None
    if sharded:
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    mode = draw(st.sampled_from(["random", "random", "constant"]))
    if mode == "constant":
        # whole chunks of one value: exercises "chunk equals the fill value" detection,
        # which must be bitwise (-0.0 is not 0.0, NaN payloads differ)
        element = draw(arrays_for(dtype, ()))
        data = np.full(shape, element, dtype=dtype)
    else:
        data = draw(arrays_for(dtype, shape))
    fill = draw(arrays_for(dtype, ())).item() if draw(st.booleans()) else None
    return dtype, shape, chunks, shards, codecs, data, fill


def _create(store, dtype, shape, chunks, shards, codecs, fill):
    if shards is None:
        return zarrdask.create_array(store, shape=shape, dtype=dtype, chunks=chunks, codecs=codecs, fill_value=fill)
    # sharded: the chain becomes the inner chain of a sharding codec whose shard shape is the grid
    shard_codec = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": list(chunks),
            "codecs": codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end",
        },
    }
    return zarrdask.create_array(store, shape=shape, dtype=dtype, chunks=shards, codecs=[shard_codec], fill_value=fill)


@settings(PROFILE, max_examples=150)
@given(roundtrip_cases())
def test_write_read_roundtrip(case):
    dtype, shape, chunks, shards, codecs, data, fill = case
    store = new_store()
    arr = _create(store, dtype, shape, chunks, shards, codecs, fill)
    assert tuple(arr.shape) == shape
    assert tuple(arr.chunks) == chunks
    assert (arr.shards is None) == (shards is None)
    arr[...] = data
    assert_same(np.asarray(arr[...]), data, "same handle")
    again = zarrdask.open(store, mode="r")
    assert_same(np.asarray(again[...]), data, "reopened")


@settings(PROFILE, max_examples=30)
@given(st.data())
def test_shards_keyword_roundtrip(data):
    """create_array(shards=...) (the public shorthand) round-trips like the explicit chain."""
    dtype = data.draw(st.sampled_from(["int16", "float32", "uint8", "complex64"]))
    shape, chunks = data.draw(shapes_and_chunks(max_dims=3, max_side=10, allow_zero=False))
    if not shape:
        shape, chunks = (5,), (2,)
    shards = tuple(c * data.draw(st.integers(1, 3)) for c in chunks)
    values = data.draw(arrays_for(dtype, shape))
    store = new_store()
    arr = zarrdask.create_array(store, shape=shape, dtype=dtype, chunks=chunks, shards=shards)
    assert tuple(arr.chunks) == chunks and tuple(arr.shards) == shards
    arr[...] = values
    assert_same(np.asarray(zarrdask.open(store)[...]), values)


_F32 = lambda bits: np.array(bits, dtype=np.uint32).view(np.float32)  # noqa: E731


@pytest.mark.parametrize("chunk_bits,fill_bits", [
    (0x80000000, 0x00000000),  # -0.0 chunk, fill +0.0
    (0x00000000, 0x80000000),  # +0.0 chunk, fill -0.0
    (0x7FC00001, 0x7FC00000),  # NaN with a payload, fill the canonical NaN
    (0xFFC00000, 0x7FC00000),  # negative NaN, fill NaN
], ids=["negzero-vs-zero", "zero-vs-negzero", "nanpayload-vs-nan", "negnan-vs-nan"])
@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
def test_chunk_equal_to_fill_is_decided_bitwise(chunk_bits, fill_bits, sharded):
    """A chunk is only "empty" (not stored) when it has the fill value's *bit pattern*;
    otherwise skipping it would change the data read back."""
    data = np.full((4,), _F32(chunk_bits))
    data[2:] = 1.0
    store = new_store()
    arr = zarrdask.create_array(store, shape=(4,), dtype="float32", chunks=(2,), shards=(4,) if sharded else None,
                                fill_value=_F32(fill_bits)[()])
    arr[...] = data
    assert_same(np.asarray(zarrdask.open(store)[...]), data)


# ======================================================================================
# selections
# ======================================================================================
@st.composite
def stored_array(draw, max_dims=3, max_side=8, min_dims=1):
    """A (store, Array, numpy data) triple with random layout (sometimes sharded)."""
    dtype = draw(st.sampled_from(["int32", "float64", "uint8", "int16"]))
    ndim = draw(st.integers(min_dims, max_dims))
    shape = tuple(draw(st.integers(1, max_side)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, s + 1)) for s in shape)
    shards = None
    if draw(st.integers(0, 3)) == 0:
        shards = tuple(c * draw(st.integers(1, 2)) for c in chunks)
    data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    if dtype == "float64":
        data = data * 0.5 - 3
    store = new_store()
    arr = zarrdask.create_array(store, shape=shape, dtype=dtype, chunks=chunks, shards=shards, fill_value=0)
    arr[...] = data
    return store, arr, data


@settings(PROFILE, max_examples=100)
@given(st.data())
def test_basic_selection_matches_numpy(data):
    store, arr, ref = data.draw(stored_array(max_dims=3))
    sel = data.draw(hnp.basic_indices(ref.shape, allow_ellipsis=True, allow_newaxis=False, min_dims=0))
    want = ref[sel]
    got = arr[sel]
    assert_same(np.asarray(got), np.asarray(want), f"arr[{sel!r}]")


@st.composite
def orthogonal_selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "ints", "mask"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            step = draw(st.none() | st.integers(1, 3))  # oindex slices: positive steps
            sel.append(slice(start, stop, step))
        elif kind == "ints":
            k = draw(st.integers(1, 5))
            sel.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k)), dtype=np.intp))
        else:
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
    return tuple(sel)


def _index_lists(sel: tuple, shape: tuple[int, ...]) -> list[np.ndarray]:
    """Each axis's selection as the integer positions it picks (for np.ix_)."""
    lists = []
    for s, n in zip(sel, shape):
        if isinstance(s, (int, np.integer)):
            lists.append(np.array([s], dtype=np.intp))
        elif isinstance(s, slice):
            lists.append(np.arange(n)[s])
        elif s.dtype == bool:
            lists.append(np.nonzero(s)[0])
        else:
            lists.append(s)
    return lists


def numpy_orthogonal(ref: np.ndarray, sel: tuple) -> np.ndarray:
    """Orthogonal indexing in numpy: each axis indexed independently (np.ix_)."""
    lists = _index_lists(sel, ref.shape)
    drop = [axis for axis, s in enumerate(sel) if isinstance(s, (int, np.integer))]
    out = ref[np.ix_(*lists)] if lists else ref[()]
    for axis in reversed(drop):
        out = out.take(0, axis=axis)
    return out


@settings(PROFILE, max_examples=100)
@given(st.data())
def test_orthogonal_selection_matches_numpy(data):
    store, arr, ref = data.draw(stored_array(max_dims=3))
    sel = data.draw(orthogonal_selection(ref.shape))
    want = numpy_orthogonal(ref, sel)
    got = arr.oindex[sel]
    assert_same(np.asarray(got), want, f"oindex[{sel!r}]")


@st.composite
def vectorized_selection(draw, shape):
    if draw(st.booleans()):
        mask = draw(hnp.arrays(bool, shape, elements=st.booleans()))
        return mask
    k = draw(st.integers(0, 6))
    out_shape = draw(st.sampled_from([(k,), (k, 2) if k else (0,), (1, k)]))
    m = int(np.prod(out_shape))
    coords = []
    for n in shape:
        idx = draw(st.lists(st.integers(-n, n - 1), min_size=m, max_size=m))
        coords.append(np.array(idx, dtype=np.intp).reshape(out_shape))
    return tuple(coords)


@settings(PROFILE, max_examples=100)
@given(st.data())
def test_vectorized_selection_matches_numpy(data):
    store, arr, ref = data.draw(stored_array(max_dims=3))
    sel = data.draw(vectorized_selection(ref.shape))
    want = ref[sel]
    got = arr.vindex[sel]
    assert_same(np.asarray(got), want, f"vindex[{sel!r}]")


# ======================================================================================
# setitem
# ======================================================================================
def _values_for(ref: np.ndarray, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 100, shape) + 1000).astype(ref.dtype)


@settings(PROFILE, max_examples=50)
@given(st.data())
def test_basic_setitem_matches_numpy(data):
    store, arr, ref = data.draw(stored_array(max_dims=3))
    sel = data.draw(hnp.basic_indices(ref.shape, allow_ellipsis=True, allow_newaxis=False, min_dims=0))
    target_shape = ref[sel].shape
    scalar = data.draw(st.booleans())
    value = ref.dtype.type(77) if scalar else _values_for(ref, target_shape, data.draw(st.integers(0, 9)))
    expected = ref.copy()
    expected[sel] = value
    arr[sel] = value
    assert_same(np.asarray(arr[...]), expected, f"after arr[{sel!r}] = ...")
    assert_same(np.asarray(zarrdask.open(store)[...]), expected, "reopened after setitem")


@settings(PROFILE, max_examples=40)
@given(st.data())
def test_orthogonal_setitem_matches_numpy(data):
    store, arr, ref = data.draw(stored_array(max_dims=3))
    drawn = data.draw(orthogonal_selection(ref.shape))
    # integer-array selectors without duplicates ("last write wins" is not a contract)
    sel = tuple(
        np.unique(np.where(s < 0, s + n, s)) if isinstance(s, np.ndarray) and s.dtype != bool else s
        for s, n in zip(drawn, ref.shape)
    )
    target_shape = numpy_orthogonal(ref, sel).shape
    value = _values_for(ref, target_shape, 1)
    lists = _index_lists(sel, ref.shape)
    expected = ref.copy()
    expected[np.ix_(*lists)] = value.reshape([len(l) for l in lists])
    arr.oindex[sel] = value
    assert_same(np.asarray(arr[...]), expected, f"after oindex[{sel!r}] = ...")


@settings(PROFILE, max_examples=40)
@given(st.data())
def test_vectorized_setitem_matches_numpy(data):
    store, arr, ref = data.draw(stored_array(max_dims=3))
    sel = data.draw(vectorized_selection(ref.shape))
    if isinstance(sel, tuple):
        # unique coordinates: duplicate points make the written value ambiguous
        flat = np.ravel_multi_index(tuple(np.where(c < 0, c + n, c).ravel() for c, n in zip(sel, ref.shape)), ref.shape)
        _, first = np.unique(flat, return_index=True)
        sel = tuple(np.where(c < 0, c + n, c).ravel()[np.sort(first)] for c, n in zip(sel, ref.shape))
    target_shape = ref[sel].shape
    value = _values_for(ref, target_shape, 2)
    expected = ref.copy()
    expected[sel] = value
    arr.vindex[sel] = value
    assert_same(np.asarray(arr[...]), expected, "after vindex[...] = ...")
