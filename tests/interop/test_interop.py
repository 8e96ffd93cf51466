"""Interop matrix: zarrdask <-> zarr-python 3.x and zarrdask <-> TensorStore, both ways.

For each data type and each codec configuration (v3 chains, v2 compressors / filters /
order / dimension_separator, sharding layouts) an array written by one library is read
back bit-exact by the other. Lossless configurations must reproduce the source data;
lossy v2 filters (quantize, bitround, fixedscaleoffset, astype) must reproduce what
numcodecs itself gives for encode+decode (computed here independently of both
libraries), and the peers must agree bit for bit.

A direction is skipped only where the *peer* lacks the feature, with the reason.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest

import zarrdask

from _util import assert_same

import zarr  # noqa: E402  (the peers are part of the test extra)
import tensorstore as ts  # noqa: E402

try:  # the optional TensorStore extension types
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning", "ignore::RuntimeWarning")

ZD, ZP, TS = "zarrdask", "zarr-python", "tensorstore"
ML_NAMES = ("bfloat16", "int4", "float8_e4m3fn", "float8_e5m2", "float8_e3m4", "float8_e8m0fnu", "float4_e2m1fn")
DIRECTIONS = [(ZD, ZP), (ZD, TS), (ZP, ZD), (TS, ZD)]


# ======================================================================================
# data
# ======================================================================================
def make_data(dtype: Any, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Deterministic test data that exercises the bit patterns of each type."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "string":
        words = ["", "a", "héllo", "世界", "🙂x", "tab\tnl\n", "long" * 7]
        return np.array([words[i % len(words)] + str(i) for i in range(n)], dtype=object).reshape(shape)
    if dtype == "variable_length_bytes":
        return np.array([bytes(rng.integers(0, 256, i % 9, dtype=np.uint8)) for i in range(n)], dtype=object).reshape(shape)
    dt = np.dtype(dtype)
    if ml_dtypes is not None and dt.name == "float8_e8m0fnu":  # powers of two only
        return (2.0 ** rng.integers(-127, 128, n)).astype(dt).reshape(shape)
    if ml_dtypes is not None and dt.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e3m4",
                                             "float4_e2m1fn"):
        return (rng.standard_normal(n) * 4).astype(dt).reshape(shape)
    if ml_dtypes is not None and dt.name == "int4":
        return rng.integers(-8, 8, n).astype(dt).reshape(shape)
    if dt.byteorder == ">":
        return make_data(dt.newbyteorder("="), shape, seed).astype(dt)
    k = dt.kind
    if k == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if k in "iu":
        info = np.iinfo(dt)
        out = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        if n >= 3:
            out[:3] = [info.min, info.max, 0]
        return out.reshape(shape)
    if k == "f":
        out = rng.standard_normal(n).astype(dt) * dt.type(100)
        specials = _float_specials(dt)
        m = min(len(specials), n)
        out[:m] = specials[:m]
        return out.reshape(shape)
    if k == "c":
        part = np.dtype(f"f{dt.itemsize // 2}")
        re_ = make_data(part, (n,), seed)
        im_ = make_data(part, (n,), seed + 1)[::-1].copy()
        out = np.empty(n, dt)
        v = out.view(part).reshape(n, 2)
        v[:, 0], v[:, 1] = re_, im_
        return out.reshape(shape)
    if k == "U":
        chars = "abcXYZ é世🙂"
        width = dt.itemsize // 4
        return np.array(["".join(chars[(i + j) % len(chars)] for j in range(i % (width + 1))) for i in range(n)], dtype=dt).reshape(shape)
    if k == "S":
        width = dt.itemsize
        return np.array([bytes(rng.integers(1, 256, i % (width + 1), dtype=np.uint8)) for i in range(n)], dtype=dt).reshape(shape)
    if k == "V":
        return np.frombuffer(rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes(), dtype=dt).reshape(shape)
    if k in "mM":
        out = rng.integers(-(2**40), 2**40, n).astype(np.int64)
        if n > 2:
            out[1] = np.iinfo(np.int64).min  # NaT
        return out.view(dt).reshape(shape)
    raise NotImplementedError(dt)


def _float_specials(dt: np.dtype) -> np.ndarray:
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
    patterns = {
        2: [0x7E01, 0x7C01, 0xFE00, 0x8000, 0x7C00, 0xFC00, 0x0001],
        4: [0x7FC00001, 0x7F800001, 0xFFC00000, 0x80000000, 0x7F800000, 0xFF800000, 0x00000001],
        8: [0x7FF8000000000001, 0x7FF0000000000001, 0xFFF8000000000000, 0x8000000000000000,
            0x7FF0000000000000, 0xFFF0000000000000, 0x0000000000000001],
    }[dt.itemsize]
    # qNaN with payload, sNaN, negative NaN, -0.0, +inf, -inf, smallest subnormal
    return np.array(patterns, dtype=u).view(dt)


def fill_json(dtype: Any, value: Any) -> Any:
    """The v3 JSON of a fill value, for TensorStore's metadata (TS wants complex as [re, im])."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return [fill_json(f"f{dt.itemsize // 2}", np.real(value)), fill_json(f"f{dt.itemsize // 2}", np.imag(value))]
    if dt.kind == "f" or dt.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        v = float(value)
        if np.isnan(v):
            return "NaN"
        if np.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if dt.kind == "b":
        return bool(value)
    return int(value)


# ======================================================================================
# writers and readers
# ======================================================================================
@dataclass
class Spec:
    """One array to round-trip."""

    dtype: Any
    shape: tuple[int, ...]
    chunks: tuple[int, ...]  # the chunk grid (= shard shape when sharded via `codecs`)
    codecs: list | None = None  # v3: the whole chain
    fill: Any = 0
    zarr_format: int = 3
    chunk_key_encoding: dict | None = None
    # v2 only
    compressor: Any = None  # numcodecs object or None
    filters: list | None = None  # numcodecs objects
    order: str = "C"
    dimension_separator: str = "."
    lossy: bool = False
    # which part of the array is written (None = all); the rest stays fill / missing
    region: tuple[slice, ...] | None = None
    extra: dict = field(default_factory=dict)

    def source(self) -> np.ndarray:
        data = make_data(self.dtype, self.shape, seed=len(self.shape) * 7 + int(np.prod(self.chunks)))
        if self.lossy and data.dtype.kind == "f":
            # lossy numeric filters: finite values only (NaN/inf -> int casts are undefined)
            data = np.where(np.isfinite(data), data, data.dtype.type(1.25))
        return data


def _np_dtype(dtype: Any) -> Any:
    if dtype == "string":
        return str
    if dtype == "variable_length_bytes":
        return bytes
    if dtype in ML_NAMES:
        return dtype  # the v3 name (numpy dtype objects: see test_ml_dtypes_as_numpy_dtypes)
    return np.dtype(dtype)


