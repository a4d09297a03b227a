"""The cache profiler: per captured request, the prefix a provider cache could reuse, and why not.

Requests are grouped into conversations: by the caller's own key (``prompt_cache_key``,
``user``, metadata) when sent, else by matching each request with the open conversation
whose last request it continues (longest common prefix; requests of several agents may
interleave). Each request is compared with the previous request of its conversation: the
reusable prefix is their common prefix, counted in o200k tokens; a *break* is a divergence
inside the previous request (append-only growth is not a break). Each break gets its cause
(``break_cause``), a diff snippet, the tokens that had to be read again instead of from the
cache and what that cost, and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from contextengine.context.monitor import common_prefix_len
from contextengine.context.tokens import count_tokens, shared_counter
from contextengine.measure.break_cause import BreakCause, explain_break
from contextengine.measure.capture import CapturedRequest, CapturedUsage
from contextengine.measure.prices import PRICE_TABLE, family_of
from contextengine.measure.segments import RequestShape, request_shape

OPEN_CONVERSATIONS = 64


@dataclass(frozen=True)
class BreakReport:
    """One cache break: its cause, where, the diff, the tokens re-read and their cost."""

    cause: BreakCause
    lost_tokens: int
    cost_usd: float

    def as_dict(self) -> dict[str, Any]:
        """The ``break`` object of ``profile --json``."""
        return {
            "cause": self.cause.cause,
            "message_index": self.cause.message_index,
            "snippet": self.cause.snippet,
            "description": self.cause.description,
            "fix": self.cause.fix,
            "lost_tokens": self.lost_tokens,
            "cost_usd": round(self.cost_usd, 6),
        }


@dataclass(frozen=True)
class RequestProfile:
    """One request's verdict: tokens, the reusable prefix, its conversation, any break."""

    index: int
    conversation: int
    wire: str
    model: str
    total_tokens: int
    reusable_tokens: int
    usage: CapturedUsage | None = None
    cache_break: BreakReport | None = None

    def as_dict(self) -> dict[str, Any]:
        """One entry of ``requests`` in ``profile --json``."""
        return {
            "index": self.index,
            "conversation": self.conversation,
            "wire": self.wire,
            "model": self.model,
            "total_tokens": self.total_tokens,
            "reusable_tokens": self.reusable_tokens,
            "usage": self.usage.as_dict() if self.usage else None,
            "break": self.cache_break.as_dict() if self.cache_break else None,
        }


@dataclass
class _Conversation:
    number: int
    key: str | None
    last: RequestShape
    segment_tokens: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Match:
    segment: int  # the first segment of the previous request that differs
    offset: int  # characters shared inside that segment

    def chars(self, prev: RequestShape) -> int:
        return sum(len(s.text) for s in prev.segments[: self.segment]) + self.offset


class CacheProfiler:
    """Profiles requests one at a time, in capture order (the proxy feeds it live)."""

    def __init__(self) -> None:
        self.requests: list[RequestProfile] = []
        self._open: list[_Conversation] = []
        self._conversations = 0

    def add(self, captured: CapturedRequest) -> RequestProfile:
        """Profile the next captured request."""
        shape = request_shape(captured.body)
        tokens = [count_tokens(s.text) for s in shape.segments]
        found = self._conversation_of(shape)
        reusable, cache_break = 0, None
        if found is None:
            self._conversations += 1
            found = _Conversation(self._conversations, shape.key, shape)
        else:
            prev, match = found.last, _match(found.last, shape)
            reusable = sum(tokens[: match.segment])
            if match.segment < len(shape.segments):
                partial = shape.segments[match.segment].text[: match.offset]
                reusable += shared_counter().count_uncached(partial)
            if match.segment < len(prev.segments):
                lost = max(0, sum(found.segment_tokens) - reusable)
                cause = explain_break(prev, shape, match.segment, match.offset)
                cache_break = BreakReport(cause, lost, _rewrite_cost(shape, lost))
            self._open.remove(found)
        found.last, found.segment_tokens = shape, tokens
        self._open = [found, *self._open][:OPEN_CONVERSATIONS]
        profile = RequestProfile(
            index=len(self.requests),
            conversation=found.number,
            wire=shape.wire,
            model=shape.model,
            total_tokens=sum(tokens),
            reusable_tokens=reusable,
            usage=captured.usage,
            cache_break=cache_break,
        )
        self.requests.append(profile)
        return profile

    def summary(self) -> dict[str, Any]:
        """Totals: requests, conversations, breaks (by cause), hit rates and costs."""
        return profile_summary(self.requests)

    def _conversation_of(self, shape: RequestShape) -> _Conversation | None:
        if shape.key is not None:
            return next((c for c in self._open if c.key == shape.key), None)
        best: tuple[int, _Conversation] | None = None
        for conversation in self._open:
            if conversation.key is not None or not _continues(conversation.last, shape):
                continue
            chars = _match(conversation.last, shape).chars(conversation.last)
            if best is None or chars > best[0]:
                best = (chars, conversation)
        return best[1] if best else None


