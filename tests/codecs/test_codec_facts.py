"""What each codec class says about itself: whether its bytes carry a checksum its decoder
checks, and its numcodecs twin (the ids, the config translation both ways).

The answers must be those of the tables the library held before the codecs answered
(copied below as the oracle, here only), over every registered codec and numcodecs id."""

from __future__ import annotations

import pkgutil
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numcodecs import registry as numcodecs_registry
from numcodecs.checksum32 import Checksum32

import zarrdask
from zarrdask.codecs.base import Codec
from zarrdask.codecs.blosc import BloscCodec
from zarrdask.codecs.bytes import BytesCodec
from zarrdask.codecs.crc32c import Crc32cCodec
from zarrdask.codecs.gzip import GzipCodec
from zarrdask.codecs.registry import class_for, get_codec_class, numcodecs_twin, registered_codecs
from zarrdask.codecs.v2 import V2Compressor, V2Serializer
from zarrdask.codecs.zstd import ZstdCodec
from zarrdask.nodes.codec_input import codec_json_v2, codec_json_v3
from zarrdask.nodes.units.checksums import carries_checksum
from zarrdask.storage.memory import MemoryStore

# --- the oracle: the tables as they were in nodes/units/checksums.py and nodes/codec_input.py

_SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
_SHUFFLE_NAMES = {v: k for k, v in _SHUFFLES.items()}
_ALWAYS = {"crc32c", "gzip", "zlib", "bz2", "lzma", "crc32", "adler32", "fletcher32", "jenkins_lookup3"}


def _old_checked(name: str, config: Mapping[str, Any]) -> bool:
    name = name.removeprefix("numcodecs.")
    if name == "zstd":
        return bool(config.get("checksum"))
    if name == "lzma":
        return bool(config.get("format", 1) != 3)
    return name in _ALWAYS


def old_carries_checksum(codecs: Sequence[Any]) -> bool:
    for codec in codecs:
        if isinstance(codec, str):
            if _old_checked(codec, {}):
                return True
            continue
        config = codec.get("configuration") or {}
        if codec["name"] in ("v2 filters", "v2 compressor"):
            parts = config.get("filters") or () if codec["name"] == "v2 filters" else [config]
            if any(_old_checked(p["id"], p) for p in parts):
                return True
            continue
        if codec["name"] == "sharding_indexed":
            if old_carries_checksum(config.get("codecs", ())):
                return True
        elif _old_checked(codec["name"], config):
            return True
    return False


def old_numcodecs_to_v3(obj: Mapping[str, Any]) -> dict[str, Any]:
    config = {k: v for k, v in obj.items() if k != "id"}
    codec_id = obj["id"]
    if codec_id == "zstd":
        return {"name": "zstd", "configuration": {"level": config.get("level", 0),
                                                    "checksum": config.get("checksum", False)}}
    if codec_id == "gzip":
        return {"name": "gzip", "configuration": {"level": config.get("level", 5)}}
    if codec_id == "blosc":
        return {"name": "blosc", "configuration": {
            "cname": config.get("cname", "lz4"), "clevel": config.get("clevel", 5),
            "shuffle": _SHUFFLE_NAMES.get(config.get("shuffle", 1), "shuffle"),
            "blocksize": config.get("blocksize", 0)}}
    return {"name": f"numcodecs.{codec_id}", "configuration": dict(config)}


def old_v3_to_v2(obj: Mapping[str, Any]) -> dict[str, Any]:
    name, config = obj["name"], dict(obj.get("configuration") or {})
    if name == "blosc" and isinstance(config.get("shuffle"), str):
        config["shuffle"] = _SHUFFLES[config["shuffle"]]
        config.pop("typesize", None)
    return {"id": name.removeprefix("numcodecs."), **config}


# --- what is enumerated: every registered name, every numcodecs id, with and without prefix