def expected_values(spec: Spec, data: np.ndarray) -> np.ndarray:
    """What every reader must return: the data (or numcodecs' lossy round-trip of it),
    with the fill value outside the written region."""
    out = data
    if spec.lossy and spec.filters:
        out = _lossy_reference(spec, data)
    if spec.region is not None:
        full = np.full(spec.shape, spec.fill, dtype=out.dtype)
        full[spec.region] = out[spec.region]
        out = full
    return out


def _lossy_reference(spec: Spec, data: np.ndarray) -> np.ndarray:
    """Apply the v2 filters chunk by chunk exactly as the v2 spec lays chunks out: each
    chunk padded to the full chunk shape with the fill value, flattened in ``order``,
    encoded by the filters in order and decoded in reverse (numcodecs, independent of
    zarrdask and zarr-python)."""
    dt = np.dtype(spec.dtype).newbyteorder("=")
    out = np.empty(spec.shape, dtype=dt)
    grid = [range(0, n, c) for n, c in zip(spec.shape, spec.chunks)]
    import itertools

    for starts in itertools.product(*grid):
        region = tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, spec.chunks, spec.shape))
        block = np.full(spec.chunks, spec.fill if spec.fill is not None else 0, dtype=np.dtype(spec.dtype))
        block[tuple(slice(0, r.stop - r.start) for r in region)] = data[region]
        enc = np.ascontiguousarray(block) if spec.order == "C" else np.asfortranarray(block)
        enc = enc.reshape(-1, order=spec.order)
        for f in spec.filters:
            enc = f.encode(enc)
        dec = enc
        for f in reversed(spec.filters):
            dec = f.decode(dec)
        dec = np.frombuffer(np.ascontiguousarray(dec).tobytes(), dtype=np.dtype(spec.dtype))
        dec = dec.reshape(spec.chunks, order=spec.order)
        out[region] = dec[tuple(slice(0, r.stop - r.start) for r in region)]
    return out


def _region_data(spec: Spec, data: np.ndarray):
    return (spec.region, data[spec.region]) if spec.region is not None else ((Ellipsis,), data)


def write_zarrdask(path: Path, spec: Spec, data: np.ndarray) -> None:
    kw: dict[str, Any] = dict(shape=spec.shape, dtype=_np_dtype(spec.dtype) if spec.zarr_format == 3 else np.dtype(spec.dtype),
                              chunks=spec.chunks, fill_value=spec.fill, zarr_format=spec.zarr_format)
    if spec.zarr_format == 3:
        if spec.codecs is not None:
            kw["codecs"] = spec.codecs
        if spec.chunk_key_encoding is not None:
            kw["chunk_key_encoding"] = spec.chunk_key_encoding
    else:
        kw["compressors"] = [spec.compressor] if spec.compressor is not None else None
        kw["filters"] = spec.filters
        kw["chunk_key_encoding"] = {"name": "v2", "configuration": {"separator": spec.dimension_separator}}
        if spec.order != "C":
            kw["order"] = spec.order
    kw.update(spec.extra.get("zarrdask", {}))
    arr = zarrdask.create_array(str(path), **kw)
    sel, vals = _region_data(spec, data)
    arr[sel] = vals


def read_zarrdask(path: Path) -> tuple[np.ndarray, Any]:
    arr = zarrdask.open(str(path))
    assert isinstance(arr, zarrdask.Array)
    return np.asarray(arr[...]), arr


def write_zarr_python(path: Path, spec: Spec, data: np.ndarray) -> None:
    if spec.zarr_format == 3:
        kw: dict[str, Any] = dict(store=str(path), shape=spec.shape, chunks=spec.chunks, fill_value=spec.fill, zarr_format=3)
        if spec.chunk_key_encoding is not None:
            kw["chunk_key_encoding"] = spec.chunk_key_encoding
        if spec.codecs is not None:
            kw["codecs"] = spec.codecs
            kw["dtype"] = _zp_dtype(spec.dtype)
            arr = zarr.create(**kw)
        else:
            kw.pop("zarr_format")
            arr = zarr.create_array(dtype=_zp_dtype(spec.dtype), zarr_format=3, **kw)
    else:
        arr = zarr.create_array(
            store=str(path), shape=spec.shape, chunks=spec.chunks, dtype=spec.dtype, fill_value=spec.fill,
            zarr_format=2, compressors=spec.compressor, filters=spec.filters, order=spec.order,
            chunk_key_encoding={"name": "v2", "configuration": {"separator": spec.dimension_separator}},
        )
    sel, vals = _region_data(spec, data)
    arr[sel] = vals


def _zp_dtype(dtype: Any) -> Any:
    if dtype == "string":
        return str
    if dtype == "variable_length_bytes":
        from zarr.core.dtype import VariableLengthBytes

        return VariableLengthBytes()
    return np.dtype(dtype)


def read_zarr_python(path: Path) -> np.ndarray:
    arr = zarr.open_array(str(path), mode="r")
    return np.asarray(arr[...])


def _ts_spec(path: Path, zarr_format: int) -> dict:
    return {"driver": "zarr3" if zarr_format == 3 else "zarr", "kvstore": {"driver": "file", "path": str(path)}}


def write_tensorstore(path: Path, spec: Spec, data: np.ndarray) -> None:
    dt = np.dtype(spec.dtype)
    if spec.zarr_format == 3:
        md = {
            "shape": list(spec.shape),
            "data_type": dt.name if dt.name in ML_NAMES else _V3_NAMES[dt.str[1:]],
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(spec.chunks)}},
            "chunk_key_encoding": spec.chunk_key_encoding or {"name": "default"},
            "fill_value": fill_json(dt, spec.fill),
            "codecs": spec.codecs or [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
        }
        if dt.itemsize == 1 or dt.name == "int4":
            md["codecs"] = [({"name": "bytes"} if (isinstance(c, dict) and c.get("name") == "bytes") else c) for c in md["codecs"]]
    else:
        md = {
            "shape": list(spec.shape), "chunks": list(spec.chunks), "dtype": dt.str,
            "fill_value": fill_json(dt, spec.fill) if spec.fill is not None and dt.kind not in "SUV" else None,
            "order": spec.order, "dimension_separator": spec.dimension_separator,
            "compressor": _ts_v2_compressor(spec.compressor), "filters": None,
        }
    store = ts.open({**_ts_spec(path, spec.zarr_format), "metadata": md, "create": True}).result()
    sel, vals = _region_data(spec, data)
    if spec.zarr_format == 2 and dt.type in (np.bytes_, np.void):
        # TensorStore: fixed-length bytes are a trailing dimension of char/byte
        vals = np.ascontiguousarray(vals).view(np.uint8).reshape(vals.shape + (dt.itemsize,))
        if dt.type is np.bytes_:
            vals = vals.view("S1")
        sel = tuple(sel) + (slice(None),) if sel != (Ellipsis,) else sel
    store[sel].write(vals).result()


def _ts_v2_compressor(comp) -> dict | None:
    if comp is None:
        return None
    cfg = comp.get_config()
    if cfg["id"] == "zstd" and not cfg.get("checksum"):
        cfg.pop("checksum", None)  # TensorStore rejects the member (even when false)
    return cfg


