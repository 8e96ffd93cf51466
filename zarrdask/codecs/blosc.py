"""``blosc`` (bytes -> bytes): Blosc meta-compression (numcodecs' bundled c-blosc).

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/blosc/index.html
Example: ``{"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5,
"shuffle": "shuffle", "typesize": 4, "blocksize": 0}}``. ``typesize`` is taken from
the data type when a new array is created without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from numcodecs import blosc as _blosc

from ..storage.base import Buffer
from . import decompress
from ._config import check_keys, config_error, get_choice, get_int
from .base import BytesBytesCodec, ChunkSpec, Loc
from .registry import register_codec

CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
_SHUFFLE_NAMES = {v: k for k, v in SHUFFLES.items()}


@register_codec
class BloscCodec(BytesBytesCodec):
    name = "blosc"
    numcodecs_ids = ("blosc",)

    @classmethod
    def from_numcodecs(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """numcodecs' shuffle is a number (an unknown one reads as ``shuffle``); no typesize."""
        return {"name": "blosc", "configuration": {
            "cname": config.get("cname", "lz4"), "clevel": config.get("clevel", 5),
            "shuffle": _SHUFFLE_NAMES.get(config.get("shuffle", 1), "shuffle"),
            "blocksize": config.get("blocksize", 0)}}

    @classmethod
    def to_numcodecs(cls, configuration: Mapping[str, Any]) -> dict[str, Any]:
        """A shuffle name becomes numcodecs' number, and ``typesize`` goes (numcodecs takes it
        from the data)."""
        config = dict(configuration)
        if isinstance(config.get("shuffle"), str):
            config["shuffle"] = SHUFFLES[config["shuffle"]]
            config.pop("typesize", None)
        return {"id": "blosc", **config}

    def __init__(self, cname: str = "zstd", clevel: int = 5, shuffle: str | None = "shuffle",
                 typesize: int | None = None, blocksize: int = 0) -> None:
        self.cname, self.clevel, self.shuffle = cname, clevel, shuffle
        self.typesize, self.blocksize = typesize, blocksize

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> BloscCodec:
        check_keys(configuration, {"cname", "clevel", "shuffle", "typesize", "blocksize"}, loc)
        cname = get_choice(configuration, "cname", CNAMES, loc)
        # left out, the shuffle follows the data type as in zarr-python (see validate)
        shuffle = get_choice(configuration, "shuffle", tuple(SHUFFLES), loc) if "shuffle" in configuration else None
        typesize = configuration.get("typesize")
        if typesize is not None:  # (c-blosc's limits: a typesize of at most 255, a block below 2 GiB)
            typesize = get_int(configuration, "typesize", loc, low=1, high=255)
        return cls(cname, get_int(configuration, "clevel", loc, low=0, high=9), shuffle, typesize,
                   get_int(configuration, "blocksize", loc, default=0, low=0, high=2**31 - 1))

    def to_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {"cname": self.cname, "clevel": self.clevel}
        if self.shuffle is not None:
            config["shuffle"] = self.shuffle
        if self.typesize is not None:
            config["typesize"] = self.typesize
        config["blocksize"] = self.blocksize
        return {"name": "blosc", "configuration": config}

    def validate(self, spec: ChunkSpec, loc: Loc) -> BloscCodec:
        if self.typesize is None or self.shuffle is None:
            itemsize = spec.dtype.dtype.itemsize if spec.dtype.dtype.kind != "O" else 1
            shuffle = self.shuffle or ("bitshuffle" if itemsize == 1 else "shuffle")
            return BloscCodec(self.cname, self.clevel, shuffle, self.typesize or itemsize,
                              self.blocksize).validate(spec, loc)
        if self.cname not in _blosc.list_compressors():
            raise config_error((*loc, "configuration", "cname"), f"{self.cname!r} is not compiled into this blosc")
        return self

    def encode(self, data: Buffer) -> bytes:
        encoded: bytes = _blosc.compress(data, self.cname.encode(), self.clevel, SHUFFLES[str(self.shuffle)],
                                         self.blocksize, typesize=self.typesize or 1)
        return encoded

    def decode(self, data: Buffer, expected: int | None) -> Buffer:
        return decompress.blosc(data, expected)

    def decode_into(self, data: Sequence[Buffer], outs: Sequence[memoryview]) -> None:
        decompress.blosc_into(data, outs)
