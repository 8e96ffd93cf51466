"""``conditional`` (bytes -> bytes): nested bytes->bytes codecs applied or skipped per chunk.

Spec: zarr-extensions ``codecs/conditional``. Example: ``{"name": "conditional",
"configuration": {"codecs": [{"name": "zstd", "configuration": {"level": 5}}],
"header_bits": 8}}``. Each stored chunk starts with ``header_bits / 8`` bytes: a bitmask,
bit ``i`` (little-endian bit order: byte ``i // 8``, bit ``i % 8``) set when codec ``i``
was applied. Reading undoes the set codecs in reverse order; a set reserved bit (past
the last codec) is refused, as it names a codec this configuration does not have.

Writing decides per chunk with the registry document's ``compress_if_smaller`` heuristic:
a codec is applied when its output is smaller than its input, and a codec that only adds
a fixed number of bytes (a checksum such as ``crc32c``) is always applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import CorruptChunkError, ZarrdaskError
from ..storage.base import Buffer
from ._config import check_keys, config_error, get_int
from .base import BytesBytesCodec, ChunkSpec, Codec, Loc, check_decoded_size
from .nested import parse_codec_list
from .registry import register_codec


@register_codec
class ConditionalCodec(BytesBytesCodec):
    name = "conditional"

    def __init__(self, codecs: list[BytesBytesCodec], header_bits: int | None = None) -> None:
        self.codecs = list(codecs)
        self.header_bits = header_bits
        bits = header_bits if header_bits is not None else -(-len(codecs) // 8) * 8
        self.header_bytes = bits // 8

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        """When a nested codec keeps a checksum and is applied to every chunk: one that only
        adds a fixed number of bytes (``crc32c``) always is; another (gzip's CRC) may be
        skipped for a chunk it would not shrink, which then carries none."""
        nested = configuration.get("codecs") or ()
        try:
            codecs = parse_codec_list(nested, ("codecs",), allow_empty=True)
        except ZarrdaskError:
            return False
        return any(type(c).checksummed(c.to_json().get("configuration") or {}) and c.encoded_size(1) is not None
                   for c in codecs if isinstance(c, BytesBytesCodec))

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> ConditionalCodec:
        check_keys(configuration, {"codecs", "header_bits"}, loc)
        where = (*loc, "configuration", "codecs")
        codecs = parse_codec_list(configuration.get("codecs"), where, allow_empty=True)
        for i, codec in enumerate(codecs):
            if codec.kind != "bytes->bytes":
                raise config_error((*where, i), f"{codec.name!r} is {codec.kind}; every nested codec must be bytes->bytes")
        bits = None
        if "header_bits" in configuration:
            bits = get_int(configuration, "header_bits", loc, low=len(codecs))
            if bits % 8:
                raise config_error((*loc, "configuration", "header_bits"), f"expected a multiple of 8, got {bits}")
        return cls(codecs, bits)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {"codecs": [c.to_json() for c in self.codecs]}
        if self.header_bits is not None:
            config["header_bits"] = self.header_bits
        return {"name": self.name, "configuration": config}

    def validate(self, spec: ChunkSpec, loc: Loc) -> ConditionalCodec:
        where = (*loc, "configuration", "codecs")
        codecs = [c.validate(spec, (*where, i)) for i, c in enumerate(self.codecs)]
        return ConditionalCodec(codecs, self.header_bits)  # type: ignore[arg-type]

    def without_checksums(self) -> Codec:
        return ConditionalCodec([c.without_checksums() for c in self.codecs], self.header_bits)  # type: ignore[misc]

    def encode(self, data: Buffer) -> bytes:
        mask = 0
        for i, codec in enumerate(self.codecs):
            size = memoryview(data).nbytes
            fixed = codec.encoded_size(size)
            if fixed is not None:
                data, mask = codec.encode(data), mask | 1 << i
                continue
            trial = codec.encode(data)
            if len(trial) < size:
                data, mask = trial, mask | 1 << i
        return mask.to_bytes(self.header_bytes, "little") + bytes(data)

    def decode(self, data: Buffer, expected: int | None) -> Buffer:
        view = memoryview(data).cast("B")
        if len(view) < self.header_bytes:
            raise CorruptChunkError(f"conditional: chunk of {len(view)} bytes is shorter than its "
                                    f"{self.header_bytes}-byte header")
        mask = int.from_bytes(view[: self.header_bytes], "little")
        if mask >> len(self.codecs):
            raise CorruptChunkError(f"conditional: header {mask:#x} sets bits past the {len(self.codecs)} "
                                    "configured codecs (written with codecs this configuration lacks)")
        applied = [c for i, c in enumerate(self.codecs) if mask >> i & 1]
        # the size each applied codec decodes to, where the chain fixes it (as the pipeline does)
        sizes: list[int | None] = [expected]
        for codec in applied[:-1]:
            sizes.append(None if sizes[-1] is None else codec.encoded_size(sizes[-1]))
        out: Buffer = view[self.header_bytes:]
        for codec, size in zip(reversed(applied), reversed(sizes)):
            out = codec.decode(out, size)
            if size is not None:
                check_decoded_size(codec.name, memoryview(out).nbytes, size)
        return out