_V3_NAMES = {np.dtype(n).str[1:]: n for n in [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"]}


def read_tensorstore(path: Path, zarr_format: int = 3) -> np.ndarray:
    store = ts.open(_ts_spec(path, zarr_format)).result()
    out = store.read().result()
    return out


WRITERS = {ZD: write_zarrdask, ZP: write_zarr_python, TS: write_tensorstore}


def read_with(who: str, path: Path, spec: Spec) -> np.ndarray:
    if who == ZD:
        values, arr = read_zarrdask(path)
        _check_zarrdask_metadata(arr, spec)
        return values
    if who == ZP:
        return read_zarr_python(path)
    if spec.zarr_format == 2:
        comp = json.loads((path / ".zarray").read_text()).get("compressor") or {}
        if comp.get("id") == "zstd" and "checksum" in comp:
            pytest.skip("TensorStore's zarr v2 driver rejects the zstd 'checksum' member that numcodecs writes")
    out = read_tensorstore(path, spec.zarr_format)
    dt = np.dtype(spec.dtype)
    if spec.zarr_format == 2 and dt.type in (np.bytes_, np.void):
        # TensorStore: a trailing byte dimension of char/byte
        out = np.ascontiguousarray(out).view(dt)[..., 0]
    return out


def _check_zarrdask_metadata(arr, spec: Spec) -> None:
    assert tuple(arr.shape) == tuple(spec.shape)
    assert arr.zarr_format == spec.zarr_format
    if spec.dtype not in ("string", "variable_length_bytes"):
        assert np.dtype(arr.dtype).newbyteorder("=") == np.dtype(spec.dtype).newbyteorder("="), (
            f"dtype {arr.dtype} != {spec.dtype}"
        )


def roundtrip(tmp_path: Path, spec: Spec, writer: str, reader: str) -> None:
    path = tmp_path / "a.zarr"
    data = spec.source()
    WRITERS[writer](path, spec, data)
    got = read_with(reader, path, spec)
    want = expected_values(spec, data)
    assert_same(got, want, f"{writer} -> {reader}")
    if spec.lossy:
        # the peers agree bit for bit on what is stored
        other = read_with(writer, path, spec)
        assert_same(got, np.asarray(other), f"{reader} vs {writer} reading the same store")


def _params(cases: dict[str, Spec], directions=DIRECTIONS, unsupported: dict | None = None):
    """pytest params (spec, writer, reader); ``unsupported`` maps (case, peer) -> reason."""
    unsupported = unsupported or {}
    out = []
    for name, spec in cases.items():
        for w, r in directions:
            peer = r if w == ZD else w
            reason = unsupported.get((name, peer)) or unsupported.get(("*", peer))
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            out.append(pytest.param(spec, w, r, id=f"{name}-{w}-to-{r}", marks=marks))
    return out


# ======================================================================================
# 1. v3 core data types (default-ish chain: bytes + zstd)
# ======================================================================================
CORE_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "complex64", "complex128"]
ZSTD_CHAIN = lambda endian="little": [  # noqa: E731
    {"name": "bytes", "configuration": {"endian": endian}}, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}]

DTYPE_CASES = {
    dt: Spec(dt, (7, 9), (3, 4), ZSTD_CHAIN() if np.dtype(dt).itemsize > 1 else
             [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
             fill=(True if dt == "bool" else 0))
    for dt in CORE_DTYPES
}
# nonzero / special fill values with missing chunks (only the first rows written)
DTYPE_CASES.update({
    "float32-nanfill-missing": Spec("float32", (8, 6), (3, 3), ZSTD_CHAIN(), fill=np.float32("nan"), region=(slice(0, 3),)),
    "float64-neginf-fill-missing": Spec("float64", (8, 6), (3, 3), ZSTD_CHAIN("big"), fill=-np.inf, region=(slice(3, 6),)),
    "int16-negfill-missing": Spec("int16", (8, 6), (3, 3), ZSTD_CHAIN(), fill=-7, region=(slice(0, 3), slice(0, 3))),
    "uint64-maxfill-missing": Spec("uint64", (10,), (4,), ZSTD_CHAIN(), fill=np.iinfo(np.uint64).max, region=(slice(4, 8),)),
    "complex128-fill-missing": Spec("complex128", (5, 4), (2, 2), ZSTD_CHAIN(), fill=complex(1.5, -2), region=(slice(0, 2),)),
    "0d-float64": Spec("float64", (), (), ZSTD_CHAIN()),
    "zero-length": Spec("int32", (0, 5), (2, 2), ZSTD_CHAIN()),
})


@pytest.mark.parametrize("spec,writer,reader", _params(DTYPE_CASES))
def test_v3_dtypes(tmp_path, spec, writer, reader):
    roundtrip(tmp_path, spec, writer, reader)


# ======================================================================================
# 2. v3 codec configurations
# ======================================================================================
def _bytes(endian="little"):
    return {"name": "bytes", "configuration": {"endian": endian}}


def _blosc(cname, shuffle, typesize, clevel=5, blocksize=0):
    return {"name": "blosc", "configuration": {"cname": cname, "clevel": clevel, "shuffle": shuffle,
                                               "typesize": typesize, "blocksize": blocksize}}


def _gzip(level):
    return {"name": "gzip", "configuration": {"level": level}}


def _zstd(level, checksum=False):
    return {"name": "zstd", "configuration": {"level": level, "checksum": checksum}}


CRC = {"name": "crc32c"}


def _transpose(order):
    return {"name": "transpose", "configuration": {"order": list(order)}}


CODEC_CASES: dict[str, Spec] = {
    "bytes-little-uint32": Spec("uint32", (7, 5), (3, 2), [_bytes("little")]),
    "bytes-big-int32": Spec("int32", (7, 5), (3, 2), [_bytes("big")]),
    "bytes-big-float64": Spec("float64", (11,), (4,), [_bytes("big")]),
    "bytes-big-float16": Spec("float16", (13,), (5,), [_bytes("big")]),
    "bytes-big-complex128": Spec("complex128", (4, 6), (3, 4), [_bytes("big")]),
    "bytes-big-uint64": Spec("uint64", (9,), (4,), [_bytes("big")]),
    "transpose-2d": Spec("int16", (9, 7), (4, 3), [_transpose((1, 0)), _bytes()]),
    "transpose-3d-201": Spec("float32", (5, 6, 7), (2, 3, 4), [_transpose((2, 0, 1)), _bytes()]),
    "transpose-3d-120-big": Spec("complex64", (4, 5, 6), (3, 2, 4), [_transpose((1, 2, 0)), _bytes("big")]),
    "transpose-4d": Spec("uint16", (3, 4, 5, 2), (2, 3, 2, 2), [_transpose((3, 1, 0, 2)), _bytes()]),
    "zstd-neg1": Spec("uint16", (20,), (6,), [_bytes(), _zstd(-1)]),
    "zstd-0": Spec("float32", (20,), (6,), [_bytes(), _zstd(0)]),
    "zstd-3-checksum": Spec("int32", (30,), (8,), [_bytes(), _zstd(3, True)]),
    "zstd-19": Spec("float64", (18,), (5,), [_bytes(), _zstd(19)]),
    "crc32c": Spec("int32", (14,), (5,), [_bytes(), CRC]),
    "gzip-crc32c": Spec("float32", (6, 7), (4, 4), [_bytes(), _gzip(5), CRC]),
    "combo-transpose-big-blosc-crc": Spec("float32", (5, 6, 7), (3, 4, 5),
                                          [_transpose((2, 1, 0)), _bytes("big"), _blosc("zstd", "bitshuffle", 4), CRC]),
    "combo-gzip-then-zstd": Spec("float64", (25,), (7,), [_bytes(), _gzip(1), _zstd(2)]),
    "combo-blosc-gzip-crc-crc": Spec("uint16", (11, 7), (4, 4), [_bytes(), _blosc("lz4", "shuffle", 2), _gzip(2), CRC, CRC]),
    "cke-default-dot": Spec("int16", (7, 9), (3, 4), ZSTD_CHAIN(), chunk_key_encoding={"name": "default", "configuration": {"separator": "."}}),
    "cke-v2-dot": Spec("uint8", (5, 6, 7), (2, 3, 4), [{"name": "bytes"}], chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}}),
    "cke-v2-slash": Spec("int32", (10, 4), (3, 3), ZSTD_CHAIN(), chunk_key_encoding={"name": "v2", "configuration": {"separator": "/"}}),
}
for level in (0, 1, 5, 9):
    CODEC_CASES[f"gzip-{level}"] = Spec("uint16", (12, 12), (5, 5), [_bytes(), _gzip(level)])
