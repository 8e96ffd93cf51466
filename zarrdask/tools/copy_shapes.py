"""The chunk and shard shapes ``copy`` was asked for, resolved per array; every spec
either applies or is an error naming what was passed and what to pass instead."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Union

from ..errors import InvalidTypeError, ShapeMismatchError

__all__ = ["KEEP", "ArrayShape", "ShapeSpec", "check_spec", "check_fits", "check_multiples", "fit_shards", "matches", "resolve"]

#: the default of ``chunks``, ``shards`` and ``compressors``: the source's
KEEP = "keep"

#: positional (arrays of that many dimensions; one size: every dimension) or ``{dimension name: size}``
ShapeSpec = Union[Sequence[int], Mapping[str, int], str, None]


def _text(sizes: Sequence[int]) -> str:
    return ",".join(str(s) for s in sizes)


def check_spec(name: str, spec: Any) -> ShapeSpec:
    """``spec`` with one bare size (``chunks=64``) as one size for every dimension; a spec
    that can apply to no array (sizes other than -1 or positive) is refused."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = (spec,)
    if spec is None or spec == KEEP:
        return spec
    if isinstance(spec, (str, bytes)) or not isinstance(spec, (Mapping, Sequence)):
        raise InvalidTypeError(f"zarrdask.copy(): {name}={spec!r} is not a shape: pass {KEEP!r}, sizes such as "
                               f"(64, 64) (-1: the whole dimension), {{dimension name: size}}, or None")
    sizes = list(spec.values()) if isinstance(spec, Mapping) else list(spec)
    bad = [s for s in sizes if not isinstance(s, int) or isinstance(s, bool) or (s < 1 and s != -1)]
    if bad or not sizes:
        raise ShapeMismatchError(f"{name}={spec!r}: sizes must be positive integers or -1 (the whole dimension)")
    return spec


def matches(spec: Any, ndim: int, names: Sequence[str | None] | None) -> bool:
    """Whether ``spec`` applies to an array of ``ndim`` dimensions named ``names``."""
    if isinstance(spec, Mapping):
        return any(n in spec for n in names or ())
    return len(spec) == ndim or (len(spec) == 1 and ndim > 0)


def resolve(name: str, spec: Any, array_path: str, shape: tuple[int, ...], names: Sequence[str | None] | None,
            base: tuple[int, ...] | None, *, single: bool) -> tuple[int, ...] | None:
    """``spec`` for one array, -1 kept (``base``: the sizes it keeps where a spec by name is silent).
    ``single``: the array is the whole copy, so a spec that does not fit it is an error;
    in a hierarchy a spec applies to the arrays it fits (and must fit one, see :func:`check_fits`)."""
    if not matches(spec, len(shape), names):
        if not single:
            return None
        if isinstance(spec, Mapping):
            have = f"its dimension names are {list(names)}" if names else "it has no dimension names"
            raise ShapeMismatchError(f"{name}={_spec_text(spec)}: array {array_path!r} has no dimension "
                                     f"{', '.join(map(repr, spec))} ({have}); give {name} by position, e.g. "
                                     f"{_text(base or shape)}")
        raise ShapeMismatchError(f"{name}={_spec_text(spec)}: {len(spec)} sizes for array {array_path!r} of "
                                 f"{len(shape)} dimension(s) (shape {_text(shape)}); give {len(shape)} sizes")
    if isinstance(spec, Mapping):
        if base is None:
            raise ShapeMismatchError(f"{name}={_spec_text(spec)}: array {array_path!r} has irregular chunks, so the "
                                     f"other dimensions have no size to keep; give {name} for every dimension")
        sizes = [spec.get(n, b) if n is not None else b for n, b in zip(names or (), base)]
    else:
        sizes = list(spec) * len(shape) if len(spec) == 1 else list(spec)
    return tuple(sizes)


def _spec_text(spec: Any) -> str:
    if isinstance(spec, Mapping):
        return ",".join(f"{k}={v}" for k, v in spec.items())
    return _text(spec)


class ArrayShape(NamedTuple):
    """What a chunks or shards spec is fitted to: an array's path, rank and dimension names."""

    path: str
    ndim: int
    names: Sequence[str | None] | None


def check_fits(name: str, spec: Any, arrays: Sequence[ArrayShape]) -> None:
    """A spec given for a hierarchy must fit at least one of its arrays (path, ndim, names)."""
    if isinstance(spec, str) or spec is None or any(matches(spec, a.ndim, a.names) for a in arrays):
        return
    if isinstance(spec, Mapping):
        known = sorted({d for a in arrays for d in a.names or () if d is not None})
        raise ShapeMismatchError(f"{name}={_spec_text(spec)}: no array has a dimension named "
                                 f"{', '.join(map(repr, spec))}; the dimension names are {known}")
    ranks = sorted({a.ndim for a in arrays})
    raise ShapeMismatchError(f"{name}={_spec_text(spec)}: {len(spec)} sizes, but the arrays have "
                             f"{' or '.join(map(str, ranks))} dimension(s)")


def fit_shards(shards: Sequence[int], chunks: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """Shards with -1 (the whole dimension) made the dimension rounded up to a multiple of
    the chunks: a shard may reach past the array's edge, a chunk may not split."""
    return tuple(-(-max(n, 1) // c) * c if s == -1 else s for s, c, n in zip(shards, chunks, shape))


def check_multiples(array_path: str, shards: tuple[int, ...], chunks: tuple[int, ...], given: str) -> None:
    """Shards must be whole multiples of the chunks; the error names the nearest valid sizes."""
    if all(s % c == 0 for s, c in zip(shards, chunks)):
        return
    below = tuple(max(c, s // c * c) for s, c in zip(shards, chunks))
    above = tuple(-(-s // c) * c for s, c in zip(shards, chunks))
    options = _text(below) if below == above else f"{_text(below)} or {_text(above)}"
    raise ShapeMismatchError(f"array {array_path!r}: shards {_text(shards)} are not multiples of chunks "
                             f"{_text(chunks)}{given}: use {options}")
