"""The front door: what a user passes as a store, resolved once (``resolve.py``) into a
typed record (``record.py``); the node metadata I/O it reads with (``node_io.py``,
``old_formats.py``)."""

from .record import Resolved
from .resolve import opened_node, resolve

__all__ = ["Resolved", "opened_node", "resolve"]