def profile_requests(captured: Iterable[CapturedRequest]) -> CacheProfiler:
    """Profile a whole capture."""
    profiler = CacheProfiler()
    for request in captured:
        profiler.add(request)
    return profiler


def profile_summary(requests: list[RequestProfile]) -> dict[str, Any]:
    """The ``summary`` object of ``profile --json``."""
    total = sum(r.total_tokens for r in requests)
    reusable = sum(r.reusable_tokens for r in requests)
    breaks = [r.cache_break for r in requests if r.cache_break]
    by_cause: dict[str, int] = {}
    for brk in breaks:
        by_cause[brk.cause.cause] = by_cause.get(brk.cause.cause, 0) + 1
    measured = [r for r in requests if r.usage is not None and r.usage.input_tokens]
    input_tokens = sum(r.usage.input_tokens for r in measured if r.usage)
    cached = sum(r.usage.cached_tokens for r in measured if r.usage)
    return {
        "requests": len(requests),
        "conversations": len({r.conversation for r in requests}),
        "total_tokens": total,
        "reusable_tokens": reusable,
        "hit_rate": round(reusable / total, 4) if total else 0.0,
        "breaks": len(breaks),
        "breaks_by_cause": by_cause,
        "lost_tokens": sum(b.lost_tokens for b in breaks),
        "break_cost_usd": round(sum(b.cost_usd for b in breaks), 6),
        "measured_requests": len(measured),
        "measured_input_tokens": input_tokens,
        "measured_cached_tokens": cached,
        "measured_hit_rate": round(cached / input_tokens, 4) if input_tokens else None,
        "measured_cost_usd": round(sum(_usage_cost(r) for r in measured), 6),
    }


def _match(prev: RequestShape, cur: RequestShape) -> _Match:
    k = 0
    limit = min(len(prev.segments), len(cur.segments))
    while k < limit and prev.segments[k].text == cur.segments[k].text:
        k += 1
    offset = 0
    if k < limit:
        offset = common_prefix_len(prev.segments[k].text, cur.segments[k].text)
    return _Match(k, offset)


def _continues(prev: RequestShape, cur: RequestShape) -> bool:
    """Whether ``cur`` may be the next request of ``prev``'s conversation.

    It is when it shares the prefix through ``prev``'s first message (the task), when its
    first message is the same task, or when it keeps ``prev``'s tools and system prompt and
    carries more than a fresh task (a rewritten history, not a new conversation).
    """
    if prev.model and cur.model and prev.model != cur.model:
        return False
    first = prev.first_message
    match = _match(prev, cur)
    if first is not None and match.segment > prev.segments.index(first):
        return True
    if first is not None and cur.first_message is not None and first.text == cur.first_message.text:
        return True
    static = [s for s in prev.segments if s.kind != "message"]
    messages = sum(1 for s in cur.segments if s.kind == "message")
    return bool(static) and match.segment >= len(static) and messages > 1


def _prices(model: str) -> Any:
    return PRICE_TABLE[family_of(model)]


def _rewrite_cost(shape: RequestShape, lost: int) -> float:
    """USD paid for ``lost`` tokens read (and written) again instead of from the cache."""
    prices = _prices(shape.model)
    return lost * (prices.cache_write - prices.cached) / 1_000_000


def _usage_cost(request: RequestProfile) -> float:
    usage = request.usage
    if usage is None:
        return 0.0
    uncached = usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens
    return _prices(request.model).cost(
        max(0, uncached), usage.cached_tokens, usage.cache_write_tokens, usage.output_tokens
    )
