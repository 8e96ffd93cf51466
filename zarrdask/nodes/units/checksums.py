"""Whether an array's stored chunks carry a checksum of their data, so that ``verify``
can tell a flipped byte from good data rather than only see that the chunk decodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...codecs.registry import chain_checksummed

__all__ = ["carries_checksum"]


def carries_checksum(codecs: Sequence[Any]) -> bool:
    """True when every stored chunk's data passes a checksummed codec: one in the chain
    (v3, inside or after sharding; the shard index's own checksum does not count), a v2
    filter or the v2 compressor. Each codec class answers for its configuration."""
    return chain_checksummed(codecs)
