"""Helpers shared by the acceptance suites (conformance, interop, properties, bad input).

Everything here is independent of zarrdask's internals: values are compared by bit
pattern, fill values are decoded from their JSON form by this module (not by the
library under test), and the conformance corpus is located next to the repository.
"""

from __future__ import annotations

import base64
import bisect
import json
import os
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zarrdask.storage.base import ByteRequest
from zarrdask.storage.transformers import WrapperStore

REPO_ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------
# the conformance corpus
# --------------------------------------------------------------------------------------
def corpus_dir() -> Path:
    """The corpus kept in the repository, ``tests/data/conformance`` (override: $ZARRDASK_CONFORMANCE)."""
    env = os.environ.get("ZARRDASK_CONFORMANCE")
    if env:
        return Path(env).resolve()
    return REPO_ROOT / "tests" / "data" / "conformance"


def load_manifest() -> dict | None:
    path = corpus_dir() / "manifest.json"
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# --------------------------------------------------------------------------------------
# comparisons
# --------------------------------------------------------------------------------------
def native(arr: np.ndarray) -> np.ndarray:
    """The same values in native byte order (a byte-order-only conversion keeps the bits)."""
    arr = np.asarray(arr)
    if arr.dtype.byteorder not in ("=", "|") and arr.dtype.fields is None:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def bit_view(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(native(arr))
    return arr.reshape(-1).view(np.uint8)


def _first_diffs(actual: np.ndarray, expected: np.ndarray, mask: np.ndarray, n: int = 5) -> str:
    idx = np.argwhere(mask)[:n]
    parts = []
    for i in idx:
        t = tuple(int(v) for v in i)
        parts.append(f"{t}: got {actual[t]!r} expected {expected[t]!r}")
    return "; ".join(parts)


def assert_bitwise_equal(actual: Any, expected: np.ndarray, what: str = "values") -> None:
    """Same shape and the same bit pattern in every element (NaN payloads, -0.0 included)."""
    actual = np.asarray(actual)
    expected = native(np.asarray(expected))
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype.kind == expected.dtype.kind and actual.dtype.itemsize == expected.dtype.itemsize, (
        f"{what}: dtype {actual.dtype} is not {expected.dtype} up to byte order"
    )
    got = np.ascontiguousarray(native(actual).astype(expected.dtype, copy=False))
    if got.size == 0:
        return
    gb = got.reshape(-1).view(np.uint8).reshape(got.size, -1)
    eb = np.ascontiguousarray(expected).reshape(-1).view(np.uint8).reshape(expected.size, -1)
    bad = (gb != eb).any(axis=1).reshape(expected.shape)
    if bad.any():
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {expected.size} elements differ bitwise, e.g. "
            + _first_diffs(got, expected, bad)
            + f" (bits of first: {gb[bad.reshape(-1)][0].tobytes().hex()} vs "
            f"{eb[bad.reshape(-1)][0].tobytes().hex()})"
        )


def assert_exact_equal(actual: Any, expected: np.ndarray, what: str = "values") -> None:
    """``np.array_equal``, same shape, same kind of dtype (for ints/bools/datetimes/void)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype.kind == expected.dtype.kind, (
        f"{what}: dtype kind {actual.dtype} ({actual.dtype.kind}) != {expected.dtype} ({expected.dtype.kind})"
    )
    if expected.dtype.kind == "V":
        assert actual.dtype.itemsize == expected.dtype.itemsize, f"{what}: {actual.dtype} != {expected.dtype}"
        a = np.ascontiguousarray(actual).reshape(-1).view(np.uint8)
        e = np.ascontiguousarray(expected).reshape(-1).view(np.uint8)
        assert np.array_equal(a, e), f"{what}: raw bytes differ"
        return
    if expected.dtype.kind in "mM":
        assert np.dtype(actual.dtype).str[1:] == expected.dtype.str[1:], f"{what}: unit {actual.dtype} != {expected.dtype}"
        a = native(actual).view(np.int64)
        e = native(expected).view(np.int64)
        bad = a != e
    else:
        bad = native(actual) != native(expected)
    if np.any(bad):
        bad = np.asarray(bad)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {expected.size} elements differ, e.g. "
            + _first_diffs(actual, expected, bad)
        )


def _as_py_str(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    return v


def assert_string_values_equal(actual: Any, expected: np.ndarray, what: str = "values") -> None:
    """Element-wise equality of Python str/bytes values (any string dtype on our side)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    diffs = []
    for idx in np.ndindex(expected.shape):
        got = _as_py_str(actual[idx])
        exp = _as_py_str(expected[idx])
        if isinstance(exp, (bytes, bytearray)):
            ok = isinstance(got, (bytes, bytearray)) and bytes(got) == exp
        else:
            ok = isinstance(got, str) and got == exp
        if not ok:
            diffs.append(f"{idx}: got {got!r} expected {exp!r}")
    if diffs:
        raise AssertionError(f"{what}: {len(diffs)} of {expected.size} elements differ, e.g. " + "; ".join(diffs[:5]))


