"""The parsed metadata of a node, whichever Zarr format stored it."""

from __future__ import annotations

from typing import TypeAlias

from .v2 import ArrayMetadataV2, GroupMetadataV2
from .v3 import ArrayMetadataV3, GroupMetadataV3

__all__ = ["ArrayMetadata", "GroupMetadata", "NodeMetadata"]

ArrayMetadata: TypeAlias = ArrayMetadataV2 | ArrayMetadataV3
GroupMetadata: TypeAlias = GroupMetadataV2 | GroupMetadataV3
NodeMetadata: TypeAlias = ArrayMetadata | GroupMetadata
