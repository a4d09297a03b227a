"""Retrying a reply stream that broke after the HTTP call succeeded.

The SDKs retry a failed request (connection, timeout, 408/409/429/5xx) but not a 200 reply
whose stream is cut before its end, carries an event that is not JSON or has the wrong
shape, or is no event stream at all (an HTML page, plain JSON, an empty body). Adapters
raise ``BrokenReplyError`` for those; ``retried`` starts the call again with backoff, and
after the last attempt it is one ``ProviderError``, never an answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from contextengine.errors import ProviderError
from contextengine.types import ReplyEvent

DEFAULT_BACKOFF_S = 0.5
"""Wait before the first retry; it doubles for each further one."""

MAX_BACKOFF_S = 8.0


class BrokenReplyError(ProviderError):
    """A 200 reply that is not a complete, well-formed reply stream (retried)."""


def retried(
    attempt: Callable[[], Iterator[ReplyEvent]],
    max_retries: int,
    backoff_s: float = DEFAULT_BACKOFF_S,
) -> Iterator[ReplyEvent]:
    """Yield the events of ``attempt()``, starting it again after a ``BrokenReplyError``.

    Deltas of a broken attempt have already been yielded (they are display only); the
    ``ReplyDone`` comes from the attempt that completed.
    """
    for number in range(max_retries + 1):
        try:
            yield from attempt()
            return
        except BrokenReplyError as exc:
            if number == max_retries:
                raise ProviderError(f"{exc} (after {number + 1} attempts)") from exc
            time.sleep(min(MAX_BACKOFF_S, backoff_s * 2**number))
