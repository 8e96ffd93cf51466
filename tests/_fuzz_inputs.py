"""Inputs for the fuzz tests (tests/interop/test_fuzz.py): seed stores and the mutations applied to them.

Seeds are the public conformance corpus (stores written by other implementations) plus
arrays written here with every registered codec, v2 compressor and filter. A mutation
works on one document or one stored value of a seed; every choice is drawn from a
``random.Random`` that hypothesis controls, so failures shrink and replay.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import zarrdask
from zarrdask.errors import TooLargeError, ZarrdaskError
from zarrdask.storage import MemoryStore

CORPUS = Path(__file__).parent / "data" / "conformance"
METADATA_NAMES = ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")
MAX_READ_BYTES = 1 << 20
MAX_READ_UNITS = 512

Files = dict[str, bytes]


# ---------------------------------------------------------------------------------------
# seeds
# ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def corpus_seeds() -> tuple[tuple[str, Files], ...]:
    """Every corpus store (as ``{key: bytes}``) of at most 1 MB."""
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    seeds = []
    for case in manifest["cases"]:
        base = CORPUS / case["path"]
        files = {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}
        if sum(map(len, files.values())) <= 1 << 20:
            seeds.append((case["id"], files))
    return tuple(seeds)


BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
CRC = {"name": "crc32c"}

#: (name, create_array keyword arguments, checksummed: every stored value ends in a crc32c
#: of what precedes it, so a mutated chunk must read as the original data or fail)
BUILT = [
    ("bytes", dict(codecs=[BYTES]), False),
    ("bytes-crc", dict(codecs=[BYTES, CRC]), True),
    ("big-endian-transpose", dict(codecs=[{"name": "transpose", "configuration": {"order": [1, 0]}},
                                          {"name": "bytes", "configuration": {"endian": "big"}}]), False),
    ("gzip", dict(codecs=[BYTES, {"name": "gzip", "configuration": {"level": 1}}]), False),
    ("zstd", dict(codecs=[BYTES, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}]), False),
    ("zstd-checksum", dict(codecs=[BYTES, {"name": "zstd", "configuration": {"level": 1, "checksum": True}}]), False),
    ("zstd-crc", dict(codecs=[BYTES, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}, CRC]), True),
    *[(f"blosc-{cname}", dict(codecs=[BYTES, {"name": "blosc", "configuration": {
        "cname": cname, "clevel": 5, "shuffle": shuffle, "typesize": 4, "blocksize": 0}}]), False)
      for cname, shuffle in (("lz4", "shuffle"), ("zstd", "bitshuffle"), ("blosclz", "noshuffle"),
                             ("zlib", "shuffle"), ("lz4hc", "noshuffle"))],
    *[(f"numcodecs.{cid}", dict(codecs=[BYTES, {"name": f"numcodecs.{cid}", "configuration": cfg}]), False)
      for cid, cfg in (("zlib", {"level": 1}), ("lz4", {"acceleration": 1}), ("bz2", {"level": 1}),
                       ("lzma", {}), ("shuffle", {"elementsize": 4}), ("adler32", {}), ("crc32", {}),
                       ("fletcher32", {}), ("jenkins_lookup3", {}), ("gzip", {"level": 1}), ("zstd", {"level": 1}),
                       ("blosc", {"cname": "lz4", "clevel": 1, "shuffle": 1}))],
    ("delta-zstd", dict(codecs=[{"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}}, BYTES,
                                {"name": "zstd", "configuration": {"level": 1, "checksum": False}}]), False),
    ("scale-offset", dict(codecs=[{"name": "scale_offset", "configuration": {"offset": 5, "scale": 2}}, BYTES]), False),
    ("sharded", dict(chunks=(4, 3), shards=(8, 6), compressors=[{"name": "zstd", "configuration": {"level": 1}}]),
     False),
    ("sharded-crc", dict(chunks=(4, 3), shards=(8, 6), compressors=[CRC]), True),
    ("sharded-start", dict(codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 3], "codecs": [BYTES, {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [BYTES], "index_location": "start"}}], chunks=(8, 6)), False),
    ("sharded-transposed", dict(codecs=[{"name": "transpose", "configuration": {"order": [1, 0]}},
                                        {"name": "sharding_indexed", "configuration": {
                                            "chunk_shape": [3, 4], "codecs": [BYTES, CRC],
                                            "index_codecs": [BYTES, CRC], "index_location": "end"}}],
                                chunks=(8, 6)), True),
    ("sharded-nested", dict(codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 6], "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 3], "codecs": [BYTES, CRC], "index_codecs": [BYTES, CRC]}}],
        "index_codecs": [BYTES, CRC]}}], chunks=(8, 6)), True),
    ("sharded-outer-gzip", dict(codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 3], "codecs": [BYTES], "index_codecs": [BYTES, CRC]}},
        {"name": "gzip", "configuration": {"level": 1}}], chunks=(8, 6)), False),
    *[(f"v2-{cid}", dict(zarr_format=2, compressors={"id": cid, **cfg}), False)
      for cid, cfg in (("zstd", {"level": 1}), ("gzip", {"level": 1}), ("zlib", {"level": 1}), ("bz2", {"level": 1}),
                       ("lzma", {}), ("lz4", {}), ("blosc", {"cname": "zstd", "clevel": 1, "shuffle": 2}))],
    ("v2-delta-zlib", dict(zarr_format=2, filters=[{"id": "delta", "dtype": "<i4"}],
                           compressors={"id": "zlib", "level": 1}), False),
    ("v2-fixedscaleoffset", dict(zarr_format=2, filters=[{"id": "fixedscaleoffset", "offset": 1, "scale": 1,
                                                          "dtype": "<i4", "astype": "<i2"}], compressors=None), False),
]

STRINGS = [("vlen-utf8", dict(dtype="string", compressors=[{"name": "zstd", "configuration": {"level": 1}}])),
           ("vlen-bytes", dict(dtype="variable_length_bytes", compressors=None)),
           ("v2-vlen-utf8", dict(dtype=object, zarr_format=2, compressors={"id": "zlib", "level": 1}))]


def _built_store(kwargs: dict[str, Any], data: np.ndarray) -> Files:
    store = MemoryStore()
    kwargs = dict(kwargs)
    kwargs.setdefault("chunks", (4, 3))
    kwargs.setdefault("dtype", data.dtype)
    a = zarrdask.create_array(store, shape=data.shape, fill_value=None if data.dtype == object else 7, **kwargs)
    a[...] = data
    a.attrs["units"] = "K"
    return {key: store.get(key) for key in store.list_prefix("")}


@functools.lru_cache(maxsize=1)
def built_seeds() -> tuple[tuple[str, Files, bool, np.ndarray], ...]:
    """Arrays written with every codec: (name, files, checksummed, the values)."""
    data = (np.arange(48, dtype="<i4").reshape(8, 6) * 37 % 101).astype("<i4")
    seeds = [(name, _built_store(kwargs, data), crc, data) for name, kwargs, crc in BUILT]
    text = np.array([f"v{i}" * (i % 4) for i in range(48)], dtype=object).reshape(8, 6)
    for name, kwargs in STRINGS:
        values = np.array([s.encode() for s in text.reshape(-1)], dtype=object).reshape(8, 6) \
            if kwargs["dtype"] == "variable_length_bytes" else text
        seeds.append((name, _built_store(kwargs, values), False, values))
    return tuple(seeds)


def all_seeds() -> list[Files]:
    return [files for _, files in corpus_seeds()] + [files for _, files, _, _ in built_seeds()]


# ---------------------------------------------------------------------------------------
# mutations
# ---------------------------------------------------------------------------------------
_ODD = [None, True, False, 0, -1, 1, 2, 3, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, 10**18, -(10**18), 10**400 // 10**300,
        0.5, -0.0, 1e308, "", "x", "..", "../x", "/abs", "a\\b", "a\x00b", "__x", "c", "0", "NaN", "Infinity",
        "0x7fc00000", [], {}, [0], [1, 1], [10**18], [2**63, 2**63], [0, 0, 0], {"name": "bytes"}, "bytes", "zstd",
        "int32", "float64", "string", [[1, 2]], {"name": "regular", "configuration": {"chunk_shape": [1]}},
        {"name": "sharding_indexed"}, {"id": "zstd"}, {"id": "pickle"}, {"id": "blosc", "cname": 5}]
_NAMES = ["name", "configuration", "chunk_shape", "chunk_shapes", "codecs", "index_codecs", "index_location", "id",
          "shape", "chunks", "dtype", "data_type", "fill_value", "metadata", "must_understand", "kind", "order",
          "separator", "endian", "level", "typesize", "node_type", "zarr_format", "attributes", "filters"]


def random_json(r: random.Random, depth: int = 0) -> Any:
    """A JSON value leaning towards what metadata holds: odd numbers, names, small lists."""
    k = r.randrange(9 if depth < 3 else 5)
    if k == 0:
        return copy.deepcopy(r.choice(_ODD))  # (mutations change values in place)
    if k == 1:
        return r.randint(-(2**70), 2**70)
    if k == 2:
        return r.randint(-3, 12)
    if k == 3:
        return r.choice(_NAMES)
    if k == 4:
        return r.choice([r.random() * 10.0 ** r.randint(-5, 300), float("inf"), float("-inf"), float("nan")])
    if k == 5:
        return [random_json(r, depth + 1) for _ in range(r.randrange(4))]
    if k == 6:
        return {r.choice(_NAMES): random_json(r, depth + 1) for _ in range(r.randrange(4))}
    if k == 7:
        return [r.choice([0, 1, 2, 3, 7, 10**r.randint(1, 20)]) for _ in range(r.randrange(1, 4))]
    return json.loads(r.choice(["{}", "[]", '"a"', "1", "null", '{"zarr_format": 3}', '{"zarr_format": 2}']))


def _locations(doc: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _locations(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _locations(v, (*prefix, i))


def _at(doc: Any, loc: tuple) -> Any:
    for part in loc:
        doc = doc[part]
    return doc


def mutate_json(r: random.Random, doc: Any) -> Any:
    """Apply 1-3 mutations: delete a field, nudge a number (0, -1, huge, off by one),
    shorten or grow a list, add a field, or replace any value with random JSON."""
    for _ in range(r.randint(1, 3)):
        loc = r.choice(list(_locations(doc)))
        if not loc:
            if r.random() < 0.1:
                doc = random_json(r)
            elif isinstance(doc, dict):
                doc[r.choice(_NAMES)] = random_json(r)
            continue
        parent, here = _at(doc, loc[:-1]), loc[-1]
        value = parent[here]
        op = r.randrange(6)
        if op == 0:
            del parent[here]
        elif op == 1 and type(value) is int:
            parent[here] = r.choice([0, -1, value + 1, value - 1, value * 2 ** r.randint(1, 64), 10**18,
                                     2**63 - 1, 2**64, -(2**63)])
        elif op == 2 and isinstance(value, list) and value:
            if r.random() < 0.5:
                value.pop(r.randrange(len(value)))
            else:
                value.insert(r.randrange(len(value) + 1), r.choice(value))
        elif op == 3 and isinstance(value, dict):
            value[r.choice(_NAMES)] = random_json(r)
        else:
            parent[here] = random_json(r)
    return doc


def mutate_bytes(r: random.Random, data: bytes) -> bytes:
    """Flip bits, truncate, extend, overwrite 8 bytes with a random (often huge) integer,
    or replace the value with random bytes."""
    b = bytearray(data)
    op = r.randrange(6)
    if op == 0 and b:
        for _ in range(r.randint(1, 4)):
            i = r.randrange(len(b))
            b[i] ^= 1 << r.randrange(8)
    elif op == 1:
        del b[r.randrange(len(b) + 1):]
    elif op == 2:
        b += r.randbytes(r.randrange(1, 64))
    elif op == 3 and b:
        i = r.randrange(len(b))
        b[i:i + 8] = r.choice([2**64 - 1, 2**63, 2**32, 10**10, r.getrandbits(64)]).to_bytes(8, "little")
    elif op == 4 and b:
        i = r.randrange(len(b))
        b[i] = r.randrange(256)
    else:
        b = bytearray(r.randbytes(r.randrange(300)))
    return bytes(b)


def metadata_keys(files: Files) -> list[str]:
    return [k for k in files if k.rsplit("/", 1)[-1] in METADATA_NAMES]


def mutate_document(r: random.Random, files: Files, key: str) -> None:
    """Mutate ``files[key]`` as JSON (bytes when it does not parse or one time in ten)."""
    try:
        doc = json.loads(files[key])
    except ValueError:
        doc = None
    if doc is None or r.random() < 0.1:
        files[key] = mutate_bytes(r, files[key])
    else:
        files[key] = json.dumps(mutate_json(r, doc)).encode()


# ---------------------------------------------------------------------------------------
# exercising a store
# ---------------------------------------------------------------------------------------
def as_store(files: Files) -> MemoryStore:
    store = MemoryStore()
    store.set_many(files)
    return store


def exercise(files: Files, r: random.Random, path: str = "") -> list[np.ndarray]:
    """Open the node at ``path`` and read every array in it (the whole array when small,
    else its first storage unit and last element; a result that cannot fit in memory must
    say so), write one element back one time in four; returns what was read whole."""
    node = zarrdask.open(as_store(files), path=path, mode="r+")
    arrays = [node] if isinstance(node, zarrdask.Array) else [a for _, a in node.arrays()]
    if isinstance(node, zarrdask.Group):
        node.tree()
        for name, _ in node.groups():
            exercise(files, r, f"{path}/{name}".strip("/"))
    return [_exercise_array(a, r) for a in arrays]


def _exercise_array(a: zarrdask.Array, r: random.Random) -> np.ndarray | None:
    from zarrdask.runtime.output import MEMORY_BYTES

    units = math.prod(axis.count for axis in a.unit_grid)
    whole = None
    if a.nbytes <= MAX_READ_BYTES and units <= MAX_READ_UNITS:
        whole = np.asarray(a[...])
        assert whole.shape == a.shape and whole.dtype == a.dtype
    else:
        if a.size:
            first = tuple(slice(0, min(n, axis.bounds(0)[1], 64)) for n, axis in zip(a.shape, a.unit_grid))
            a[first]
            a[tuple(n - 1 for n in a.shape)]
        if a.nbytes > MEMORY_BYTES:
            try:
                a[...]
            except TooLargeError as exc:
                assert str(a.nbytes) in str(exc)
            else:
                raise AssertionError(f"reading {a.nbytes} bytes did not fail")
    if r.random() < 0.25 and a.size:
        corner = (0,) * a.ndim
        a[corner] = a[corner]
    return whole


def outcome(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, or the ZarrdaskError it raised (anything else propagates: a finding)."""
    try:
        return fn(*args)
    except ZarrdaskError as exc:
        return exc


def scaled(share: float) -> int:
    """This test's share of ``ZARRDASK_FUZZ_EXAMPLES`` (default 10,000; the shares add up to 1)."""
    return max(1, round(int(os.environ.get("ZARRDASK_FUZZ_EXAMPLES", "10000")) * share))
