"""Array->array codecs before ``sharding_indexed`` (the spec's full pipeline semantics).

A transpose outside the shard permutes the shard before the sharding codec splits it, so
the inner chunk shape in the sharding configuration is in the permuted order and the shard
index is C-ordered over the permuted grid. Other array->array codecs before sharding need
the whole shard. Values are checked against numpy and the stored bytes are read by a peer,
for whole and partial reads and writes. TensorStore is the peer for generated chains:
zarr-python 3.1.6 checks the inner chunk shape against the unpermuted shard shape, so it
refuses every such chain whose shard is not square in the permuted axes (its bug; the
spec validates each codec against the shape it receives).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from _util import draw_shard_geometry
from zarrdask.errors import MetadataError
from zarrdask.storage import MemoryStore

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _sharding(chunk_shape, codecs=None, index_location="end"):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": codecs or [BYTES],
        "index_codecs": [BYTES, {"name": "crc32c"}], "index_location": index_location}}


def _transpose(order):
    return {"name": "transpose", "configuration": {"order": list(order)}}


def _peer_read(path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "open": True}
    return ts.open(spec, read=True).result()[...].read().result()


def test_reproducer_written_by_zarr_python(tmp_path):
    """The case that read back wrong: int16 (19, 7), outer chunks 12x12, transpose (1, 0)
    then sharding with inner chunks (6, 12) in the transposed order."""
    from zarr.codecs import BytesCodec, ShardingCodec, TransposeCodec

    data = np.arange(19 * 7, dtype="int16").reshape(19, 7)
    path = str(tmp_path / "a.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(path, shape=(19, 7), dtype="int16", chunks=(12, 12),
                              filters=[TransposeCodec(order=(1, 0))],
                              serializer=ShardingCodec(chunk_shape=(6, 12), codecs=[BytesCodec()]),
                              compressors=None)
        z[...] = data
    a = zarrdask.open_array(path)
    assert a.shards == (12, 12) and a.chunks == (12, 6)  # inner chunks in the array's axis order
    assert np.array_equal(a[...], data)
    assert np.array_equal(a[3:15, 2:5], data[3:15, 2:5])
    assert np.array_equal(a.oindex[[0, 18, 5], [6, 0]], data[np.ix_([0, 18, 5], [6, 0])])
    assert np.array_equal(a.vindex[[0, 18, 5], [6, 0, 3]], data[[0, 18, 5], [6, 0, 3]])


@st.composite
def _cases(draw):
    ndim, inner, shard, shape = draw_shard_geometry(draw, st, max_per_shard=3, min_extent=0, spare=1)
    perms = draw(st.lists(st.permutations(range(ndim)), min_size=1, max_size=2))
    composite = tuple(range(ndim))
    for p in perms:
        composite = tuple(composite[i] for i in p)
    inner_encoded = tuple(inner[k] for k in composite)  # the sharding codec sees permuted axes
    inner_codecs = draw(st.sampled_from([[BYTES], [_transpose(tuple(reversed(range(ndim)))), BYTES],
                                         [BYTES, {"name": "gzip", "configuration": {"level": 1}}]]))
    location = draw(st.sampled_from(["start", "end"]))
    codecs = [*map(_transpose, perms), _sharding(inner_encoded, inner_codecs, location)]
    dtype = draw(st.sampled_from(["int16", "float32", "uint8"]))
    return shape, shard, inner, codecs, dtype


def _selection(draw, shape):
    return tuple(draw(st.one_of(
        st.integers(0, n - 1) if n else st.just(slice(None)),
        st.builds(slice, st.integers(0, n) | st.none(), st.integers(0, n) | st.none(),
                  st.sampled_from([None, 1, 2, -1, -3])),
    )) for n in shape)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases(), data=st.data())
def test_transposes_before_sharding_match_tensorstore(tmp_path_factory, case, data):
    shape, shard, inner, codecs, dtype = case
    path = str(tmp_path_factory.mktemp("t") / "a.zarr")
    values = (np.arange(int(np.prod(shape)), dtype="int64") % 251).astype(dtype).reshape(shape)
    a = zarrdask.create_array(path, shape=shape, dtype=dtype, chunks=shard, codecs=codecs, fill_value=7)
    assert a.chunks == inner and a.shards == shard
    a[...] = values
    assert np.array_equal(_peer_read(path), values)
    assert np.array_equal(zarrdask.open_array(path)[...], values)
    # partial writes (read-modify-write of inner chunks through the permutation)
    sel = _selection(data.draw, shape)
    patch = np.full(values[sel].shape, 3, dtype=dtype)
    zarrdask.open_array(path, mode="r+")[sel] = patch
    values[sel] = patch
    assert np.array_equal(_peer_read(path), values)
    fresh = zarrdask.open_array(path)
    sel = _selection(data.draw, shape)
    assert np.array_equal(fresh[sel], values[sel])


def test_value_changing_codec_before_sharding_reads_whole_shards(tmp_path):
    """A non-permuting array->array codec (delta) before sharding: the inner chunks are not
    regions of the array, so reads decode whole shards; zarr-python reads the same values."""
    codecs = [{"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}}, _sharding((4,))]
    path = str(tmp_path / "d.zarr")
    values = np.arange(30, dtype="int32") ** 2
    a = zarrdask.create_array(path, shape=(30,), dtype="int32", chunks=(8,), codecs=codecs)
    assert a.shards == (8,) and a.chunks == (8,)
    a[...] = values
    a[5:9] = -1
    values[5:9] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(zarr.open_array(path, mode="r")[...], values)
    assert np.array_equal(zarrdask.open_array(path)[3:20], values[3:20])


@pytest.mark.parametrize("codecs, message", [
    ([_sharding((2, 4)), _transpose((1, 0))], "must come before the array->bytes codec"),
    ([_transpose((1, 0)), _sharding((3, 4))], "must divide the shard shape [8, 6]"),
    ([_transpose((1, 0, 2)), _sharding((4, 4))], "entries but the chunk has 2 dimensions"),
])
def test_chains_the_spec_forbids_are_metadata_errors(codecs, message):
    with pytest.raises(MetadataError, match=message.replace("[", r"\[").replace("]", r"\]")):
        zarrdask.create_array(MemoryStore(), shape=(12, 8), dtype="int8", chunks=(6, 8), codecs=codecs)
