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
from typing import TypedDict

from contextengine.context.monitor import common_prefix_len
from contextengine.context.tokens import count_tokens, shared_counter
from contextengine.measure.break_cause import BreakExplanation, explain_break
from contextengine.measure.capture import CapturedRequest
from contextengine.measure.segments import RequestShape, request_shape
from contextengine.prices import model_prices
from contextengine.types import Usage

OPEN_CONVERSATIONS = 64


class BreakFigures(TypedDict):
    """The ``break`` object of a request in ``profile --json``."""

    cause: str
    message_index: int | None
    snippet: str
    description: str
    fix: str
    lost_tokens: int
    cost_usd: float | None


RequestFigures = TypedDict(
    "RequestFigures",
    {
        "index": int,
        "conversation": int,
        "wire": str,
        "model": str,
        "total_tokens": int,
        "reusable_tokens": int,
        "usage": dict[str, int] | None,
        "break": BreakFigures | None,
        "tail_replaced": bool,
    },
)
"""One entry of ``requests`` in ``profile --json`` (``break`` is a keyword, hence this form)."""


class ProfileSummary(TypedDict):
    """The ``summary`` object of ``profile --json``."""

    requests: int
    conversations: int
    total_tokens: int
    reusable_tokens: int
    hit_rate: float
    breaks: int
    breaks_by_cause: dict[str, int]
    tail_replacements: int
    lost_tokens: int
    break_cost_usd: float
    measured_requests: int
    measured_input_tokens: int
    measured_cached_tokens: int
    measured_hit_rate: float | None
    measured_cost_usd: float
    unpriced_models: list[str]


