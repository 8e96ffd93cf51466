"""Variable ``encoding`` <-> zarrdask array layout, and xarray's fill-value attribute forms.

Read side: an array's storage layout (``chunks``, ``shards``, ``preferred_chunks``,
``compressors``, ``filters``, ``serializer``) as the ``encoding`` dict xarray keeps on
a variable. Write side: a variable's ``encoding`` as ``create_array`` keywords, with
the same validation and chunk rules as ``Dataset.to_zarr``.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numcodecs
import numpy as np
from dask.array.core import normalize_chunks
from xarray import Variable

from zarrdask.compat.xarray import FillValueCoder
from zarrdask.errors import DatasetError, DatasetTypeError
from zarrdask.codecs import get_codec_class
from zarrdask.nodes.array import Array
from zarrdask.errors import ChunkAlignmentError
from zarrdask.keywords import did_you_mean

__all__ = [
    "WRITE_ENCODINGS",
    "decode_fill_value_attr",
    "encode_fill_value_attr",
    "read_encoding",
    "string_kind",
    "write_layout",
]

_SAFE_TO_DROP = frozenset({"source", "original_shape", "preferred_chunks"})
#: Encoding keys ``Dataset.to_zarr`` accepts (v3 adds ``fill_value``).
WRITE_ENCODINGS = frozenset(
    {
        "chunks",
        "shards",
        "compressors",
        "filters",
        "serializer",
        "cache_metadata",
        "write_empty_chunks",
        "chunk_key_encoding",
    }
)
#: Default chunk size for variables that are neither dask-backed nor given ``chunks``.
_AUTO_CHUNK_BYTES = 16 * 2**20


# -- read side ---------------------------------------------------------------------


def string_kind(array: Array) -> type[str] | type[bytes] | None:
    """``str``/``bytes`` for variable-length string/bytes arrays, else ``None``."""
    if array.dtype.kind != "O":
        return None
    meta = array.metadata
    if meta.zarr_format == 3:
        return bytes if meta.data_type.family == "bytes" else str
    ids = {f.get("id") for f in (meta.filters or ())}
    return bytes if "vlen-bytes" in ids else str


def _is_serializer(codec: Any) -> bool:
    cls = get_codec_class(codec if isinstance(codec, str) else codec["name"])
    return cls is not None and cls.kind == "array->bytes"


def _split_v3_codecs(codecs: Sequence[Any]) -> dict[str, Any]:
    """``filters`` / ``serializer`` / ``compressors`` of a (validated) v3 codec chain:
    the codecs before, at and after its one array -> bytes codec."""
    at = next(i for i, codec in enumerate(codecs) if _is_serializer(codec))
    return {
        "filters": tuple(codecs[:at]),
        "serializer": codecs[at],
        "compressors": tuple(codecs[at + 1 :]),
    }


def read_encoding(array: Array, dims: Sequence[str]) -> dict[str, Any]:
    """The storage layout of ``array`` as an xarray variable ``encoding``.

    ``preferred_chunks`` is the shard shape (the chunk shape when unsharded), so
    ``chunks={}`` gives one dask task per shard.
    """
    chunks, shards = array.chunks, array.shards
    encoding: dict[str, Any] = {
        "chunks": chunks,
        "preferred_chunks": dict(zip(dims, shards or chunks, strict=True)),
        "shards": shards,
    }
    meta = array.metadata
    if meta.zarr_format == 3:
        # Only the codec chain of the metadata document (``to_json`` of the whole
        # document costs more than the rest of opening the variable).
        codecs = [codec.to_json() for codec in meta.codecs]
        if shards:
            codecs = codecs[0]["configuration"]["codecs"]
        encoding.update(_split_v3_codecs(codecs))
    else:
        doc = meta.to_json()
        compressor = doc["compressor"]
        encoding["compressors"] = (_numcodecs(compressor),) if compressor is not None else ()
        encoding["filters"] = tuple(_numcodecs(f) for f in doc["filters"] or ())
    return encoding


def _numcodecs(config: dict[str, Any]) -> Any:
    """A v2 codec as the numcodecs object xarray's zarr engine shows, so that passing the
    encoding on (to zarrdask's writer, or to xarray's own, which refuses numcodecs objects
    in a v3 array with its readable TypeError rather than a KeyError) does what it does
    after ``engine="zarr"``; the config itself where numcodecs lacks the id."""
    try:
        return numcodecs.get_codec(dict(config))
    except (ValueError, KeyError, TypeError):
        return config


def decode_fill_value_attr(value: Any, array: Array) -> Any:
    """A ``_FillValue`` attribute as xarray writes it in v3 (base64 floats/bytes)."""
    kind = string_kind(array)
    if kind is str:
        return FillValueCoder.decode(value, "string")
    if kind is bytes or array.dtype.kind == "S":
        return base64.standard_b64decode(value)
    return FillValueCoder.decode(value, array.dtype)


def encode_fill_value_attr(value: Any, dtype: np.dtype) -> Any:
    """The JSON form of a ``_FillValue`` attribute in v3 (inverse of the decoder)."""
    return FillValueCoder.encode(value, dtype)


# -- write side --------------------------------------------------------------------


def _codec_json(codec: Any) -> Any:
    """A codec given as JSON, a zarr-python codec object or a numcodecs codec."""
    if isinstance(codec, str | Mapping):
        return codec
    if hasattr(codec, "to_dict"):
        return codec.to_dict()
    return codec


def _codecs_json(codecs: Any) -> Any:
    if codecs is None or isinstance(codecs, str):
        return codecs
    if isinstance(codecs, Mapping) or not isinstance(codecs, Sequence):
        return [_codec_json(codecs)]
    return [_codec_json(c) for c in codecs]


def _auto_chunks(shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, ...]:
    """A regular chunk shape of about ``_AUTO_CHUNK_BYTES`` for in-memory data."""
    if not shape or math.prod(shape) == 0:
        return tuple(max(1, s) for s in shape)
    itemsize = dtype.itemsize if dtype.kind not in "OT" else 16
    chunks = normalize_chunks(
        "auto", shape, limit=_AUTO_CHUNK_BYTES, dtype=np.dtype(f"V{itemsize}")
    )
    return tuple(c[0] for c in chunks)


def _variable_chunks(variable: Variable, requested: Any, name: Any) -> tuple[int, ...]:
    """Chunk shape for a new array: ``encoding["chunks"]``, else the dask chunks,
    else an automatic choice. Irregular dask chunks are fine: the writer is
    shard-safe whatever the alignment, so the largest block size is used."""
    ndim = variable.ndim
    if isinstance(requested, int) and not isinstance(requested, bool):
        requested = (requested,) * ndim
    if requested is not None and requested != "auto":
        requested = tuple(requested)
        if len(requested) == ndim:
            if not all(isinstance(c, int | np.integer) for c in requested):
                raise DatasetTypeError(
                    "zarr chunk sizes specified in `encoding['chunks']` must be an int "
                    f"or a tuple of ints. Instead found encoding['chunks']={requested!r} "
                    f"for variable named {name!r}."
                )
            return tuple(int(c) for c in requested)
    if variable.chunks:
        return tuple(max(1, max(c)) for c in variable.chunks)
    return _auto_chunks(variable.shape, variable.dtype)


def write_layout(
    variable: Variable, *, name: Any, raise_on_invalid: bool, zarr_format: int
) -> dict[str, Any]:
    """``create_array`` keywords from a (CF-encoded) variable's ``encoding``.

    Unknown keys raise for user-given encodings and are dropped otherwise, exactly as
    ``Dataset.to_zarr`` does. Returns ``chunks``, ``shards`` and the codec keywords
    that were set, plus ``write_empty_chunks`` when present.
    """
    encoding = {k: v for k, v in variable.encoding.items() if k not in _SAFE_TO_DROP}
    valid = WRITE_ENCODINGS | ({"fill_value"} if zarr_format == 3 else set())
    invalid = [k for k in encoding if k not in valid]
    if invalid and raise_on_invalid:
        hint = (
            " Use `_FillValue` to set the Zarr array `fill_value`"
            if "fill_value" in invalid and zarr_format == 2
            else ""
        )
        close = "".join(did_you_mean(k, valid) for k in invalid)
        raise DatasetError(
            f"unexpected encoding parameters for zarr backend:  {invalid!r}{close}." + hint
        )
    layout: dict[str, Any] = {
        "chunks": _variable_chunks(variable, encoding.get("chunks"), name)
    }
    shards = encoding.get("shards")
    if isinstance(shards, int) and not isinstance(shards, bool):
        shards = (shards,) * variable.ndim
    if shards is not None:
        shards = tuple(int(s) for s in shards)
        if any(s % c for s, c in zip(shards, layout["chunks"], strict=True)):
            raise ChunkAlignmentError(
                f"variable {name!r}: shards {shards} are not whole multiples of the "
                f"chunks {layout['chunks']}"
            )
        layout["shards"] = shards
    for key in ("compressors", "filters"):
        if key in encoding:
            layout[key] = _codecs_json(encoding[key])
    if encoding.get("serializer") is not None:
        layout["serializer"] = _codec_json(encoding["serializer"])
    for key in ("chunk_key_encoding", "write_empty_chunks"):
        if key in encoding:
            layout[key] = encoding[key]
    return layout