def assert_same(actual: Any, expected: np.ndarray, what: str = "values") -> None:
    """Pick the right comparison for a dtype: bits for floats, exact otherwise, strings as values."""
    expected = np.asarray(expected)
    kind = expected.dtype.kind
    if kind in "fc":
        assert_bitwise_equal(actual, expected, what)
    elif kind in "USOT":
        assert_string_values_equal(actual, expected, what)
    elif kind == "V" or kind in "biumM":
        assert_exact_equal(actual, expected, what)
    else:
        # ml_dtypes types (bfloat16, float8, int4) have kind 'V' or custom: compare bits
        assert_bitwise_equal(actual, expected, what)


# --------------------------------------------------------------------------------------
# fill-value JSON (decoded here, independently of the library under test)
# --------------------------------------------------------------------------------------
_FLOAT_SPECIAL = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_UINT_FOR_SIZE = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def decode_float_json(value: Any, dtype: np.dtype) -> np.ndarray:
    """A 0-d array of ``dtype`` (a native float dtype) holding the JSON float ``value`` bit-exactly."""
    dtype = np.dtype(dtype)
    if isinstance(value, str):
        if value.startswith("0x"):
            bits = int(value, 16)
            return np.array(bits, dtype=_UINT_FOR_SIZE[dtype.itemsize]).view(dtype)
        if value in _FLOAT_SPECIAL:
            # the spec's "NaN" is the canonical quiet NaN (e.g. 0x7fc00000 for float32)
            return np.array(_FLOAT_SPECIAL[value], dtype=dtype)
        raise ValueError(f"not a float fill value: {value!r}")
    return np.array(value, dtype=dtype)


def decode_fill_json(value: Any, expected_dtype: np.dtype) -> np.ndarray | None:
    """The expected fill value as a 0-d array of ``expected_dtype`` (the npy's dtype), or None
    when the JSON fill is null (v2 "no fill value")."""
    dt = np.dtype(expected_dtype)
    if value is None:
        return None
    k = dt.kind
    if k == "f":
        return decode_float_json(value, dt)
    if k == "c":
        part = np.dtype(f"f{dt.itemsize // 2}")
        re_, im_ = (value if isinstance(value, list) else (value, 0))
        out = np.zeros((), dtype=dt)
        pair = out.reshape(1).view(part)
        pair[0] = decode_float_json(re_, part)
        pair[1] = decode_float_json(im_, part)
        return out
    if k == "b":
        return np.array(bool(value), dtype=dt)
    if k in "iu":
        return np.array(int(value), dtype=dt)
    if k in "mM":
        return np.array(int(value), dtype=np.int64).view(dt)
    if k == "U":
        return np.array(value, dtype=dt)
    if k == "S":
        # zarr v2 writes bytes fill values as base64; v3 extensions may do likewise
        try:
            raw = base64.b64decode(value, validate=True)
        except Exception:  # noqa: BLE001 - plain text fill
            raw = value.encode()
        return np.array(raw, dtype=dt)
    if k == "V":
        raw = base64.b64decode(value) if isinstance(value, str) else bytes(value)
        return np.frombuffer(raw, dtype=dt).reshape(())
    raise ValueError(f"cannot decode fill value {value!r} for {dt}")


def fill_bits_hex(value: Any, dtype: np.dtype) -> str:
    arr = decode_fill_json(value, dtype)
    return "" if arr is None else np.ascontiguousarray(arr).tobytes().hex()


# --------------------------------------------------------------------------------------
# reading the library's reported metadata
# --------------------------------------------------------------------------------------
def metadata_document(arr: Any) -> dict:
    """The JSON document zarrdask reports for an array/group (``.metadata.to_json()``)."""
    md = arr.metadata
    for name in ("to_json", "to_dict", "as_json"):
        fn = getattr(md, name, None)
        if callable(fn):
            doc = fn()
            if isinstance(doc, (bytes, str)):
                doc = json.loads(doc)
            return doc
    raise AssertionError(f"{type(md).__name__} has no to_json(): cannot read the metadata document")


def read_all(node: Any) -> None:
    """Read every value of an array, or of every array under a group (recursively)."""
    import zarrdask

    if isinstance(node, zarrdask.Array):
        np.asarray(node[...])
        return
    for _name, child in iter_members(node):
        read_all(child)


