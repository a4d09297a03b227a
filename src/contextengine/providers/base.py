"""The provider protocol: one request in, a streamed reply out.

Streaming is the primitive; ``complete`` consumes ``stream`` so the two paths cannot drift.
Providers never touch tools or the session: they translate a ``Request`` to their wire
format, enforce its mask with their own decode-time means, and map the reply back.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, runtime_checkable

from contextengine.context.request import Request
from contextengine.errors import ProviderError
from contextengine.prices import DEFAULT_CACHE_LIFETIME_S, CachePolicy
from contextengine.types import ModelReply, ReplyDone, ReplyEvent


@runtime_checkable
class Provider(Protocol):
    """Anything that can answer a ``Request``."""

    model: str

    @property
    def cache_policy(self) -> CachePolicy:
        """How this provider's prompt cache lives and what it charges (pruning weighs it)."""
        ...

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Yield text/reasoning deltas, then exactly one ``ReplyDone``."""
        ...

    def complete(self, request: Request) -> ModelReply:
        """Answer ``request`` and return the whole reply."""
        ...


class StreamingProvider:
    """Base class: implement ``stream``; ``complete`` is derived from it."""

    model: str = ""
    cache_lifetime_s: float = DEFAULT_CACHE_LIFETIME_S
    """How long an idle prompt cache lives; a provider that asks its API for longer says so."""

    @property
    def cache_policy(self) -> CachePolicy:
        """The cache's lifetime and ``model``'s own cache prices (genai-prices)."""
        return CachePolicy.of_model(self.model, self.cache_lifetime_s)

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Yield text/reasoning deltas, then exactly one ``ReplyDone``."""
        raise NotImplementedError

    def complete(self, request: Request) -> ModelReply:
        """Answer ``request`` by consuming ``stream``."""
        return collect_reply(self.stream(request))


def collect_reply(events: Iterable[ReplyEvent]) -> ModelReply:
    """The final reply of an event stream."""
    for event in events:
        if isinstance(event, ReplyDone):
            return event.reply
    raise ProviderError("the provider's stream ended without a reply")
