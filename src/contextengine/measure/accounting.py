"""The cache model that prices a sequence of requests (docs/measurement.md).

Every strategy (the engine, ``full_history``, ``sliding_window``) is charged by the same
rules. A request is a list of chunks: the tool list, then one per message. A chunk's
tokens are the BPE tokens of what the model reads of it: the tool list's canonical JSON;
a message's role, tool-call id, content, and each call's id, name and arguments, joined by
newlines (``message_text``). Per request:

* cached: the common prefix with the previous main request, up to where that request
  ended its persisted part (a prompt cache serves only what an earlier request wrote). The
  prefix is compared chunk by chunk; inside the first differing message it is the common
  prefix of the two messages' texts, tokenized as that text;
* cache write: from there to the end of the request's own persisted part (tools, L1, L2,
  history: what it marks for caching);
* uncached: the rest (live observations, the task-status tail, a side call's instruction).

Side calls (compaction summaries, reboots) are compared with the last main request and do
not become the reference of the next one; what a side call wrote is still in the cache, so
the next main request reads from whichever earlier write (the last main request's or a side
call's since then) it shares more of.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextengine.context.monitor import (
    CacheBreak,
    PrefixMonitor,
    common_prefix_chars,
    common_prefix_len,
)
from contextengine.context.request import Request
from contextengine.measure.tokens import TokenCounter


@dataclass(frozen=True)
class CallCost:
    """Token accounting of one request under the cache model.

    ``prefix_tokens`` is the whole common prefix with the previous main request (cached or
    not); ``ideal_tokens`` is what it would be had the request kept the previous request's
    persisted part intact (no cache break).
    """

    purpose: str
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    prefix_tokens: int
    ideal_tokens: int
    cache_break: CacheBreak | None = None

    @property
    def uncached_tokens(self) -> int:
        """Tokens neither read from nor written to the cache."""
        return self.input_tokens - self.cached_tokens - self.cache_write_tokens


def message_text(message: Mapping[str, Any]) -> str:
    """What the model reads of a chat message: role, ids, content, calls (newline-joined)."""
    parts = [str(message.get("role", "")), str(message.get("tool_call_id") or "")]
    content = message.get("content")
    parts.append(content if isinstance(content, str) else "" if content is None else str(content))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts += [str(call.get("id", "")), function.get("name", ""), function.get("arguments", "")]
    return "\n".join(parts)


class CacheAccountant:
    """Charges requests in order; main requests become the reference of the next one."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._chunk_tokens: dict[str, int] = {}
        self._previous: Request | None = None
        self._side_writes: list[Request] = []  # side calls since the last main request
        self._monitor = PrefixMonitor()

    def charge(self, request: Request, output_tokens: int) -> CallCost:
        """The cost of ``request`` given the main request charged before it."""
        tokens = self.chunk_tokens(request)
        total = sum(tokens)
        persisted = sum(tokens[: request.persisted_chunks])
        previous = self._previous
        prefix = ideal = written = 0
        if previous is not None:
            prev_tokens = self.chunk_tokens(previous)
            written = sum(prev_tokens[: previous.persisted_chunks])
            prefix = min(total, self._prefix_tokens(previous, request, tokens))
            ideal = max(prefix, min(written, total))
        cached = min(prefix, written)
        for side in self._side_writes:
            cached = max(cached, self._readable(side, request, tokens))
        cache_break = None
        if request.purpose == "main":
            cache_break = self._monitor.observe(request).cache_break
            self._previous = request
            self._side_writes = []
        else:
            self._side_writes.append(request)
        return CallCost(
            purpose=request.purpose,
            input_tokens=total,
            cached_tokens=cached,
            cache_write_tokens=max(0, persisted - cached),
            output_tokens=output_tokens,
            prefix_tokens=prefix,
            ideal_tokens=ideal,
            cache_break=cache_break,
        )

    def _readable(self, earlier: Request, request: Request, tokens: list[int]) -> int:
        """Tokens of ``request`` served by what ``earlier`` wrote to the cache."""
        written = sum(self.chunk_tokens(earlier)[: earlier.persisted_chunks])
        return min(self._prefix_tokens(earlier, request, tokens), written, sum(tokens))

    def chunk_tokens(self, request: Request) -> list[int]:
        """Tokens per chunk (cached per chunk string: history chunks repeat every step)."""
        out: list[int] = []
        for k, chunk in enumerate(request.chunks):
            found = self._chunk_tokens.get(chunk)
            if found is None:
                text = chunk_text(request, k)
                found = self._chunk_tokens[chunk] = self.counter.count_uncached(text)
            out.append(found)
        return out

    def _prefix_tokens(self, previous: Request, request: Request, tokens: list[int]) -> int:
        _chars, chunk = common_prefix_chars(previous, request)
        shared = sum(tokens[:chunk])
        if chunk >= min(len(previous.chunks), len(request.chunks)):
            return shared
        old, new = chunk_text(previous, chunk), chunk_text(request, chunk)
        return shared + self.counter.count_uncached(new[: common_prefix_len(old, new)])


def chunk_text(request: Request, k: int) -> str:
    """The text counted for chunk ``k``: the tool list's JSON, or message ``k - 1``'s text."""
    return request.chunks[0] if k == 0 else message_text(request.messages[k - 1])
