"""Private API of zarr-python codec objects and stores, which zarrdask accepts (duck-typed,
never imported).

``Store._ensure_open`` (checked on zarr-python 3.1.6): opens a store not opened yet, as
zarr-python's own ``open`` functions do before the first request (a ``ZipStore(p, mode="r")``
holds no zip file and no lock until then). Without the attribute the store is used as
given; ``tests/project/test_compat.py`` fails when a release drops it.

``_tunable_attrs`` (checked on zarr-python 3.1.6): the settings of a codec object that the
user left unset and zarr-python fills from the array's data type (blosc's ``typesize`` and
``shuffle``). ``to_dict()`` shows placeholders for them, so they are dropped and filled
from the data type as zarr-python does. Without the attribute every setting is taken as
given (what ``to_dict()`` shows); ``tests/project/test_compat.py`` fails when a release drops it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ensure_open", "tunable_settings"]


def tunable_settings(codec: Any) -> frozenset[str]:
    """The settings zarr-python would fill in from the array's data type."""
    tunable = getattr(codec, "_tunable_attrs", None)
    return frozenset(tunable) if isinstance(tunable, (set, frozenset)) else frozenset()


async def ensure_open(store: Any) -> None:
    """Open the zarr-python store ``store`` if it is not open yet (else nothing)."""
    opener = getattr(store, "_ensure_open", None)
    if opener is not None:
        await opener()