numcodecs_registry.run_entrypoints()
IDS = sorted({*numcodecs_registry.codec_registry, "nope"})
#: the codecs registered when the tables went (the oracle knows only these: a codec added
#: since answers for itself, checked by the tests of the members below)
REGISTERED_THEN = (
    "bitround", "blosc", "bytes", "cast_value", "conditional", "crc32c", "endian", "gzip", "n5_default",
    "numcodecs.adler32", "numcodecs.astype", "numcodecs.bitround", "numcodecs.blosc", "numcodecs.bz2",
    "numcodecs.crc32", "numcodecs.delta", "numcodecs.fixedscaleoffset", "numcodecs.fletcher32",
    "numcodecs.gzip", "numcodecs.jenkins_lookup3", "numcodecs.lz4", "numcodecs.lzma", "numcodecs.packbits",
    "numcodecs.quantize", "numcodecs.shuffle", "numcodecs.zlib", "numcodecs.zstd", "packbits", "reshape",
    "scale_offset", "sharding_indexed", "transpose", "vlen-bytes", "vlen-utf8", "zfp", "zstd",
)
NAMES = sorted({*REGISTERED_THEN, *IDS, *(f"numcodecs.{i}" for i in IDS)})
CONFIGS: list[dict[str, Any]] = [
    {}, {"checksum": True}, {"checksum": False}, {"level": 3, "checksum": 1}, {"format": 1}, {"format": 3},
    {"format": 2, "check": 0}, {"shuffle": 0}, {"shuffle": 2, "typesize": 4}, {"shuffle": 9}, {"shuffle": "bitshuffle"},
    {"shuffle": "noshuffle", "typesize": 2, "cname": "zstd"}, {"cname": "zlib", "clevel": 1, "blocksize": 64},
]
CLASSES = sorted({get_codec_class(n) for n in registered_codecs()} | {V2Serializer, V2Compressor},
                 key=lambda c: c.name)