for cname in ("blosclz", "lz4", "lz4hc", "zlib", "zstd"):
    for shuffle in ("noshuffle", "shuffle", "bitshuffle"):
        CODEC_CASES[f"blosc-{cname}-{shuffle}"] = Spec("float32", (10, 9), (4, 5), [_bytes(), _blosc(cname, shuffle, 4)])
CODEC_CASES["blosc-typesize-mismatch"] = Spec("int32", (40,), (16,), [_bytes(), _blosc("lz4", "shuffle", 1)])
CODEC_CASES["blosc-typesize-8-int16"] = Spec("int16", (40,), (16,), [_bytes(), _blosc("zstd", "bitshuffle", 8)])
CODEC_CASES["blosc-blocksize-256"] = Spec("uint32", (300,), (150,), [_bytes(), _blosc("blosclz", "shuffle", 4, blocksize=256)])
CODEC_CASES["blosc-int8-clevel9"] = Spec("int8", (5, 5, 5), (3, 3, 3), [{"name": "bytes"}, _blosc("zstd", "shuffle", 1, clevel=9)])


@pytest.mark.parametrize("spec,writer,reader", _params(CODEC_CASES))
def test_v3_codecs(tmp_path, spec, writer, reader):
    roundtrip(tmp_path, spec, writer, reader)


# ======================================================================================
# 3. v3 extension data types
# ======================================================================================
_TS_NO_ZP_EXT = "TensorStore 0.1.86 has no zarr-python extension data type {}"
ZP_EXT_CASES = {
    "string": Spec("string", (11,), (4,), None, fill=""),
    "variable_length_bytes": Spec("variable_length_bytes", (3, 5), (2, 2), None, fill=b""),
    "fixed_length_utf32": Spec("<U6", (11,), (4,), None, fill=""),
    "null_terminated_bytes": Spec("|S5", (2, 6), (2, 4), None, fill=b""),
    "raw_bytes": Spec("|V3", (10,), (4,), None, fill=b"\x00\x00\x00"),
    "datetime64-ns": Spec("<M8[ns]", (25,), (8,), None, fill=np.datetime64("NaT", "ns")),
    "timedelta64-s": Spec("<m8[s]", (3, 5), (2, 2), None, fill=np.timedelta64("NaT", "s")),
}


@pytest.mark.parametrize(
    "spec,writer,reader",
    _params(ZP_EXT_CASES, unsupported={(n, TS): _TS_NO_ZP_EXT.format(n) for n in ZP_EXT_CASES}),
)
def test_v3_zarr_python_extension_dtypes(tmp_path, spec, writer, reader):
    roundtrip(tmp_path, spec, writer, reader)


_ZP_NO_ML = "zarr-python 3.1.6 has no {} data type"
ML_CASES = {}
if ml_dtypes is not None:
    ML_CASES = {
        "bfloat16": Spec("bfloat16", (6, 7), (4, 4), [_bytes()], fill=0.0),
        "int4": Spec("int4", (21,), (8,), [{"name": "bytes"}], fill=0),
        "float8_e4m3fn": Spec("float8_e4m3fn", (5, 9), (2, 4), [{"name": "bytes"}, _zstd(1)], fill=0.0),
        "float8_e5m2": Spec("float8_e5m2", (33,), (10,), [{"name": "bytes"}], fill=0.0),
        "float8_e3m4": Spec("float8_e3m4", (7, 5), (3, 4), [_bytes("big")], fill=-1.5),
        "float8_e8m0fnu": Spec("float8_e8m0fnu", (19,), (6,), [{"name": "bytes"}, _zstd(1)], fill=1.0),
        "float4_e2m1fn": Spec("float4_e2m1fn", (4, 11), (3, 3), [{"name": "bytes"}], fill=-6.0),
    }


@pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes (optional) is not installed")
@pytest.mark.parametrize(
    "spec,writer,reader",
    _params(ML_CASES, unsupported={(n, ZP): _ZP_NO_ML.format(n) for n in ML_CASES}),
)
def test_v3_tensorstore_extension_dtypes(tmp_path, spec, writer, reader):
    path = tmp_path / "a.zarr"
    data = spec.source()
    WRITERS[writer](path, spec, data)
    got = read_with(reader, path, spec)
    assert got.shape == data.shape
    assert np.dtype(got.dtype).name == np.dtype(spec.dtype).name, f"{got.dtype} != {spec.dtype}"
    g = np.ascontiguousarray(got)
    if spec.dtype == "int4":
        np.testing.assert_array_equal(g.astype(np.int8), data.astype(np.int8))
    else:
        u = np.uint16 if np.dtype(spec.dtype).itemsize == 2 else np.uint8
        np.testing.assert_array_equal(g.view(u), np.ascontiguousarray(data).view(u))


@pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes (optional) is not installed")
@pytest.mark.parametrize("name", ML_NAMES)
def test_ml_dtypes_as_numpy_dtypes(tmp_path, name):
    """create_array(dtype=ml_dtypes.<type>) (a numpy dtype object, not the v3 name) writes the
    TensorStore extension type, not raw_bytes, and TensorStore reads it back."""
    dt = np.dtype(getattr(ml_dtypes, name))
    data = make_data(dt, (6,), seed=1)
    arr = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(6,), dtype=dt, chunks=(4,))
    arr[...] = data
    assert json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())["data_type"] == name
    got = read_tensorstore(tmp_path / "a.zarr")
    assert np.dtype(got.dtype).name == name
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(data).tobytes()