@dataclass(frozen=True)
class BreakReport:
    """One cache break: its cause, where, the diff, the tokens re-read and their cost."""

    cause: BreakExplanation
    lost_tokens: int
    cost_usd: float | None

    def as_dict(self) -> BreakFigures:
        """The ``break`` object of ``profile --json``."""
        return {
            "cause": self.cause.cause,
            "message_index": self.cause.message_index,
            "snippet": self.cause.snippet,
            "description": self.cause.description,
            "fix": self.cause.fix,
            "lost_tokens": self.lost_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
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
    usage: Usage | None = None
    cache_break: BreakReport | None = None
    tail_replaced: bool = False

    def as_dict(self) -> RequestFigures:
        """One entry of ``requests`` in ``profile --json``."""
        return {
            "index": self.index,
            "conversation": self.conversation,
            "wire": self.wire,
            "model": self.model,
            "total_tokens": self.total_tokens,
            "reusable_tokens": self.reusable_tokens,
            "usage": self.usage.token_counts() if self.usage else None,
            "break": self.cache_break.as_dict() if self.cache_break else None,
            "tail_replaced": self.tail_replaced,
        }


@dataclass(frozen=True)
class _Reference:
    """A request a later one may continue from, with its segments' token counts."""

    shape: RequestShape
    tokens: tuple[int, ...]


@dataclass
class _Conversation:
    number: int
    key: str | None
    # The last two requests: one after a side call (a summary request without tools, say)
    # continues from the request before it.
    references: list[_Reference] = field(default_factory=list)


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
        tokens = tuple(count_tokens(s.text) for s in shape.segments)
        found = self._conversation_of(shape)
        reusable, cache_break, tail_replaced = 0, None, False
        if found is None:
            self._conversations += 1
            conversation = _Conversation(self._conversations, shape.key)
        else:
            conversation, ref = found
            prev, match = ref.shape, _match(ref.shape, shape)
            reusable = sum(tokens[: match.segment])
            if match.segment < len(shape.segments):
                partial = shape.segments[match.segment].text[: match.offset]
                reusable += shared_counter().count_uncached(partial)
            tail_replaced = _only_tail_replaced(prev, shape, match)
            if match.segment < len(prev.segments) and not tail_replaced:
                lost = max(0, sum(ref.tokens) - reusable)
                cause = explain_break(prev, shape, match.segment, match.offset)
                cache_break = BreakReport(cause, lost, _rewrite_cost(shape, lost))
            self._open.remove(conversation)
        conversation.references = [*conversation.references[-1:], _Reference(shape, tokens)]
        self._open = [conversation, *self._open][:OPEN_CONVERSATIONS]
        profile = RequestProfile(
            index=len(self.requests),
            conversation=conversation.number,
            wire=shape.wire,
            model=shape.model,
            total_tokens=sum(tokens),
            reusable_tokens=reusable,
            usage=captured.usage,
            cache_break=cache_break,
            tail_replaced=tail_replaced,
        )
        self.requests.append(profile)
        return profile

    def summary(self) -> ProfileSummary:
        """Totals: requests, conversations, breaks (by cause), hit rates and costs."""
        return profile_summary(self.requests)

    def _conversation_of(self, shape: RequestShape) -> tuple[_Conversation, _Reference] | None:
        """The conversation ``shape`` continues and the request it continues from."""
        if shape.key is not None:
            keyed = next((c for c in self._open if c.key == shape.key), None)
            if keyed is None:
                return None
            return keyed, max(keyed.references, key=lambda r: _match(r.shape, shape).chars(r.shape))
        best: tuple[int, _Conversation, _Reference] | None = None
        for conversation in self._open:
            if conversation.key is not None:
                continue
            for ref in conversation.references:
                match = _match(ref.shape, shape)
                if not _continues(ref.shape, shape, match):
                    continue
                chars = match.chars(ref.shape)
                if best is None or chars > best[0]:
                    best = (chars, conversation, ref)
        return (best[1], best[2]) if best else None


def profile_requests(captured: Iterable[CapturedRequest]) -> CacheProfiler:
    """Profile a whole capture."""
    profiler = CacheProfiler()
    for request in captured:
        profiler.add(request)
    return profiler


def profile_summary(requests: list[RequestProfile]) -> ProfileSummary:
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
        "tail_replacements": sum(r.tail_replaced for r in requests),
        "lost_tokens": sum(b.lost_tokens for b in breaks),
        "break_cost_usd": round(sum(b.cost_usd or 0.0 for b in breaks), 6),
        "measured_requests": len(measured),
        "measured_input_tokens": input_tokens,
        "measured_cached_tokens": cached,
        "measured_hit_rate": round(cached / input_tokens, 4) if input_tokens else None,
        "measured_cost_usd": round(sum(_usage_cost(r) for r in measured), 6),
        "unpriced_models": sorted({r.model for r in requests if model_prices(r.model) is None}),
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


def _only_tail_replaced(prev: RequestShape, cur: RequestShape, match: _Match) -> bool:
    """Whether ``cur`` keeps all of ``prev`` but its last message, replaced by later ones.

    A volatile tail (a status note, a reminder re-sent each step) costs only its own
    tokens; it is reported, not counted as a break.
    """
    last = len(prev.segments) - 1
    return (
        match.segment == last
        and prev.segments[last].kind == "message"
        and prev.segments[last] is not prev.first_message
        and len(cur.segments) > len(prev.segments)
    )


def _continues(prev: RequestShape, cur: RequestShape, match: _Match) -> bool:
    """Whether ``cur`` may be the next request of ``prev``'s conversation.

    It is when it shares the prefix through ``prev``'s first message (the task), when its
    first message is the same task, or when it keeps ``prev``'s tools and system prompt and
    carries more than a fresh task (a rewritten history, not a new conversation).
    """
    if prev.model and cur.model and prev.model != cur.model:
        return False
    first = prev.first_message
    if first is not None and match.segment > prev.segments.index(first):
        return True
    if first is not None and cur.first_message is not None and first.text == cur.first_message.text:
        return True
    static = [s for s in prev.segments if s.kind != "message"]
    messages = sum(1 for s in cur.segments if s.kind == "message")
    return bool(static) and match.segment >= len(static) and messages > 1


def _rewrite_cost(shape: RequestShape, lost: int) -> float | None:
    """USD paid for ``lost`` tokens read (and written) again instead of from the cache;
    None when the model's prices are unknown."""
    prices = model_prices(shape.model)
    if prices is None:
        return None
    return lost * (prices.cache_write - prices.cached) / 1_000_000


def _usage_cost(request: RequestProfile) -> float:
    """USD of a request's measured usage (0 when its model's prices are unknown)."""
    usage = request.usage
    prices = model_prices(request.model)
    if usage is None or prices is None:
        return 0.0
    uncached = usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens
    return prices.cost(
        max(0, uncached), usage.cached_tokens, usage.cache_write_tokens, usage.output_tokens
    )
