"""Cost of a run from its logged request bodies.

Each body is serialized the way a provider's prompt sees it: the tools, then the messages,
as canonical JSON (sorted keys, compact separators, ``null`` fields dropped, a content list
of text parts joined into one string), so key order and such wire spellings do not count.
A request's cached part is the longest common character prefix with the same run's
previous request; cost = uncached chars + ``CACHED_PRICE`` x cached chars, and the same in
o200k tokens (the cached prefix tokenized on its own).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextengine.measure.tokens import TokenCounter

CACHED_PRICE = 0.1


def _clean(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _message(message: Mapping[str, Any]) -> Any:
    content = message.get("content")
    if isinstance(content, list) and all(
        isinstance(p, Mapping) and p.get("type") == "text" for p in content
    ):
        message = {**message, "content": "".join(str(p.get("text", "")) for p in content)}
    return _clean(message)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tools_text(body: Mapping[str, Any]) -> str:
    """The request's tool definitions, canonically serialized."""
    return _dumps([_clean(t) for t in body.get("tools") or []])


def prompt_text(body: Mapping[str, Any]) -> str:
    """The request's tools then messages, canonically serialized."""
    return tools_text(body) + _dumps([_message(m) for m in body.get("messages") or []])


@dataclass(frozen=True)
class RequestCost:
    """One request's size and cache split, in chars and o200k tokens."""

    side: bool
    tools_chars: int
    chars: int
    cached_chars: int
    tokens: int
    cached_tokens: int

    @property
    def cost(self) -> float:
        """Uncached chars plus the cached ones at ``CACHED_PRICE``."""
        return self.chars - self.cached_chars + CACHED_PRICE * self.cached_chars

    @property
    def token_cost(self) -> float:
        """The same in tokens."""
        return self.tokens - self.cached_tokens + CACHED_PRICE * self.cached_tokens


class CostMeter:
    """Prices one run's requests in order (each against the run's previous one)."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._previous = ""
        self.requests: list[RequestCost] = []

    def add(self, body: Mapping[str, Any], *, side: bool) -> RequestCost:
        """Price the next request of the run."""
        text = prompt_text(body)
        # Character by character on purpose: the cache reuses a prefix of the text.
        cached = len(os.path.commonprefix([self._previous, text]))  # noqa: RUF071
        self._previous = text
        cost = RequestCost(
            side,
            len(tools_text(body)),
            len(text),
            cached,
            self._counter.count(text),
            self._counter.count_uncached(text[:cached]),
        )
        self.requests.append(cost)
        return cost


@dataclass(frozen=True)
class RunCost:
    """A whole run: requests (side calls among them), chars, cached share, cost, tokens,
    the largest request and the tool definitions' size in the first request."""

    requests: int
    side_requests: int
    chars: int
    cached_chars: int
    cost: float
    tokens: int
    token_cost: float
    max_request_chars: int
    max_request_tokens: int
    tools_chars: int

    @property
    def cached_share(self) -> float:
        """Cached chars over all request chars."""
        return self.cached_chars / self.chars if self.chars else 0.0

    @classmethod
    def total(cls, requests: Sequence[RequestCost]) -> RunCost:
        """Sum a run's requests."""
        return cls(
            len(requests),
            sum(r.side for r in requests),
            sum(r.chars for r in requests),
            sum(r.cached_chars for r in requests),
            sum(r.cost for r in requests),
            sum(r.tokens for r in requests),
            sum(r.token_cost for r in requests),
            max((r.chars for r in requests), default=0),
            max((r.tokens for r in requests), default=0),
            requests[0].tools_chars if requests else 0,
        )
