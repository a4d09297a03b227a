"""The prefix monitor (R1.6): how much of each request a prefix cache can reuse, and why not.

Each request is compared with the previous one of its session. The reusable prefix is the
longest common prefix of their canonical texts. A *break* is a divergence inside the
previous request's persisted part (tools + L1 + L2 + history): something that was already
cacheable changed. Divergence after it is normal (live observations and the tail are
replaced by new entries every step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contextengine.context.request import Request
from contextengine.context.tokens import estimate_tokens
from contextengine.untrusted import JSONObject

BreakCause = Literal[
    "tools_changed",
    "l1_changed",
    "l2_changed",
    "history_rewritten",
    "compaction",
    "prune",
    "timestamp",
    "request_id",
    "system_prompt_changed",
    "tools_reordered",
    "tool_edited",
    "key_order",
]
"""Why a request stopped sharing its prefix: the one vocabulary of the engine's own monitor
(which part of its layout changed: the first six) and of the profiler reading any client's
requests (``contextengine.measure.break_cause``: ``tools_changed``, ``history_rewritten`` and
the last six, each with its fix)."""

SNIPPET_CHARS = 60


@dataclass(frozen=True)
class CacheBreak:
    """Where and why a request stopped sharing the previous request's persisted prefix."""

    position: int
    cause: BreakCause
    old_snippet: str
    new_snippet: str


@dataclass(frozen=True)
class PrefixReport:
    """Reusable prefix of one request relative to the previous one."""

    request_chars: int
    reusable_chars: int
    cache_break: CacheBreak | None = None

    @property
    def reusable_tokens(self) -> int:
        """Estimated tokens of the reusable prefix."""
        return estimate_tokens(self.reusable_chars)

    def as_dict(self) -> JSONObject:
        """A JSON-ready form for the usage log."""
        out: JSONObject = {
            "request_chars": self.request_chars,
            "reusable_chars": self.reusable_chars,
            "reusable_tokens_est": self.reusable_tokens,
        }
        if self.cache_break is not None:
            out["break"] = self.cache_break.__dict__
        return out


def common_prefix_len(a: str, b: str) -> int:
    """Length of the common prefix of two strings (binary search over C-level compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_prefix_chars(prev: Request, cur: Request) -> tuple[int, int]:
    """``(chars, chunk)``: length of the common prefix and the first chunk that differs.

    Fast when ``cur`` extends ``prev``'s persisted part: that comparison runs on shared
    string objects, so it costs pointer checks, not a character scan.
    """
    p = prev.persisted_chunks
    if len(cur.chunks) >= p and cur.chunks[:p] == prev.chunks[:p]:
        k, chars = p, prev.persisted_chars
    else:
        k, chars = 0, 0
    limit = min(len(prev.chunks), len(cur.chunks))
    while k < limit and prev.chunks[k] == cur.chunks[k]:
        chars += len(prev.chunks[k])
        k += 1
    if k < limit:
        chars += common_prefix_len(prev.chunks[k], cur.chunks[k])
    return chars, k


class PrefixMonitor:
    """Compares each request of a session with the session's previous main request.

    A side call (a summary, a 3-strike reboot) is compared with it too, but never becomes
    the reference and never breaks the cache: it may read only part of the session's prefix
    (a reboot reads the head alone), and the session's cached prefix stays as it was.
    """

    def __init__(self) -> None:
        self._previous: Request | None = None

    @property
    def previous(self) -> Request | None:
        """The session's last main request (the one the provider's cache holds), if any."""
        return self._previous

    def observe(self, request: Request) -> PrefixReport:
        """Record ``request`` and report its reusable prefix and any break."""
        prev = self._previous
        if request.purpose == "main":
            self._previous = request
        total = request.total_chars
        if prev is None:
            return PrefixReport(total, 0)
        chars, chunk = common_prefix_chars(prev, request)
        cache_break = None
        if (
            request.purpose == "main"
            and chunk < prev.persisted_chunks
            and chars < prev.persisted_chars
        ):
            cache_break = CacheBreak(
                position=chars,
                cause=_cause(prev, request, chunk),
                old_snippet=_snippet(prev.chunks[chunk], chars - _start(prev, chunk)),
                new_snippet=_snippet(
                    request.chunks[chunk] if chunk < len(request.chunks) else "",
                    chars - _start(prev, chunk),
                ),
            )
        return PrefixReport(total, chars, cache_break)


def _start(request: Request, chunk: int) -> int:
    return sum(len(c) for c in request.chunks[:chunk])


def _snippet(text: str, at: int) -> str:
    return text[max(0, at - 20) : at + SNIPPET_CHARS - 20]


def _cause(prev: Request, cur: Request, chunk: int) -> BreakCause:
    if chunk == 0:
        return "tools_changed"
    if chunk <= prev.segments.l1:
        return "l1_changed"
    prev_l2 = prev.chunks[2 : 2 + prev.segments.l2]
    cur_l2 = cur.chunks[2 : 2 + cur.segments.l2]
    if prev_l2 != cur_l2:
        return "l2_changed"
    if prev.epoch != cur.epoch:
        return cur.rewrite or "compaction"
    return "history_rewritten"
