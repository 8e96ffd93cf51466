"""When a remote request is tried again: transient failures and the backoff between tries.

Pure code. A failure is transient when it is a timeout, a dropped or refused connection,
or an HTTP answer saying the server is overloaded or failed (5xx, 429, S3's ``SlowDown``
and its kin); the libraries below fsspec raise these in their own classes, so they are
recognised by status, error code or class name anywhere in the exception's chain,
without importing those libraries. A missing key is never transient. A conditional request
refused because the object is no longer as it was read is not transient either: it is
a change by another writer (``is_changed``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import InvalidValueError

__all__ = ["RetriesExhausted", "RetryPolicy", "is_changed", "is_forbidden", "is_range_not_satisfiable", "is_transient",
           "missing_credentials"]

_TRANSIENT_CODES = frozenset({
    "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests",
    "RequestTimeout", "RequestTimeoutException", "InternalError", "ServiceUnavailable", "BadGateway",
})
#: a failed precondition, a conditional write racing another (S3: retry after reading the ETag
#: again), an object deleted since it was read
_CHANGED_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"})
_TRANSIENT_CLASSES = frozenset({
    "ClientConnectionError", "ServerDisconnectedError", "ServerTimeoutError", "ClientPayloadError",
    "ClientOSError", "EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError",
    "ConnectionClosedError", "ResponseStreamingError", "IncompleteRead",
})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Up to ``attempts`` tries of a request in all; before try n+1 wait
    ``min(max_delay, base_delay * 2**(n-1))``, scaled by a random factor in [0.5, 1]."""

    attempts: int = 6
    base_delay: float = 0.05
    max_delay: float = 2.0

    def __post_init__(self) -> None:
        if not (isinstance(self.attempts, int) and self.attempts >= 1 and self.base_delay >= 0 and self.max_delay >= 0):
            raise InvalidValueError(f"invalid retry policy {self}: expected an int attempts >= 1 and delays >= 0 "
                                    "(seconds)")

    @classmethod
    def configured(cls) -> RetryPolicy:
        """The policy dask's configuration gives under ``zarrdask.retry`` (keys ``attempts``,
        ``base_delay``, ``max_delay``; in the environment ``DASK_ZARRDASK__RETRY__ATTEMPTS``
        and its kin), the defaults for the keys it does not give: every store opened from a
        URL without ``retry=`` takes it, and carries it to the workers it is pickled to."""
        import dask.config

        given = dask.config.get("zarrdask.retry", default=None) or {}
        if not isinstance(given, dict) or not set(given) <= set(_FIELDS):
            raise InvalidValueError(f"dask config 'zarrdask.retry' is {given!r}: expected a mapping of "
                                    f"{', '.join(_FIELDS)}")
        try:
            return cls(**{k: _FIELDS[k](v) for k, v in given.items()})
        except (TypeError, ValueError) as exc:
            raise InvalidValueError(f"dask config 'zarrdask.retry' is {given!r}: {exc}") from exc

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed try."""
        return min(self.max_delay, self.base_delay * 2 ** (failures - 1)) * random.uniform(0.5, 1.0)


class RetriesExhausted(Exception):
    """A request that failed transiently on every one of its policy's tries; raised from
    the last failure, its message says how often and how long it was tried and where the
    policy is set."""

    def __init__(self, last: BaseException, policy: RetryPolicy, seconds: float) -> None:
        super().__init__(last, policy, seconds)
        self.last, self.policy, self.seconds = last, policy, seconds

    def __str__(self) -> str:
        return (f"{self.last} (a transient failure, tried {self.policy.attempts} times over {self.seconds:.1f} s; "
                "set the tries with dask.config.set({'zarrdask.retry.attempts': N}) or the environment variable "
                "DASK_ZARRDASK__RETRY__ATTEMPTS=N)")


_FIELDS = {"attempts": int, "base_delay": float, "max_delay": float}  # (as the environment gives them: strings)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or during."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _answer(exc: BaseException) -> tuple[int | None, str | None]:
    """The HTTP status and S3 error code an exception carries, where it carries them."""
    status = getattr(exc, "status", None)  # aiohttp's ClientResponseError
    response = getattr(exc, "response", None)  # botocore's ClientError
    code = None
    if isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", status)
        code = response.get("Error", {}).get("Code")
    return (status if isinstance(status, int) else None), code


def is_range_not_satisfiable(exc: BaseException) -> bool:
    """Whether the server answered HTTP 416 (a range past the end, or of an empty value)."""
    return any(_answer(e)[0] == 416 or _answer(e)[1] == "InvalidRange" for e in _chain(exc))


def is_forbidden(exc: BaseException) -> bool:
    """Whether the server refused the request as forbidden: HTTP 403, S3's ``AccessDenied``
    (s3fs raises it as a ``PermissionError``). S3 answers so for a key that does not exist
    as well, when the reader may not list the bucket."""
    return any(isinstance(e, PermissionError) or _answer(e)[0] == 403 or _answer(e)[1] == "AccessDenied"
               for e in _chain(exc))


def missing_credentials(exc: BaseException) -> bool:
    """Whether a request was never signed for want of credentials (botocore's
    ``NoCredentialsError``: none in the environment, the config files or the call)."""
    return any(type(e).__name__ == "NoCredentialsError" for e in _chain(exc))


def is_changed(exc: BaseException) -> bool:
    """Whether a conditional request (S3 ``If-Match`` / ``If-None-Match``) failed because the
    object is not as it was read: HTTP 412, S3's 409 ``ConditionalRequestConflict``, or the
    object gone (``NoSuchKey``)."""
    return any(status == 412 or code in _CHANGED_CODES for status, code in map(_answer, _chain(exc)))


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is worth another try."""
    for current in _chain(exc):
        if isinstance(current, FileNotFoundError):
            return False
        if isinstance(current, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
            return True
        if any(cls.__name__ in _TRANSIENT_CLASSES for cls in type(current).__mro__):
            return True
        status, code = _answer(current)
        if code in _TRANSIENT_CODES or (status is not None and (status >= 500 or status == 429)):
            return True
    return False
