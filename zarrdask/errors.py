"""The exception hierarchy: every error zarrdask raises descends from ``ZarrdaskError``.

Each subclass also inherits the builtin a caller would naturally catch
(``FileNotFoundError`` for a missing node, ``ValueError`` for bad metadata,
``IndexError`` for a bad selection), so ``except FileNotFoundError`` keeps working.
Messages name the key or JSON path, what was expected and what was found. Warnings go
through :func:`warn`, which points them at the user's own line.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import inspect
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ZarrdaskError",
    "InvalidTypeError",
    "MetadataError",
    "Problem",
    "UnknownExtensionError",
    "UnsupportedDataTypeError",
    "NodeNotFoundError",
    "ArrayNotFoundError",
    "GroupNotFoundError",
    "MemberNotFoundError",
    "ContainsNodeError",
    "MissingChunkError",
    "CodecError",
    "CorruptChunkError",
    "ChecksumError",
    "TooLargeError",
    "InvalidKeyError",
    "StoreError",
    "ReadOnlyError",
    "WriteConflictError",
    "UnguardedWriteError",
    "InvalidStoreError",
    "InvalidValueError",
    "SelectionError",
    "BoundsError",
    "ShapeMismatchError",
    "ChunkAlignmentError",
    "InvalidModeError",
    "UnexpectedKeywordError",
    "NodeMismatchError",
    "DatasetError",
    "DatasetTypeError",
    "DatasetKeyError",
]


class ZarrdaskError(Exception):
    """Root of every error raised by zarrdask."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One validation problem: where in the JSON document (``loc``) and what is wrong."""

    loc: tuple[str | int, ...]
    message: str
    #: the problem is a name this implementation does not know (UnknownExtensionError)
    unknown_extension: bool = False

    def __post_init__(self) -> None:
        # An inner layer's error re-raised at an outer ``loc`` arrives as a message that
        # starts with its own, longer path ("codecs/1/configuration/level: ..."): that
        # path becomes ``loc``, so every problem prints its full path exactly once.
        if not self.loc:
            return
        where = _path(self.loc)
        head, sep, rest = self.message.partition(": ")
        while sep and (head == where or head.startswith(f"{where}/")):
            tail = head[len(where) + 1:]
            if tail:
                object.__setattr__(self, "loc", (*self.loc, *(int(s) if s.isdigit() else s for s in tail.split("/"))))
                where = head
            object.__setattr__(self, "message", rest)
            head, sep, rest = rest.partition(": ")

    def __str__(self) -> str:
        return f"{_path(self.loc) or '<document>'}: {self.message}"


def _path(loc: Sequence[str | int]) -> str:
    """A JSON path as printed in messages: ``codecs/1/configuration``."""
    return "/".join(str(part) for part in loc)


class MetadataError(ZarrdaskError, ValueError):
    """Metadata that is malformed or does not follow the spec.

    ``problems`` lists every problem found, each with its JSON path; ``key`` is the
    store key of the document when known.
    """

    def __init__(self, problems: Sequence[Problem] | str, key: str | None = None) -> None:
        if isinstance(problems, str):
            problems = [Problem((), problems)]
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.key = key
        where = f"{key}: " if key else ""
        if len(self.problems) == 1:
            text = f"{where}{self.problems[0]}"
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            text = f"{where}{len(self.problems)} problems:\n{lines}"
        super().__init__(text)


class UnknownExtensionError(MetadataError):
    """An extension (codec, data type, chunk grid, key encoding, storage transformer,
    or top-level field) that this installation does not understand and may not ignore."""

    def __init__(self, problems: Sequence[Problem] | str, key: str | None = None) -> None:
        if isinstance(problems, str):
            problems = [Problem((), problems)]
        # its problems stay marked when they are collected into another error
        super().__init__([dataclasses.replace(p, unknown_extension=True) for p in problems], key)


class UnsupportedDataTypeError(UnknownExtensionError):
    """A data type that is known to the spec ecosystem but not supported here
    (for example ``bfloat16`` without the optional ``ml_dtypes`` package)."""


class NodeNotFoundError(ZarrdaskError, FileNotFoundError):
    """No array or group at the given path."""


class ArrayNotFoundError(NodeNotFoundError):
    """No array at the given path."""


class GroupNotFoundError(NodeNotFoundError):
    """No group at the given path."""


