"""An array's stored units: the one owner of what is stored and how its bytes are read,
written, listed, counted and checked (``interface.py`` is the public face; ``chunks.py``
and ``shards.py`` the two kinds; ``kinds.py`` picks one from the codec chain)."""

from .base import fill_item
from .interface import StorageStatistics, StoredUnits, UnitShape
from .kinds import open_units
from .options import ArrayOptions, WriteLock, array_options

__all__ = ["ArrayOptions", "StorageStatistics", "StoredUnits", "UnitShape", "WriteLock", "array_options", "fill_item",
           "open_units"]
