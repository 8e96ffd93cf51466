"""``attrs``: a mutable mapping whose every change is persisted to the node's metadata."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from ..metadata.attribute_values import json_attributes

__all__ = ["Attributes"]


class Attributes(MutableMapping[str, Any]):
    """User attributes of an array or group. Changes are written at once (atomically per key).
    ``write(edit)`` stores ``edit(attributes as stored now)``: a change made here keeps
    the attributes another process set since the node was opened. New values are taken as
    a document holds them (:func:`~zarrdask.metadata.attribute_values.json_attributes`:
    numpy values as the Python values they equal, what JSON cannot hold refused)."""

    def __init__(self, read: Callable[[], Mapping[str, Any]],
                 write: Callable[[Callable[[dict[str, Any]], dict[str, Any]]], None]) -> None:
        self._read = read
        self._write = write

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        if key not in self._read():
            raise KeyError(key)
        self._write(lambda current: {k: v for k, v in current.items() if k != key})

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._read()))

    def __len__(self) -> int:
        return len(self._read())

    def update(self, other: Any = (), /, **kwargs: Any) -> None:  # one write for many keys
        changes = json_attributes(dict(other, **kwargs))
        self._write(lambda current: {**current, **changes})

    def put(self, attributes: Mapping[str, Any]) -> None:
        """Replace all attributes."""
        new = json_attributes(attributes)
        self._write(lambda current: new)

    def asdict(self) -> dict[str, Any]:
        return dict(self._read())

    def __repr__(self) -> str:
        return repr(dict(self._read()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._read()) == dict(other)
