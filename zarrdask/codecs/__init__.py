"""Codecs: one module per codec, registered by name; the pipeline that chains them.

Every public module of the package is imported here, so each codec module registers its
codecs (``@register_codec``) without a list to keep: a new codec is a new module.
"""

from importlib import import_module
from pkgutil import iter_modules

from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkSpec, Codec
from .pipeline import CodecPipeline, build_codecs
from .registry import get_codec_class, register_codec, registered_codecs

for _module in iter_modules(__path__):
    if not _module.name.startswith("_"):
        import_module(f"{__name__}.{_module.name}")

__all__ = [
    "ArrayArrayCodec", "ArrayBytesCodec", "BytesBytesCodec", "ChunkSpec", "Codec", "CodecPipeline",
    "build_codecs", "get_codec_class", "register_codec", "registered_codecs",
]
