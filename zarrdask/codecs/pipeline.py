"""The codec pipeline: validate a v3 codec chain and encode/decode one chunk with it.

The chain must be ``array->array``* then exactly one ``array->bytes`` then
``bytes->bytes``*. Building the pipeline resolves the chunk representation forward
through the chain (transpose permutes the shape, filters may change the dtype), so
each codec knows what it sees; an invalid chain is rejected with the codec's JSON path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import CodecError, MetadataError, Problem, UnknownExtensionError, warn
from ..metadata.extension import NamedConfig
from ..storage.base import Buffer
from .base import (ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkSpec, Codec, Loc, batch_item,
                   check_decoded_size, decode_each, slot_views)
from .protocol import ChunkPipeline
from .registry import get_codec_class, unknown_codec

__all__ = ["PREFIX_SKIP_BYTES", "CodecPipeline", "build_codecs", "codec_chain"]

#: a chunk is decoded only up to the values a read wants when that skips at least this
#: much: zstd stops after the block holding the last byte asked for, and its blocks hold
#: up to 128 KiB, so a shorter tail is often decoded anyway
PREFIX_SKIP_BYTES = 128 << 10

#: the sharding codec's name (``sharding.py`` builds pipelines: it is not imported here)
_SHARDING = "sharding_indexed"


def build_codecs(configs: Sequence[NamedConfig], loc: Loc = ("codecs",)) -> list[Codec]:
    """Instantiate codecs from their JSON; unknown must-understand codecs are an error."""
    codecs: list[Codec] = []
    for i, named in enumerate(configs):
        cls = get_codec_class(named.name)
        if cls is None:
            if not named.must_understand:
                warn(f"ignoring unknown codec {named.name!r} marked must_understand: false")
                continue
            raise UnknownExtensionError([unknown_codec(named.name, (*loc, i, "name"))])
        try:
            codecs.append(cls.from_config(named.configuration, (*loc, i)))
        except CodecError as exc:
            raise MetadataError([Problem((*loc, i), str(exc))]) from None
    return codecs


class CodecPipeline:
    """A validated codec chain bound to one chunk spec (the decoded representation); a
    :class:`~zarrdask.codecs.protocol.ChunkPipeline`."""

    def __init__(self, codecs: Sequence[Codec], spec: ChunkSpec, loc: Loc = ("codecs",)) -> None:
        array_array: list[ArrayArrayCodec] = []
        array_bytes: ArrayBytesCodec | None = None
        bytes_bytes: list[BytesBytesCodec] = []
        specs: list[ChunkSpec] = []
        current = spec
        for i, codec in enumerate(codecs):
            where = (*loc, i)
            kind = codec.kind
            if kind == "array->array":
                if array_bytes is not None:
                    raise _chain_error(where, codec, "an array->array codec must come before the array->bytes codec")
            elif kind == "array->bytes":
                if array_bytes is not None:
                    raise _chain_error(where, codec, "only one array->bytes codec is allowed")
            elif array_bytes is None:
                raise _chain_error(where, codec, "a bytes->bytes codec must come after an array->bytes codec")
            try:
                codec = codec.validate(current, where)
            except CodecError as exc:
                raise MetadataError([Problem(where, str(exc))]) from None
            if kind == "array->array":
                array_array.append(codec)  # type: ignore[arg-type]
                specs.append(current)
                current = codec.resolve(current)
            elif kind == "array->bytes":
                array_bytes = codec  # type: ignore[assignment]
                specs.append(current)
            else:
                bytes_bytes.append(codec)  # type: ignore[arg-type]
        if array_bytes is None:
            raise MetadataError([Problem(loc, "the codec chain needs exactly one array->bytes codec (e.g. 'bytes')")])
        self.spec = spec
        self.array_array = tuple(array_array)
        self.array_bytes = array_bytes
        self.bytes_bytes = tuple(bytes_bytes)
        self._aa_specs = tuple(specs[: len(array_array)])
        self.bytes_spec = current
        # the exact size each bytes->bytes codec decodes to, where the chain fixes it
        sizes = [array_bytes.encoded_size(current)]
        for codec in bytes_bytes[:-1]:
            sizes.append(None if sizes[-1] is None else codec.encoded_size(sizes[-1]))
        self._decoded_sizes = tuple(sizes[: len(bytes_bytes)])
        #: decode_into writes straight into the chunk's memory (no copy): the codecs before the
        #: first bytes->bytes codec only view its bytes as the array
        self._views_bytes = not array_array and array_bytes.reinterprets(current)
        self.decodes_into = bool(bytes_bytes) and self._views_bytes
        #: decode_into can stop early: the chunk's values in C order are the bytes of the one
        #: bytes->bytes codec, which decodes a prefix alone (zstd, block by block), and a
        #: chunk is large enough for a prefix to skip something
        self.decodes_prefix = (self.decodes_into and len(bytes_bytes) == 1 and bytes_bytes[0].decodes_prefix
                               and current.nbytes > PREFIX_SKIP_BYTES)
        self._sharding = array_bytes if array_bytes.name == _SHARDING else None

    @property
    def sharding(self) -> ArrayBytesCodec | None:
        """The sharding codec when the chain stores shards (its array->bytes codec), else None."""
        return self._sharding

    @property
    def has_bytes_stage(self) -> bool:
        """True when bytes->bytes codecs wrap the serialized chunk (or shard)."""
        return bool(self.bytes_bytes)

    @property
    def axis_permutation(self) -> tuple[int, ...] | None:
        """The array->array codecs as one axis permutation (``range(ndim)`` when there are
        none): the array->bytes codec's axis ``k`` is the decoded chunk's axis ``perm[k]``.
        None when one of them does more than permute axes."""
        perm = tuple(range(len(self.spec.shape)))
        for codec in self.array_array:
            step = codec.axis_permutation(len(perm))
            if step is None:
                return None
            perm = tuple(perm[i] for i in step)
        return perm

    @classmethod
    def from_metadata(cls, configs: Sequence[NamedConfig], spec: ChunkSpec, loc: Loc = ("codecs",)) -> CodecPipeline:
        return cls(build_codecs(configs, loc), spec, loc)

    def without_checksums(self) -> CodecPipeline:
        """The same chain reading without verifying checksums (crc32c payloads are taken as
        they are; their length is still checked)."""
        return CodecPipeline([c.without_checksums() for c in self.codecs], self.spec)

    @property
    def codecs(self) -> tuple[Codec, ...]:
        return (*self.array_array, self.array_bytes, *self.bytes_bytes)

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.codecs]

    def decode(self, data: Buffer) -> np.ndarray[Any, Any]:
        """Decode one stored chunk to an array of ``spec.shape`` (may be read-only)."""
        return self._decode_staged(self.decode_bytes_stage(data))

    def _decode_staged(self, staged: Buffer) -> np.ndarray[Any, Any]:
        array = self.array_bytes.decode(staged, self.bytes_spec)
        for codec, spec in zip(reversed(self.array_array), reversed(self._aa_specs)):
            array = codec.decode(array, spec)
        return array

    def decode_to_bytes(self, data: Buffer) -> Buffer:
        """One stored chunk's values as bytes, in C order and this machine's byte order: the
        bytes stage's output itself where the chain only views it as the array (no array is
        made: a shard index, read once per shard and copied into its own table), else the
        decoded array's memory."""
        staged = self.decode_bytes_stage(data)
        if self._views_bytes and memoryview(staged).nbytes == self.bytes_spec.nbytes:
            return staged
        return np.ascontiguousarray(self._decode_staged(staged)).data.cast("B")

    def decode_into(self, data: Sequence[Buffer], out: np.ndarray[Any, Any],
                    slots: Sequence[int] | None = None, stops: Sequence[int | None] | None = None) -> None:
        """Decode stored chunks into the stack ``out`` (C-contiguous, ``(n, *spec.shape)`` of
        the spec's data type): ``data[i]`` into ``out[slots[i]]`` (default: in order).
        Straight into its memory when the chain allows (no array->array codec, an
        array->bytes codec that only views the bytes, a first bytes->bytes codec that can
        write into a buffer, as zstd does), else decoded and copied. One call per batch, so
        a shard's many small chunks cost few Python steps each; a failure names its chunk
        as the error's ``item`` (a position in ``data``). ``stops[i]``, when given and not
        None: only the first ``stops[i]`` values (C order) of chunk ``i`` are wanted, and
        where the chain can stop early (:attr:`decodes_prefix`) and that skips at least
        :data:`PREFIX_SKIP_BYTES`, the rest of its slot is left as it was."""
        slots = range(len(data)) if slots is None else slots
        if stops is not None and self.decodes_prefix:
            whole = self._decode_prefixes(data, out, slots, stops)
            if len(whole) < len(data):
                try:
                    self.decode_into([data[i] for i in whole], out, [slots[i] for i in whole])
                except CodecError as exc:
                    raise exc if exc.item is None else exc.at(whole[exc.item])
                return
        if not self.decodes_into:
            decode_each(self.decode, data, out, slots)
            return
        if len(self.bytes_bytes) > 1:
            data = [batch_item(i, self.decode_bytes_stage, item, 1) for i, item in enumerate(data)]
        self.bytes_bytes[0].decode_into(data, slot_views(out, slots))

    def _decode_prefixes(self, data: Sequence[Buffer], out: np.ndarray[Any, Any], slots: Sequence[int],
                         stops: Sequence[int | None]) -> list[int]:
        """Decode the chunks worth stopping early (see ``decode_into``); the positions of
        the others, to be decoded whole."""
        codec, memory = self.bytes_bytes[0], slot_views(out, slots)
        itemsize = out.dtype.itemsize
        whole = []
        for i, stop in enumerate(stops):
            if (stop is None or memory.size - stop * itemsize < PREFIX_SKIP_BYTES
                    or not batch_item(i, codec.decode_prefix_into, data[i], memory[i][: stop * itemsize],
                                      memory.size)):
                whole.append(i)
        return whole

    def decode_bytes_stage(self, data: Buffer, stop: int = 0) -> Buffer:
        """Undo the bytes->bytes codecs (the last ``stop`` left undone), each held to the
        size the chain fixes (the one size check every bytes->bytes codec goes through; see
        ``decompress.py``)."""
        for codec, size in zip(reversed(self.bytes_bytes[stop:]), reversed(self._decoded_sizes[stop:])):
            data = codec.decode(data, size)
            if size is not None:
                check_decoded_size(codec.name, memoryview(data).nbytes, size)
        return data

    def encode(self, array: np.ndarray[Any, Any]) -> bytes:
        """Encode one chunk (shape ``spec.shape``) to its stored bytes."""
        for codec, spec in zip(self.array_array, self._aa_specs):
            array = codec.encode(array, spec)
        return bytes(self.encode_bytes_stage(self.array_bytes.encode(array, self.bytes_spec)))

    def encode_many(self, arrays: Sequence[np.ndarray[Any, Any]]) -> list[Buffer]:
        """Encode a batch of chunks, each to the bytes :meth:`encode` gives it (read-only
        buffers the result owns, not always ``bytes``), the bytes->bytes codecs applied
        batch by batch (one call each for the whole batch: see ``BytesBytesCodec.encode_many``)."""
        data: list[Buffer] = []
        for array in arrays:
            for codec, spec in zip(self.array_array, self._aa_specs):
                array = codec.encode(array, spec)
            data.append(self.array_bytes.encode(array, self.bytes_spec))
        if not self.bytes_bytes:  # (the serializer may give the chunk's own memory)
            return [bytes(item) for item in data]
        for stage in self.bytes_bytes:
            data = stage.encode_many(data) if data else data
        return data

    def encode_bytes_stage(self, data: Buffer) -> Buffer:
        """Apply the bytes->bytes codecs to a serialized chunk (or an assembled shard)."""
        for codec in self.bytes_bytes:
            data = codec.encode(data)
        return data

    def encoded_size(self) -> int | None:
        """The fixed stored size of a chunk, when every codec's output size is fixed."""
        size = self.array_bytes.encoded_size(self.bytes_spec)
        for codec in self.bytes_bytes:
            if size is None:
                return None
            size = codec.encoded_size(size)
        return size


def codec_chain(pipeline: ChunkPipeline) -> CodecPipeline:
    """The codec chain a pipeline runs, its codecs by kind: every pipeline zarrdask builds
    is a :class:`CodecPipeline` (a v3 chain, or a v2 encoding as codecs), which callers
    holding the :class:`~zarrdask.codecs.protocol.ChunkPipeline` interface reach here."""
    assert isinstance(pipeline, CodecPipeline)
    return pipeline


def _chain_error(loc: Loc, codec: Codec, message: str) -> MetadataError:
    return MetadataError([Problem(loc, f"invalid codec chain at {codec.name!r}: {message}")])
