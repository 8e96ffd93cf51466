"""The codec interface: three kinds of codec and the chunk spec that flows through them.

A codec is built from its JSON configuration (``from_config``), says what it does to
the chunk's representation (``resolve``: shape/dtype after encoding), and encodes or
decodes one chunk synchronously. Compression runs in C (numcodecs, crc32c) and releases
the GIL, so parallelism comes from the caller's threads (or Dask's scheduler).

Kinds, in chain order: ``ArrayArrayCodec``* -> exactly one ``ArrayBytesCodec`` ->
``BytesBytesCodec``*.

A codec class also answers, from a configuration alone, the facts others decide by
(``checksummed``; its numcodecs twin: ``numcodecs_ids``, ``from_numcodecs``,
``to_numcodecs``), so no table elsewhere has to know every codec.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..metadata.dtypes import DataType
from ..errors import CodecError, CorruptChunkError
from ..storage.base import Buffer

__all__ = ["ChunkSpec", "Codec", "ArrayArrayCodec", "ArrayBytesCodec", "BytesBytesCodec", "batch_item", "fill_into",
           "byte_view", "check_decoded_size", "codec_json_of", "decode_each", "Frames", "Slots", "slot_views"]

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class ChunkSpec:
    """The decoded representation of one chunk: its shape, data type and fill value."""

    shape: tuple[int, ...]
    dtype: DataType
    fill_value: Any

    @property
    def nbytes(self) -> int:
        n = self.dtype.dtype.itemsize
        for s in self.shape:
            n *= s
        return n


class Codec(ABC):
    """Common part of every codec: its name, configuration and representation change."""

    name: ClassVar[str]
    #: "array->array", "array->bytes" or "bytes->bytes" (set by the three kinds below;
    #: a plain attribute, cheaper to test than ``isinstance`` on an ABC)
    kind: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    #: ids of the numcodecs codecs that read and write this codec's bytes (its numcodecs
    #: twin): a v2 ``filters``/``compressor`` entry of such an id is judged by this class,
    #: and this codec is written to v2 metadata under the first (:meth:`to_numcodecs`)
    numcodecs_ids: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        """Whether what this codec encodes with ``configuration`` (its v3 configuration or its
        numcodecs twin's: the settings that decide it are spelled alike) carries a checksum its
        decoder checks, so that ``verify`` tells a flipped byte from good data. False here: a
        codec that keeps one says so."""
        return False

    @classmethod
    def from_numcodecs(cls, config: Mapping[str, Any]) -> dict[str, Any] | None:
        """The v3 JSON of a numcodecs twin's ``config`` (without ``id``); None here: the twin
        keeps its name ``numcodecs.<id>``, as zarr-python writes it."""
        return None

    @classmethod
    def to_numcodecs(cls, configuration: Mapping[str, Any]) -> dict[str, Any]:
        """The numcodecs config (with ``id``) of this codec's v3 ``configuration``, for v2
        metadata; only asked of a codec with ``numcodecs_ids``. Here the same settings."""
        return {"id": cls.numcodecs_ids[0], **configuration}

    @classmethod
    @abstractmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> Codec:
        """Build the codec from its JSON configuration; raise CodecError naming ``loc``."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The codec's JSON object (``{"name", "configuration"}``)."""

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        """The chunk spec on the encoded side (array->array codecs override)."""
        return spec

    def validate(self, spec: ChunkSpec, loc: Loc) -> Codec:
        """Check the codec against the chunk it will see; may return a completed copy
        (e.g. blosc filling in ``typesize``)."""
        return self

    def without_checksums(self) -> Codec:
        """This codec reading without verifying checksums (``ArrayOptions.verify_checksums``);
        itself for codecs that keep none."""
        return self

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(repr(self.to_json()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_json().get('configuration', {})})"


class ArrayArrayCodec(Codec):
    kind: ClassVar[str] = "array->array"

    def axis_permutation(self, ndim: int) -> tuple[int, ...] | None:
        """The axis order of the encoded side (``encoded.transpose`` of the decoded chunk),
        when the codec only permutes axes; None when it changes values, dtype or shape.
        A chunk source uses it to address inner chunks of a shard without decoding it whole."""
        return None

    @abstractmethod
    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray: ...

    @abstractmethod
    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        """Decode to the representation described by ``spec`` (the decoded side)."""


class ArrayBytesCodec(Codec):
    kind: ClassVar[str] = "array->bytes"

    @abstractmethod
    def encode(self, array: np.ndarray, spec: ChunkSpec) -> Buffer: ...

    @abstractmethod
    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        """Decode to an array of ``spec.shape`` and ``spec.dtype``."""

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        """The exact encoded size when it is fixed (used for shard indexes), else None."""
        return None

    def reinterprets(self, spec: ChunkSpec) -> bool:
        """True when decoding is only a view of the bytes as ``spec`` (no byte swap, no value
        change): a bytes->bytes codec can then decode straight into the chunk's memory."""
        return False


class BytesBytesCodec(Codec):
    kind: ClassVar[str] = "bytes->bytes"

    @abstractmethod
    def encode(self, data: Buffer) -> bytes: ...

    def encode_many(self, data: Sequence[Buffer]) -> list[Buffer]:
        """Apply the codec to a batch, each item exactly as :meth:`encode` does. Codecs
        that can encode a batch in one call without the GIL override this (zstd: a
        shard's small inner chunks then cost one GIL hand-back per batch, not per chunk);
        here each item is encoded in turn."""
        return [self.encode(item) for item in data]

    @abstractmethod
    def decode(self, data: Buffer, expected: int | None) -> Buffer:
        """Undo the codec. ``expected`` is the exact decoded size when the metadata fixes it
        (None after a variable-size serializer): a codec whose format claims a decoded size
        (a header) or can inflate (a compressor) must not allocate beyond it; the pipeline
        checks the decoded size against it."""

    def decode_into(self, data: Sequence[Buffer], outs: Sequence[memoryview]) -> None:
        """Undo the codec for a batch: ``data[i]`` into ``outs[i]`` (bytes), which each
        result must fill exactly; a failure names its item as the error's ``item``. Codecs
        that can write into a caller's buffer override this (no copy, a few Python steps
        per item); here each item is decoded as usual, checked and copied."""
        for i, (item, out) in enumerate(zip(data, outs)):
            decoded = memoryview(batch_item(i, self.decode, item, out.nbytes)).cast("B")
            batch_item(i, check_decoded_size, self.name, decoded.nbytes, out.nbytes)
            out[:] = decoded

    #: whether :meth:`decode_prefix_into` can ever decode less than a whole item
    decodes_prefix: bool = False

    def decode_prefix_into(self, data: Buffer, out: memoryview, size: int) -> bool:
        """Decode only the first ``len(out)`` bytes of an item that decodes to ``size``
        bytes, into ``out``, each exactly as a whole decode gives it; False (``out``
        untouched) where the format or this item does not allow stopping early."""
        return False

    def encoded_size(self, size: int) -> int | None:
        """The exact encoded size of ``size`` input bytes when fixed (checksums), else None."""
        return None


def codec_json_of(obj: object) -> dict[str, Any] | None:
    """The JSON of a zarrdask codec; None for anything else (a name, a dict, another
    library's codec), so that callers taking any of them need not know the classes."""
    return obj.to_json() if isinstance(obj, Codec) else None


def check_decoded_size(name: str, got: int, expected: int) -> None:
    """The one size check after a bytes->bytes decode: a CorruptChunkError unless it matches."""
    if got != expected:
        raise CorruptChunkError(f"{name}: decoded to {got} bytes, expected {expected} (corrupt chunk)")


def batch_item(i: int, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` for item ``i`` of a batch: a CodecError it raises names the item."""
    try:
        return fn(*args)
    except CodecError as exc:
        raise exc.at(i)


def byte_view(array: np.ndarray) -> memoryview:
    """A C-contiguous array's memory as writable bytes, for codecs that decode into it."""
    return array.reshape(-1).view(np.uint8).data


class Frames(Sequence[memoryview]):
    """Stored items of a batch that lie in one buffer: item ``i`` is
    ``buffer[starts[i]:ends[i]]`` (a shard's inner chunks). To a codec that decodes item
    by item it is a plain sequence; one that can decode items lying back to back in one
    call (zstd) reads the offsets."""

    __slots__ = ("buffer", "starts", "ends")

    def __init__(self, buffer: memoryview, starts: Sequence[int], ends: Sequence[int]) -> None:
        self.buffer, self.starts, self.ends = buffer, starts, ends

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> memoryview:  # type: ignore[override]
        return self.buffer[self.starts[i]: self.ends[i]]

    def __iter__(self) -> Iterator[memoryview]:
        buffer = self.buffer
        return (buffer[s:e] for s, e in zip(self.starts, self.ends))


class Slots(Sequence[memoryview]):
    """The writable bytes of some slots of a C-contiguous stack: item ``i`` is slot
    ``slots[i]``, the ``size`` bytes from ``slots[i] * size`` of ``memory``. A plain
    sequence of buffers to most codecs; zstd reads which slots are neighbours."""

    __slots__ = ("memory", "size", "slots")

    def __init__(self, memory: memoryview, size: int, slots: Sequence[int]) -> None:
        self.memory, self.size, self.slots = memory, size, slots

    def __len__(self) -> int:
        return len(self.slots)

    def __getitem__(self, i: int) -> memoryview:  # type: ignore[override]
        k = self.slots[i]
        return self.memory[k * self.size: (k + 1) * self.size]

    def __iter__(self) -> Iterator[memoryview]:
        memory, size = self.memory, self.size
        return (memory[k * size: (k + 1) * size] for k in self.slots)


def slot_views(stack: np.ndarray, slots: Sequence[int]) -> Slots:
    """The writable bytes of ``stack[k]`` for each ``k`` in ``slots`` (a C-contiguous stack)."""
    memory = byte_view(stack)
    return Slots(memory, memory.nbytes // max(len(stack), 1), slots)


def decode_each(decode: Callable[[Any], np.ndarray], data: Sequence[Any], stack: np.ndarray,
                slots: Sequence[int]) -> None:
    """``stack[slots[i]] = decode(data[i])`` for a batch, a failure naming its item."""
    for i, (item, k) in enumerate(zip(data, slots)):
        stack[k] = batch_item(i, decode, item)


def fill_into(target: np.ndarray, index: Any, fill: Any) -> None:
    """``target[index] = fill``. A list or dict (the item of an array of any objects) is set
    whole and as a copy of its own in every element: one object shared by all would let a
    change to one item read back change every other unwritten item, and the fill value in
    the metadata, and from there what a later write stores."""
    if not isinstance(fill, (list, dict)):
        target[index] = fill
        return
    items = np.empty(np.shape(target[index]), dtype=object)
    flat = items.reshape(-1)  # (a view: the array is new and contiguous)
    for i in range(flat.size):
        flat[i] = copy.deepcopy(fill)
    target[index] = items