# ======================================================================================
# 4. sharding
# ======================================================================================
def _shard(inner, codecs=None, index_codecs=None, location="end"):
    cfg = {
        "chunk_shape": list(inner),
        "codecs": codecs or [_bytes()],
        "index_codecs": index_codecs or [_bytes(), CRC],
    }
    if location is not None:
        cfg["index_location"] = location
    return {"name": "sharding_indexed", "configuration": cfg}


SHARD_CASES = {
    "index-end-crc": Spec("int32", (16, 12), (8, 6), [_shard((4, 3), [_bytes(), _zstd(1)])]),
    "index-start-crc": Spec("float32", (16, 12), (8, 6), [_shard((4, 3), [_bytes(), _gzip(1)], location="start")]),
    "index-start-nocrc": Spec("float64", (12, 10), (6, 5), [_shard((3, 5), [_bytes()], [_bytes()], location="start")]),
    "index-end-nocrc-omitted-location": Spec("uint8", (100,), (32,), [_shard((8,), [{"name": "bytes"}], [_bytes()], location=None)], fill=255),
    "index-big-endian": Spec("int64", (9, 9), (6, 6), [_shard((3, 3), [_bytes(), _blosc("zstd", "bitshuffle", 8)], [_bytes("big"), CRC])]),
    "inner-transpose-compressed": Spec("int16", (6, 8, 10), (4, 4, 6),
                                       [_shard((2, 2, 3), [_transpose((2, 0, 1)), _bytes("big"), _gzip(5)], location="start")], fill=-1),
    "nested": Spec("int32", (10, 9), (4, 6),
                   [_shard((2, 3), [_shard((1, 3), [_bytes(), _gzip(1)], [_bytes()], "start")], [_bytes(), CRC], "end")], fill=3),
    "missing-inner-chunks": Spec("uint16", (16, 16), (8, 8), [_shard((2, 4), [_bytes(), _blosc("lz4", "shuffle", 2)])], fill=7,
                                 region=(slice(0, 5), slice(0, 11))),
    "partial-edge-shards": Spec("float32", (13, 11), (8, 8), [_shard((4, 4), [_bytes(), _zstd(2)])]),
    "missing-shards": Spec("int32", (20, 19), (8, 8), [_shard((4, 4), [_bytes(), _zstd(3)])], region=(slice(8, 16), slice(0, 8))),
}


@pytest.mark.parametrize("spec,writer,reader", _params(SHARD_CASES))
def test_v3_sharding(tmp_path, spec, writer, reader):
    roundtrip(tmp_path, spec, writer, reader)


def _read_shard_index(raw: bytes, n_inner: int, location: str, crc: bool, big: bool = False) -> np.ndarray:
    size = n_inner * 16 + (4 if crc else 0)
    idx_bytes = raw[:size] if location == "start" else raw[len(raw) - size:]
    dt = np.dtype(">u8" if big else "<u8")
    return np.frombuffer(idx_bytes[: n_inner * 16], dtype=dt).reshape(n_inner, 2)


@pytest.mark.parametrize("writer", [ZD, ZP, TS])
def test_sharding_missing_inner_chunks_are_absent_in_index(tmp_path, writer):
    """The missing-inner-chunks layout really has 2^64-1 index entries (so readers are
    exercised on them), for every writer; and every reader reads it as the fill value."""
    spec = SHARD_CASES["missing-inner-chunks"]
    path = tmp_path / "a.zarr"
    data = spec.source()
    WRITERS[writer](path, spec, data)
    raw = (path / "c" / "0" / "0").read_bytes()
    index = _read_shard_index(raw, 4 * 2, "end", crc=True)
    missing = (index == np.iinfo(np.uint64).max).all(axis=1)
    # shard (0,0) = rows 0..7, cols 0..7; inner chunks 2x4; written region rows 0..4, cols 0..10
    # -> inner chunk rows 6..7 (index 3) are missing in both columns: entries 6 and 7
    assert missing[6] and missing[7], f"{writer}: expected missing inner chunks, index {index.tolist()}"
    assert not missing[:6].any()
    # shard (1,1) (rows 8.., cols 8..) was never written at all
    assert not (path / "c" / "1" / "1").exists()
    want = expected_values(spec, data)
    for reader in (ZD, ZP, TS):
        assert_same(read_with(reader, path, spec), want, f"{writer} -> {reader}")


# ======================================================================================
# 5. v2: dtypes, compressors, filters, order F, dimension_separator
# ======================================================================================
def _v2(dtype, shape=(7, 9), chunks=(3, 4), compressor="zlib", **kw):
    comp = numcodecs.Zlib(level=1) if compressor == "zlib" else compressor
    return Spec(dtype, shape, chunks, zarr_format=2, compressor=comp, **kw)


V2_DTYPE_CASES = {
    dt.replace("<", "lt-").replace(">", "gt-").replace("|", ""): _v2(dt, fill=0)
    for dt in ["|b1", "|i1", "<i2", ">i4", "<i8", "|u1", "<u2", ">u4", "<u8", "<f2", "<f4", ">f8", "<c8", ">c16"]
}
V2_DTYPE_CASES.update({
    "S5": _v2("|S5", fill=None),
    "U7": _v2("<U7", fill=""),
    "M8ns": _v2("<M8[ns]", fill=0),
    "m8s": _v2("<m8[s]", fill=0),
    "f4-nanfill-missing": _v2("<f4", fill=np.float32("nan"), region=(slice(0, 3),)),
    "i4-fill-null": _v2("<i4", fill=None),
})
_TS_V2_NO = {
    ("S5", TS): "TensorStore's Python bridge returns the zarr v2 '|S' (char) dimension as numpy '|S0': values unreadable",
    ("U7", TS): "TensorStore's zarr v2 driver does not support the '<U' dtype",
    ("M8ns", TS): "TensorStore's zarr v2 driver does not support the '<M8' dtype",
    ("m8s", TS): "TensorStore's zarr v2 driver does not support the '<m8' dtype",
}


@pytest.mark.parametrize("spec,writer,reader", _params(V2_DTYPE_CASES, unsupported=_TS_V2_NO))
def test_v2_dtypes(tmp_path, spec, writer, reader):
    roundtrip(tmp_path, spec, writer, reader)