class MemberNotFoundError(NodeNotFoundError, KeyError):
    """A group has no member of that name (also a ``KeyError``, as for a mapping)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ContainsNodeError(ZarrdaskError, FileExistsError):
    """A node already exists where one is being created without ``overwrite``."""


class MissingChunkError(ZarrdaskError, LookupError):
    """A chunk is absent and the array was opened with ``missing_chunks="raise"``."""


class CodecError(ZarrdaskError, ValueError):
    """A codec failed to encode or decode, or its configuration is invalid.

    ``item``: when a batch of chunks was being decoded, the position in the batch of the
    chunk that failed (None otherwise), so the caller can name it."""

    item: int | None = None

    def at(self, item: int) -> CodecError:
        """This error, naming the failed chunk's position in a batch (for ``raise``)."""
        self.item = item
        return self


class CorruptChunkError(CodecError):
    """Stored bytes that cannot be what the metadata says (truncated, bad index, ...)."""


class ChecksumError(CorruptChunkError):
    """A stored checksum (crc32c) does not match its payload."""


class TooLargeError(ZarrdaskError, MemoryError):
    """A read result or a chunk (as the metadata sizes it) that cannot be allocated in memory;
    the message names the size. Also a ``MemoryError``."""


class InvalidKeyError(ZarrdaskError, ValueError):
    """A store key that is malformed or would leave the store root."""


class StoreError(ZarrdaskError, OSError):
    """The store failed to perform an operation."""


class InvalidStoreError(StoreError, ValueError):
    """Something that cannot be opened as a store (unknown protocol, wrong type, ...)."""


class WriteConflictError(StoreError):
    """Other writers changed what a write depended on: a key, through every retry of a
    partial write's read, merge and commit; or the shape ``resize(..., from_shape=)`` was
    to change from."""


class ReadOnlyError(StoreError, PermissionError):
    """A write to a store or array opened read-only."""


class SelectionError(ZarrdaskError, IndexError):
    """A selection that is not valid for this array (wrong type, wrong length, ...)."""


class BoundsError(SelectionError):
    """An index outside the array's bounds."""


class InvalidValueError(ZarrdaskError, ValueError):
    """A value the call cannot take: values the array's data type cannot hold, an argument
    out of its range."""


class InvalidTypeError(ZarrdaskError, TypeError):
    """A value of the wrong type passed to the public API (a number where a path goes, ...)."""


class ShapeMismatchError(ZarrdaskError, ValueError):
    """Shapes (or dtypes, or chunks) disagree with what was expected."""


class ChunkAlignmentError(ZarrdaskError, ValueError):
    """Dask chunks that cannot be written safely in the requested way."""


class UnguardedWriteError(ChunkAlignmentError):
    """A write of part of a chunk or shard into a store that can neither write conditionally
    nor hold a lock on the key: another writer's part could be lost, so nothing was written."""


class DatasetError(ZarrdaskError, ValueError):
    """A Dataset (or its encoding) that cannot be written as asked; mirrors xarray's ValueErrors."""


class DatasetTypeError(ZarrdaskError, TypeError):
    """A Dataset argument of the wrong type; mirrors xarray's TypeErrors."""


class DatasetKeyError(ZarrdaskError, KeyError):
    """A name (variable, dimension) missing from a Dataset; mirrors xarray's KeyErrors."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidModeError(ZarrdaskError, ValueError):
    """An unknown access mode or a bad combination of arguments."""


class UnexpectedKeywordError(ZarrdaskError, TypeError):
    """A keyword the called function does not take (named with the function, and the
    nearest keyword it does take)."""


class NodeMismatchError(ContainsNodeError, TypeError):
    """An existing node that does not match what ``require_*`` asked for (another kind of
    node, shape or dtype); a ``TypeError`` as in zarr-python."""


class StaleConsolidatedMetadataWarning(UserWarning):
    """A group's consolidated metadata disagrees with the store (a member it lacks, or
    one whose own document says otherwise); the store's own documents were used."""


class InterruptedWriteWarning(UserWarning):
    """A node holds the record of a write call that did not finish (killed, interrupted
    or failed): its data may be partly written. Running the same call again completes it;
    ``zarrdask.verify`` lists every such record."""


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first caller outside zarrdask and xarray: the
    user's own line, however deep the call that warns (an open through xarray's engine, a
    resize), so that Python's default filter shows it once per line the user wrote."""
    inside, level = _library_dirs(), 2
    frame = inspect.currentframe()
    frame = frame.f_back if frame is not None else None  # (warn's caller: stacklevel 2)
    while frame is not None and frame.f_back is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """The package directories whose frames :func:`warn` passes over (xarray's found
    without importing it, on the first warning rather than at import)."""
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    spec = importlib.util.find_spec("xarray")
    if spec is not None and spec.submodule_search_locations:
        dirs.extend(spec.submodule_search_locations)
    return tuple(os.path.join(d, "") for d in dirs)