def iter_members(group: Any):
    """(name, node) pairs of a group's direct members, whatever container ``members()`` returns."""
    members = group.members()
    if isinstance(members, dict):
        return list(members.items())
    out = []
    for item in members:
        if isinstance(item, tuple) and len(item) == 2:
            out.append(item)
        else:
            raise AssertionError(f"Group.members() yielded {item!r}, expected (name, node) pairs")
    return out


def walk_hierarchy(group: Any, prefix: str = "") -> dict[str, str]:
    """{relative path: "group"|"array"} for every node under ``group`` ("" = the group itself)."""
    import zarrdask

    out = {prefix: "group"}
    for name, child in iter_members(group):
        name = name.rsplit("/", 1)[-1]
        path = f"{prefix}/{name}" if prefix else name
        if isinstance(child, zarrdask.Array):
            out[path] = "array"
        elif isinstance(child, zarrdask.Group):
            out.update(walk_hierarchy(child, path))
        else:
            raise AssertionError(f"member {path!r} is a {type(child).__name__}, not an Array or Group")
    return out


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality that tells -0.0 from 0.0 and NaN from everything, and 1 from True."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return struct.pack("<d", float(a)) == struct.pack("<d", float(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


class CountingStore(WrapperStore):
    """Forwards to ``inner`` and records each read call (a batched call is one) with its requests."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.calls: list[list[tuple[str, ByteRequest | None]]] = []

    @property
    def reads(self) -> int:
        return len(self.calls)

    @property
    def requests(self) -> list[tuple[str, ByteRequest | None]]:
        return [r for call in self.calls for r in call]

    def reset(self) -> None:
        self.calls = []

    def _get(self, key: str) -> bytes | None:
        self.calls.append([(key, None)])
        return super()._get(key)

    def _get_ranges(self, requests: list[tuple[str, ByteRequest]]) -> list[bytes | None]:
        self.calls.append(list(requests))
        return super()._get_ranges(requests)

    @property
    def url(self) -> str:
        return "counting+" + self.inner.url


# --------------------------------------------------------------------------------------
# grids
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IrregularAxis:
    """Chunks of the given extents (a ``zarrdask.metadata.grid.AxisGrid`` that is not regular,
    as a rectilinear grid has)."""

    edges: tuple[int, ...]

    @property
    def size(self) -> int:
        return self.edges[-1]

    @property
    def count(self) -> int:
        return len(self.edges) - 1

    def bounds(self, k):
        return self.edges[k], self.edges[k + 1]

    def overlapping(self, start, stop):
        return [(k, *self.bounds(k)) for k in range(self.index_of(start), self.index_of(stop - 1) + 1)]

    def stored(self, k):
        return self.edges[k + 1] - self.edges[k]

    def index_of(self, i):
        return bisect.bisect_right(self.edges, i) - 1

    def index_of_array(self, indices):
        return np.searchsorted(np.asarray(self.edges), indices, side="right") - 1

    def extents(self):
        return tuple(np.diff(self.edges)) or (0,)


# --------------------------------------------------------------------------------------
# generated shard layouts (hypothesis)
# --------------------------------------------------------------------------------------
def draw_shard_geometry(draw: Any, st: Any, max_per_shard: int, min_extent: int, spare: int) -> tuple[Any, ...]:
    """``(ndim, inner, shard, shape)`` of a sharded array of 1-3 dimensions: inner chunks of
    1-4 per axis, 1 to ``max_per_shard`` of them per shard, arrays of ``min_extent`` to two
    shards and ``spare`` elements per axis (so shards are clipped at the edge)."""
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    per_shard = tuple(draw(st.integers(1, max_per_shard)) for _ in range(ndim))
    shard = tuple(i * n for i, n in zip(inner, per_shard))
    shape = tuple(draw(st.integers(min_extent, 2 * s + spare)) for s in shard)
    return ndim, inner, shard, shape


def run_with_query_planning(script: str) -> None:
    """Run ``script`` in a fresh interpreter with dask's array query planning on (it is
    chosen at dask's import) and the working tree's zarrdask; it must print "ok"."""
    env = {**os.environ, "DASK_ARRAY__QUERY_PLANNING": "True"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def run_at_once(context: Any, target: Any, n: int, *args: Any, timeout: float = 180) -> None:
    """``target(*args, k, barrier)`` in ``n`` processes of ``context`` (k = 0..n-1), released
    together by the barrier; each must exit cleanly within ``timeout`` seconds."""
    barrier = context.Barrier(n)
    procs = [context.Process(target=target, args=(*args, k, barrier)) for k in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        assert p.exitcode == 0, f"process {p.name} exited with {p.exitcode}"