V2_COMPRESSOR_CASES = {
    "zlib-1": _v2("<i4", compressor=numcodecs.Zlib(level=1)),
    "zlib-9": _v2("<f8", compressor=numcodecs.Zlib(level=9)),
    "gzip-5": _v2("|u1", compressor=numcodecs.GZip(level=5)),
    "zstd-3": _v2("<f4", compressor=numcodecs.Zstd(level=3)),
    "zstd-checksum": _v2("<i8", compressor=numcodecs.Zstd(level=1, checksum=True)),
    "lz4": _v2("<u2", compressor=numcodecs.LZ4(acceleration=1)),
    "bz2": _v2(">i4", compressor=numcodecs.BZ2(level=3)),
    "lzma": _v2("<f8", compressor=numcodecs.LZMA()),
    "none": _v2("<i2", compressor=None),
}
for cname in ("blosclz", "lz4", "lz4hc", "zlib", "zstd"):
    for shuffle in (0, 1, 2):
        V2_COMPRESSOR_CASES[f"blosc-{cname}-{shuffle}"] = _v2(
            "<f4", compressor=numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle, blocksize=0))
V2_COMPRESSOR_CASES["blosc-blocksize"] = _v2("<u4", shape=(300,), chunks=(150,),
                                             compressor=numcodecs.Blosc(cname="lz4", clevel=3, shuffle=1, blocksize=256))
_TS_V2_COMP_NO = {
    ("zstd-checksum", TS): "TensorStore's zarr v2 driver has no zstd 'checksum' option",
    ("lz4", TS): "TensorStore's zarr v2 driver has no 'lz4' compressor",
    ("lzma", TS): "TensorStore's zarr v2 driver has no 'lzma' compressor",
}


@pytest.mark.parametrize("spec,writer,reader", _params(V2_COMPRESSOR_CASES, unsupported=_TS_V2_COMP_NO))
def test_v2_compressors(tmp_path, spec, writer, reader):
    roundtrip(tmp_path, spec, writer, reader)


