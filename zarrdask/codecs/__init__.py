"""Codecs: one module per codec, registered by name; the pipeline that chains them."""

from . import (  # noqa: F401
    bitround, blosc, bytes, cast_value, conditional, crc32c, gzip, n5_default, numcodecs_adapter, packbits, reshape,
    scale_offset, sharding, transpose, vlen, zfp, zstd,
)
from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkSpec, Codec
from .pipeline import CodecPipeline, build_codecs
from .registry import get_codec_class, register_codec, registered_codecs

__all__ = [
    "ArrayArrayCodec", "ArrayBytesCodec", "BytesBytesCodec", "ChunkSpec", "Codec", "CodecPipeline",
    "build_codecs", "get_codec_class", "register_codec", "registered_codecs",
]
