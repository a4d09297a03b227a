"""The one retry loop of the HTTP adapters, decided by ``ProviderError.retryable``.

A call is retried when it fails with a retryable error: a connection failure or timeout,
HTTP 408/409/429/5xx (unless the server says ``x-should-retry: false``), or a 200 reply
that is no complete reply stream - cut before its end, an event that is not JSON or has
the wrong shape, no event stream at all (``BrokenReplyError``). The SDKs' own retries are
off, so this is the only place that decides. The wait doubles from ``backoff_s`` up to
``MAX_BACKOFF_S``, or is what the server asked for in ``retry-after`` (at most
``MAX_RETRY_AFTER_S``). After the last attempt the error is raised with its class, status
and ``retryable`` kept, never an answer.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator

from contextengine.errors import BrokenReplyError, ProviderError
from contextengine.types import ReplyEvent

__all__ = ["DEFAULT_BACKOFF_S", "MAX_BACKOFF_S", "BrokenReplyError", "retried"]

DEFAULT_BACKOFF_S = 0.5
"""Wait before the first retry; it doubles for each further one."""

MAX_BACKOFF_S = 8.0

MAX_RETRY_AFTER_S = 60.0
"""The longest server-requested wait honoured; a longer one is cut to this."""


def retried(
    attempt: Callable[[], Iterator[ReplyEvent]],
    max_retries: int,
    backoff_s: float = DEFAULT_BACKOFF_S,
) -> Iterator[ReplyEvent]:
    """Yield the events of ``attempt()``, starting it again after a retryable ``ProviderError``.

    Deltas of a broken attempt have already been yielded (they are display only); the
    ``ReplyDone`` comes from the attempt that completed.
    """
    for number in range(max_retries + 1):
        try:
            yield from attempt()
            return
        except ProviderError as exc:
            if not exc.retryable or max_retries == 0:
                raise
            if number == max_retries:
                raise _after_attempts(exc, number + 1) from exc
            time.sleep(_wait(exc, backoff_s, number))


def _wait(exc: ProviderError, backoff_s: float, number: int) -> float:
    if exc.retry_after_s is not None:
        return min(MAX_RETRY_AFTER_S, exc.retry_after_s)
    return min(MAX_BACKOFF_S, backoff_s * 2**number)


def _after_attempts(exc: ProviderError, attempts: int) -> ProviderError:
    """``exc`` (same class and fields) whose message tells how many attempts failed."""
    final = copy.copy(exc)
    final.args = (f"{exc} (after {attempts} attempts)",)
    return final