V2_FILTER_CASES = {
    "delta": _v2("<i4", shape=(50,), chunks=(16,), filters=[numcodecs.Delta(dtype="<i4")]),
    "delta-big": _v2(">i2", shape=(50,), chunks=(16,), filters=[numcodecs.Delta(dtype=">i2")]),
    "fixedscaleoffset": _v2("<f8", shape=(6, 10), chunks=(4, 4),
                            filters=[numcodecs.FixedScaleOffset(offset=10, scale=100, dtype="<f8", astype="<i4")], lossy=True),
    "quantize": _v2("<f8", shape=(5, 9), chunks=(3, 3), filters=[numcodecs.Quantize(digits=3, dtype="<f8")], lossy=True),
    "shuffle": _v2("<f4", shape=(33,), chunks=(10,), filters=[numcodecs.Shuffle(elementsize=4)]),
    "packbits": _v2("|b1", shape=(5, 13), chunks=(2, 5), filters=[numcodecs.PackBits()]),
    "astype": _v2("<f8", shape=(4, 6), chunks=(2, 3), filters=[numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")], lossy=True),
    "bitround-delta": _v2("<f4", shape=(6, 7), chunks=(3, 3),
                          filters=[numcodecs.BitRound(keepbits=10), numcodecs.Delta(dtype="<f4")], lossy=True),
}
_TS_NO_FILTERS = "TensorStore's zarr v2 driver does not support filters"


@pytest.mark.parametrize("spec,writer,reader", _params(V2_FILTER_CASES, unsupported={("*", TS): _TS_NO_FILTERS}))
def test_v2_filters(tmp_path, spec, writer, reader):
    roundtrip(tmp_path, spec, writer, reader)


V2_LAYOUT_CASES = {
    "order-F-2d": _v2("<i4", shape=(7, 9), chunks=(3, 4), order="F"),
    "order-F-3d-big": _v2(">f4", shape=(4, 5, 6), chunks=(3, 2, 4), order="F"),
    "order-F-c16": _v2("<c16", shape=(5, 4), chunks=(2, 3), order="F", compressor=None),
    "dimsep-slash": _v2("<u2", shape=(6, 7), chunks=(4, 3), dimension_separator="/"),
    "dimsep-dot": _v2("<u4", shape=(8, 3), chunks=(3, 2), dimension_separator="."),
    "order-F-dimsep-slash-missing": _v2("<i2", shape=(8, 8), chunks=(3, 3), order="F", dimension_separator="/",
                                        fill=-3, region=(slice(0, 4), slice(2, 7))),
}


@pytest.mark.parametrize("spec,writer,reader", _params(V2_LAYOUT_CASES))
def test_v2_layouts(tmp_path, spec, writer, reader):
    roundtrip(tmp_path, spec, writer, reader)


def test_v2_dimension_separator_keys_on_disk(tmp_path):
    """zarrdask's v2 '/' separator produces nested keys that zarr-python expects."""
    spec = V2_LAYOUT_CASES["dimsep-slash"]
    write_zarrdask(tmp_path / "a.zarr", spec, spec.source())
    assert (tmp_path / "a.zarr" / "1" / "2").is_file()
    assert json.loads((tmp_path / "a.zarr" / ".zarray").read_text())["dimension_separator"] == "/"


# ======================================================================================
# 6. zarrdask's defaults are readable by both peers
# ======================================================================================
@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("dtype", ["float32", "int16", "uint64", "complex64"])
def test_default_codecs_readable_by_peers(tmp_path, zarr_format, dtype):
    data = make_data(dtype, (9, 7), seed=3)
    path = tmp_path / "d.zarr"
    arr = zarrdask.create_array(str(path), shape=data.shape, dtype=dtype, chunks=(4, 4), zarr_format=zarr_format,
                                dimension_names=["y", "x"] if zarr_format == 3 else None,
                                attributes={"units": "K", "n": 3})
    arr[...] = data
    assert_same(read_zarr_python(path), data, "zarr-python")
    assert_same(read_tensorstore(path, zarr_format), data, "tensorstore")
    zp = zarr.open_array(str(path), mode="r")
    assert zp.attrs["units"] == "K" and zp.attrs["n"] == 3
    if zarr_format == 3:
        assert tuple(zp.metadata.dimension_names) == ("y", "x")


def test_sharded_create_via_shards_keyword_readable_by_peers(tmp_path):
    """create_array(..., shards=...) builds sharding_indexed that both peers read."""
    data = make_data("float32", (20, 18), seed=5)
    path = tmp_path / "s.zarr"
    arr = zarrdask.create_array(str(path), shape=data.shape, dtype="float32", chunks=(4, 3), shards=(8, 9))
    assert tuple(arr.chunks) == (4, 3) and tuple(arr.shards) == (8, 9)
    arr[...] = data
    doc = json.loads((path / "zarr.json").read_text())
    assert doc["chunk_grid"]["configuration"]["chunk_shape"] == [8, 9]
    assert doc["codecs"][0]["name"] == "sharding_indexed"
    assert doc["codecs"][0]["configuration"]["chunk_shape"] == [4, 3]
    assert_same(read_zarr_python(path), data, "zarr-python")
    assert_same(read_tensorstore(path), data, "tensorstore")
    # and the other way: zarr-python's shards= layout read by zarrdask
    p2 = tmp_path / "zp.zarr"
    z = zarr.create_array(str(p2), shape=data.shape, dtype="float32", chunks=(4, 3), shards=(8, 9))
    z[...] = data
    back = zarrdask.open(str(p2))
    assert tuple(back.chunks) == (4, 3) and tuple(back.shards) == (8, 9)
    assert_same(np.asarray(back[...]), data, "zarrdask")


def test_group_hierarchy_interop(tmp_path):
    """A hierarchy written by zarrdask is seen by zarr-python, and vice versa."""
    path = tmp_path / "g.zarr"
    root = zarrdask.create_group(str(path), attributes={"title": "t"})
    sub = root.create_group("sub")
    a = sub.create_array("a", shape=(5,), dtype="int16", chunks=(2,))
    a[...] = np.arange(5, dtype="int16")
    zg = zarr.open_group(str(path), mode="r")
    assert zg.attrs["title"] == "t"
    np.testing.assert_array_equal(zg["sub/a"][...], np.arange(5, dtype="int16"))

    p2 = tmp_path / "zp.zarr"
    zg2 = zarr.open_group(str(p2), mode="w")
    zg2.attrs["k"] = [1, 2]
    zz = zg2.create_group("x").create_array("y", shape=(3, 3), dtype="float64", chunks=(2, 2))
    zz[...] = np.eye(3)
    g = zarrdask.open(str(p2))
    assert isinstance(g, zarrdask.Group)
    assert dict(g.attrs) == {"k": [1, 2]}
    assert_same(np.asarray(g["x/y"][...]), np.eye(3), "zarrdask")


# ======================================================================================
# 7. partial (read-modify-write) updates across libraries, consolidated metadata
# ======================================================================================
@pytest.mark.parametrize("first,second", [(ZP, ZD), (TS, ZD), (ZD, ZP), (ZD, TS)])
@pytest.mark.parametrize("case", ["index-end-crc", "index-start-nocrc", "nested", "missing-shards"])
def test_sharded_partial_update_across_libraries(tmp_path, case, first, second):
    """One library writes a sharded array, another updates a region that cuts through
    shards and inner chunks (read-modify-write), and all three read the result."""
    spec = SHARD_CASES[case]
    path = tmp_path / "a.zarr"
    data = spec.source()
    WRITERS[first](path, spec, data)
    want = expected_values(spec, data).copy()
    region = tuple(slice(max(0, n // 3 - 1), max(1, n // 3 + n // 2)) for n in spec.shape)
    patch = make_data(spec.dtype, tuple(r.stop - r.start for r in region), seed=99)
    if second == ZD:
        zarrdask.open(str(path), mode="r+")[region] = patch
    elif second == ZP:
        zarr.open_array(str(path), mode="r+")[region] = patch
    else:
        ts.open(_ts_spec(path, 3)).result()[region].write(patch).result()
    want[region] = patch
    for reader in (ZD, ZP, TS):
        assert_same(read_with(reader, path, spec), want, f"{first} then {second} -> {reader}")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_metadata_interop(tmp_path, zarr_format):
    """zarrdask's consolidated metadata is used by zarr-python, and zarr-python's by zarrdask."""
    path = tmp_path / "g.zarr"
    root = zarrdask.create_group(str(path), zarr_format=zarr_format, attributes={"title": "c"})
    a = root.create_group("sub").create_array("a", shape=(6,), dtype="int32", chunks=(4,), fill_value=-1)
    a[...] = np.arange(6, dtype="int32")
    zarrdask.consolidate_metadata(str(path))
    if zarr_format == 2:
        assert (path / ".zmetadata").is_file()
    else:
        assert "consolidated_metadata" in json.loads((path / "zarr.json").read_text())
    zg = zarr.open_consolidated(str(path), zarr_format=zarr_format)
    assert zg.attrs["title"] == "c"
    np.testing.assert_array_equal(zg["sub/a"][...], np.arange(6, dtype="int32"))
    # hide the per-node documents: only the consolidated copy can answer
    p2 = tmp_path / "zp.zarr"
    zg2 = zarr.open_group(str(p2), mode="w", zarr_format=zarr_format)
    zg2.attrs["t"] = 1
    zz = zg2.create_group("x").create_array("y", shape=(3,), dtype="float32", chunks=(2,))
    zz[...] = np.array([1.5, -0.0, np.nan], dtype="float32")
    zarr.consolidate_metadata(str(p2), zarr_format=zarr_format)
    g = zarrdask.open(str(p2))
    assert getattr(g, "consolidated", True)
    assert dict(g.attrs) == {"t": 1}
    assert_same(np.asarray(g["x/y"][...]), np.array([1.5, -0.0, np.nan], dtype="float32"), "zarrdask")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_resize_and_append_read_by_peers(tmp_path, zarr_format):
    path = tmp_path / "r.zarr"
    data = np.arange(60, dtype="int16").reshape(6, 10)
    arr = zarrdask.create_array(str(path), shape=data.shape, dtype="int16", chunks=(4, 4), fill_value=-5,
                                zarr_format=zarr_format)
    arr[...] = data
    arr.resize((3, 7))  # shrink: chunks outside the new shape are gone
    want = data[:3, :7]
    assert_same(read_zarr_python(path), want, "zarr-python after shrink")
    assert_same(read_tensorstore(path, zarr_format), want, "tensorstore after shrink")
    arr.resize((5, 9))  # grow: the new region reads as the fill value (old data must not resurface)
    want = np.full((5, 9), -5, dtype="int16")
    want[:3, :7] = data[:3, :7]
    assert_same(read_zarr_python(path), want, "zarr-python after grow")
    arr.append(np.ones((2, 9), dtype="int16"), axis=0)
    want = np.concatenate([want, np.ones((2, 9), dtype="int16")])
    assert_same(read_zarr_python(path), want, "zarr-python after append")
    assert_same(read_tensorstore(path, zarr_format), want, "tensorstore after append")


# ======================================================================================
# 8. more types: v2 structured and object (vlen-utf8), v3 strings inside shards,
#    NaN-payload fill values, dimension names with nulls
# ======================================================================================
STRUCT = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])


def _struct_data(n: int) -> np.ndarray:
    v = np.zeros(n, STRUCT)
    v["a"] = np.arange(n) - 3
    v["b"] = np.arange(n) * 0.25
    v["b"][1] = -0.0
    v["c"] = [b"x" * (i % 4) for i in range(n)]
    return v


@pytest.mark.parametrize("writer,reader", [(ZP, ZD), (ZD, ZP)])
def test_v2_structured_dtype(tmp_path, writer, reader):
    path = tmp_path / "s.zarr"
    data = _struct_data(7)
    if writer == ZP:
        z = zarr.create_array(str(path), shape=(7,), chunks=(3,), dtype=STRUCT, zarr_format=2)
        z[...] = data
        got = np.asarray(zarrdask.open(str(path))[...])
    else:
        a = zarrdask.create_array(str(path), shape=(7,), chunks=(3,), dtype=STRUCT, zarr_format=2)
        a[...] = data
        got = np.asarray(zarr.open_array(str(path), mode="r")[...])
    assert got.dtype == STRUCT, got.dtype
    assert got.tobytes() == data.tobytes()


@pytest.mark.parametrize("writer,reader", [(ZP, ZD), (ZD, ZP)])
def test_v2_object_vlen_utf8(tmp_path, writer, reader):
    path = tmp_path / "o.zarr"
    data = make_data("string", (3, 4))
    if writer == ZP:
        z = zarr.create_array(str(path), shape=data.shape, chunks=(2, 3), dtype=str, zarr_format=2)
        z[...] = data.astype(str)
        got = np.asarray(zarrdask.open(str(path))[...])
    else:
        a = zarrdask.create_array(str(path), shape=data.shape, chunks=(2, 3), dtype=object, zarr_format=2)
        a[...] = data
        meta = json.loads((path / ".zarray").read_text())
        assert meta["dtype"] == "|O" and meta["filters"][0]["id"] == "vlen-utf8"
        got = np.asarray(zarr.open_array(str(path), mode="r")[...])
    assert_same(got, data, f"{writer} -> {reader}")


@pytest.mark.parametrize("writer,reader", [(ZP, ZD), (ZD, ZP)])
@pytest.mark.parametrize("dtype", ["string", "variable_length_bytes"])
def test_v3_variable_length_in_shards(tmp_path, writer, reader, dtype):
    path = tmp_path / "v.zarr"
    data = make_data(dtype, (10,))
    fill = "" if dtype == "string" else b""
    region = slice(0, 6)  # the second shard stays missing; inner chunk (1,) of shard 0 too
    data[4:6] = fill
    want = np.array([fill] * 10, dtype=object)
    want[region] = data[region]
    codec = "vlen-utf8" if dtype == "string" else "vlen-bytes"
    codecs = [_shard((2,), [{"name": codec}, _zstd(1)])]
    if writer == ZP:
        z = zarr.create(store=str(path), shape=(10,), chunks=(6,), dtype=_zp_dtype(dtype), codecs=codecs,
                        fill_value=fill, zarr_format=3)
        z[region] = data[region]
        got = np.asarray(zarrdask.open(str(path))[...])
    else:
        a = zarrdask.create_array(str(path), shape=(10,), chunks=(6,), dtype=_np_dtype(dtype), codecs=codecs, fill_value=fill)
        a[region] = data[region]
        got = np.asarray(zarr.open_array(str(path), mode="r")[...])
    assert_same(got, want, f"{writer} -> {reader}")


@pytest.mark.parametrize("dtype,bits", [("float32", 0x7FC00001), ("float64", 0x7FF0000000000001), ("float16", 0x7E01)])
def test_nan_payload_fill_value_read_by_tensorstore(tmp_path, dtype, bits):
    """A fill value with a NaN payload is written as hex JSON and TensorStore fills missing
    chunks with exactly those bits (zarr-python 3.1.6 canonicalises NaN fills: not checked)."""
    u = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}[dtype]
    fill = np.array(bits, dtype=u).view(dtype)[()]
    path = tmp_path / "n.zarr"
    a = zarrdask.create_array(str(path), shape=(6,), dtype=dtype, chunks=(2,), fill_value=fill)
    a[0:2] = np.arange(2, dtype=dtype)
    doc = json.loads((path / "zarr.json").read_text())
    assert doc["fill_value"] == f"0x{bits:0{np.dtype(dtype).itemsize * 2}x}", doc["fill_value"]
    got = read_tensorstore(path)
    want = np.array([0, 1, fill, fill, fill, fill], dtype=dtype)
    want[2:] = fill
    assert_same(got, want, "tensorstore")
    assert_same(np.asarray(zarrdask.open(str(path))[...]), want, "zarrdask")


def test_dimension_names_with_nulls_and_attributes(tmp_path):
    path = tmp_path / "d.zarr"
    attrs = {"s": "é", "n": None, "l": [1, 2.5, True], "big": 2**63 - 1}
    a = zarrdask.create_array(str(path), shape=(2, 3, 4), dtype="uint8", chunks=(2, 2, 2),
                              dimension_names=["t", None, "x"], attributes=attrs)
    a[...] = 1
    z = zarr.open_array(str(path), mode="r")
    assert tuple(z.metadata.dimension_names) == ("t", None, "x")
    assert dict(z.attrs) == attrs
    t = ts.open(_ts_spec(path, 3)).result()
    assert list(t.domain.labels) == ["t", "", "x"]
    p2 = tmp_path / "z.zarr"
    z2 = zarr.create_array(str(p2), shape=(2, 3), dtype="int8", chunks=(1, 1), dimension_names=[None, "b"], attributes=attrs)
    back = zarrdask.open(str(p2))
    assert tuple(back.dimension_names) == (None, "b")
    assert dict(back.attrs) == attrs
    del z2


# ======================================================================================
# 9. random chains against zarr-python (hypothesis, bounded), zip archives
# ======================================================================================
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

try:
    from .test_properties import roundtrip_cases
except ImportError:
    from test_properties import roundtrip_cases


@settings(max_examples=30, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(case=roundtrip_cases(), zarrdask_writes=st.booleans())
def test_random_chains_with_zarr_python(tmp_path_factory, case, zarrdask_writes):
    """Random dtype / shape / chunks / codec chain / shards, written by one library and read
    by the other. Values are compared numerically for floats here (NaN == NaN, -0.0 == 0.0):
    zarr-python, like any writer, may skip chunks equal to the fill value, and the bitwise
    rule for that is tested in test_properties."""
    dtype, shape, chunks, shards, codecs, data, fill = case
    path = tmp_path_factory.mktemp("rand") / "a.zarr"
    if shards is not None:
        codecs = [_shard(chunks, codecs)]
    grid = shards or chunks
    if zarrdask_writes:
        arr = zarrdask.create_array(str(path), shape=shape, dtype=dtype, chunks=grid, codecs=codecs, fill_value=fill)
        arr[...] = data
        got = np.asarray(zarr.open_array(str(path), mode="r")[...])
    else:
        z = zarr.create(store=str(path), shape=shape, chunks=grid, dtype=dtype, codecs=codecs, fill_value=fill, zarr_format=3)
        z[...] = data
        got = np.asarray(zarrdask.open(str(path))[...])
    assert got.shape == data.shape and got.dtype == data.dtype
    np.testing.assert_array_equal(got, data)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zip_store_written_by_zarr_python(tmp_path, zarr_format):
    from zarr.storage import ZipStore

    path = tmp_path / "a.zip"
    data = make_data("float64", (5, 6), seed=8)
    with ZipStore(str(path), mode="w") as zs:
        z = zarr.create_array(zs, shape=data.shape, chunks=(2, 4), dtype="float64", zarr_format=zarr_format)
        z[...] = data
    assert_same(np.asarray(zarrdask.open(str(path))[...]), data, "zarrdask from .zip path")
    assert_same(np.asarray(zarrdask.open(str(path))[1:4, ::2]), data[1:4, ::2], "zarrdask partial read from zip")