def _outcome(fn: Any, *args: Any) -> Any:
    """The result, or the type of what was raised (both sides must fail alike)."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - compared, not hidden
        return type(exc)


def test_carries_checksum_over_every_name_and_config() -> None:
    for name in NAMES:
        assert carries_checksum([name]) == old_carries_checksum([name]), name
        for config in CONFIGS:
            chain = [{"name": name, "configuration": config}]
            assert carries_checksum(chain) == old_carries_checksum(chain), chain
            sharded = [{"name": "sharding_indexed", "configuration": {"codecs": chain}}]
            assert carries_checksum(sharded) == old_carries_checksum(sharded), sharded


def test_carries_checksum_over_every_numcodecs_id_in_v2() -> None:
    for codec_id in IDS:
        for config in CONFIGS:
            part = {"id": codec_id, **config}
            for chain in ([{"name": "v2 filters", "configuration": {"filters": [part]}}],
                          [{"name": "v2 filters", "configuration": {"filters": []}},
                           {"name": "v2 compressor", "configuration": part}]):
                assert carries_checksum(chain) == old_carries_checksum(chain), chain


def test_codec_json_over_every_numcodecs_id_and_name() -> None:
    for codec_id in IDS:
        for config in CONFIGS:
            given_ = {"id": codec_id, **config}
            assert codec_json_v3(given_, ("codecs", 0)) == old_numcodecs_to_v3(given_), given_
    for name in NAMES:
        for config in CONFIGS:
            given_ = {"name": name, "configuration": config}
            assert _outcome(codec_json_v2, given_, ("compressors", 0)) == _outcome(old_v3_to_v2, given_), given_


def test_codec_json_of_codec_objects() -> None:
    for codec in (ZstdCodec(3, True), GzipCodec(), Crc32cCodec(), BytesCodec(),
                  BloscCodec("lz4", 5, "bitshuffle", 4, 0), BloscCodec("zstd", 1, None, None, 0)):
        assert codec_json_v3(codec, ("codecs", 0)) == codec.to_json()
        assert codec_json_v2(codec, ("compressors", 0)) == old_v3_to_v2(codec.to_json())
    for codec_id in ("zstd", "gzip", "blosc", "zlib", "lzma", "crc32", "delta"):
        obj = numcodecs.get_codec({"id": codec_id, **({"dtype": "<i4"} if codec_id == "delta" else {})})
        assert codec_json_v3(obj, ("codecs", 0)) == old_numcodecs_to_v3(obj.get_config())


_VALUES = st.one_of(st.integers(-2, 10), st.booleans(), st.none(), st.sampled_from([*_SHUFFLES, "lz4", "x"]))
_SETTINGS = st.dictionaries(st.sampled_from(["level", "checksum", "format", "shuffle", "typesize", "cname",
                                             "clevel", "blocksize", "check"]), _VALUES, max_size=4)
_PART = st.builds(lambda i, c: {"id": i, **c}, st.sampled_from(IDS), _SETTINGS)
_V3 = st.builds(lambda n, c: {"name": n, "configuration": c}, st.sampled_from(NAMES), _SETTINGS)
_V2 = st.one_of(st.builds(lambda fs: {"name": "v2 filters", "configuration": {"filters": fs}}, st.lists(_PART, max_size=3)),
                st.builds(lambda p: {"name": "v2 compressor", "configuration": p}, _PART))
_CHAINS = st.recursive(
    st.lists(st.one_of(st.sampled_from(NAMES), _V3, _V2), max_size=3),
    lambda inner: st.lists(st.builds(lambda c: {"name": "sharding_indexed", "configuration": {"codecs": c}}, inner),
                           min_size=1, max_size=2),
    max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(_CHAINS)
def test_carries_checksum_of_any_chain(chain: list[Any]) -> None:
    assert carries_checksum(chain) == old_carries_checksum(chain)


@settings(max_examples=300, deadline=None)
@given(_PART, _V3)
def test_codec_json_of_any_config(part: dict[str, Any], v3: dict[str, Any]) -> None:
    assert _outcome(codec_json_v3, part, ("codecs", 0)) == _outcome(old_numcodecs_to_v3, part)
    assert _outcome(codec_json_v2, v3, ("compressors", 0)) == _outcome(old_v3_to_v2, v3)


# --- each class answers, and none is left on the default where its twin keeps a checksum


@pytest.mark.parametrize("cls", CLASSES, ids=[c.name for c in CLASSES])
def test_every_codec_class_answers(cls: type[Codec]) -> None:
    assert isinstance(cls.numcodecs_ids, tuple) and all(isinstance(i, str) for i in cls.numcodecs_ids)
    assert isinstance(cls.checksummed({}), bool)
    v3 = cls.from_numcodecs({})
    assert v3 is None or v3["name"] == cls.name
    if cls.numcodecs_ids:
        assert cls.to_numcodecs({})["id"] == cls.numcodecs_ids[0]
    twins = {*cls.numcodecs_ids, cls.name.removeprefix("numcodecs.")}
    if any(_old_checked(i, c) for i in twins for c in CONFIGS):
        assert cls.checksummed.__func__ is not Codec.checksummed.__func__, f"{cls.name} keeps the default"
        assert any(cls.checksummed(c) for c in CONFIGS)


@pytest.mark.parametrize("codec_id", IDS)
def test_every_numcodecs_id_is_answered_as_before(codec_id: str) -> None:
    """A numcodecs id has at most one twin with a v3 name, and a checksum codec of numcodecs
    (a Checksum32) is answered as checksummed."""
    named = {c for c in CLASSES if codec_id in c.numcodecs_ids and not c.name.startswith("numcodecs.")}
    assert len(named) <= 1
    twin = numcodecs_twin(codec_id)
    for config in CONFIGS:
        assert (twin is not None and twin.checksummed(config)) == _old_checked(codec_id, config)
    numcodecs_class = numcodecs_registry.codec_registry.get(codec_id)
    if numcodecs_class is not None and issubclass(numcodecs_class, Checksum32):
        assert twin is not None and twin.checksummed({})


def test_registration_needs_no_list() -> None:
    """Importing the package imports each of its public modules, and every codec class they
    define with a name is registered (or, the v2 adapters, registered as unlisted)."""
    import zarrdask.codecs as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        module = sys.modules[f"zarrdask.codecs.{info.name}"]  # (imported with the package)
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Codec) and obj.__module__ == module.__name__ \
                    and "name" in vars(obj):
                assert class_for(obj.name) is obj, obj


def test_a_v2_lzma_compressor_is_checksummed() -> None:
    """numcodecs' LZMA config has its own ``filters`` (None here): they are not v2 filters."""
    a = zarrdask.create_array(MemoryStore(), shape=(10,), dtype="int16", chunks=(5,), zarr_format=2,
                              compressors=[numcodecs.LZMA()])
    a[...] = np.arange(10)
    assert a.units.carries_checksum
    raw = zarrdask.create_array(MemoryStore(), shape=(10,), dtype="int16", chunks=(5,), zarr_format=2,
                                compressors=[numcodecs.LZMA(format=3, filters=[{"id": 3, "dist": 2}, {"id": 33}])])
    assert not raw.units.carries_checksum


def test_nested_checksums_are_answered_where_every_chunk_keeps_them() -> None:
    """conditional: a nested crc32c (a fixed size: applied to every chunk) is a checksum;
    gzip's CRC is not (a chunk it would not shrink skips it). n5_default: N5's compression's
    checksum (gzip's CRC-32, zlib's Adler-32); raw has none."""
    def conditional(*codecs: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"name": "conditional", "configuration": {"codecs": list(codecs)}}]

    assert carries_checksum(conditional({"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}))
    assert not carries_checksum(conditional({"name": "gzip", "configuration": {"level": 1}}))
    assert not carries_checksum(conditional({"name": "nope"}))
    n5 = [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}]
    assert carries_checksum([{"name": "n5_default", "configuration": {"codecs": [*n5, {"name": "gzip"}]}}])
    assert carries_checksum([{"name": "n5_default", "configuration": {"codecs": [*n5, {"name": "numcodecs.zlib"}]}}])
    assert not carries_checksum([{"name": "n5_default", "configuration": {"codecs": n5}}])
