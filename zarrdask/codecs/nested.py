"""Codec lists inside a codec's configuration (``sharding_indexed``, ``n5_default``,
``conditional``): JSON -> codecs."""

from __future__ import annotations

from typing import Any

from ..errors import MetadataError, Problem
from ..metadata.extension import parse_named_config
from ._config import config_error
from .base import Codec, Loc
from .pipeline import build_codecs

__all__ = ["parse_codec_list"]


def parse_codec_list(value: Any, loc: Loc, allow_empty: bool = False) -> list[Codec]:
    """The codecs of a nested JSON list (``loc`` is the list's path); problems name their entry."""
    if not isinstance(value, list) or not (value or allow_empty):
        raise config_error(loc, f"expected a {'' if allow_empty else 'non-empty '}list of codecs, got {value!r}")
    problems: list[Problem] = []
    named = [parse_named_config(v, (*loc, i), problems) for i, v in enumerate(value)]
    if problems:
        raise MetadataError(problems)
    return build_codecs([n for n in named if n is not None], loc)
