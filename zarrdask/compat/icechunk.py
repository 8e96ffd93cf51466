"""Private API of Icechunk sessions, which zarrdask accepts (duck-typed, never imported).

``fork_session`` (checked on icechunk 1.1.21): ``Session.fork()`` refuses a session with
uncommitted changes, but zarrdask writes an array's metadata through the caller's session
before its workers write the chunks, and the workers need that metadata in their fork.
A fork of a changed session is built as ``fork()`` builds one (a deep copy of the
session's bytes, ``_session.as_bytes()`` / ``from_bytes``, wrapped in the session
module's ``ForkSession``); merging it back lays the caller's changes onto themselves,
which leaves them as they are. ``tests/project/test_compat.py`` fails when a release changes this.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["CHECKED_ON", "fork_session"]

CHECKED_ON = "1.1.21"


def fork_session(session: Any) -> Any:
    """A ``ForkSession`` of ``session`` holding its uncommitted changes too (``fork()``
    when there are none)."""
    if not session.has_uncommitted_changes:
        return session.fork()
    inner = session._session
    fork_class = sys.modules[type(session).__module__].ForkSession
    return fork_class(type(inner).from_bytes(inner.as_bytes()))
