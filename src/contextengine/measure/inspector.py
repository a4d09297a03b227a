"""The request inspector: each recorded model call, its parts, cache boundaries and breaks.

Joins a session's ``requests.jsonl`` (the requests as sent) with its ``usage.jsonl`` (what
the provider reported and the prefix monitor's verdict), line by line: both are written
together per call. Units: part ranges, ``cached_prefix_predicted`` and break positions
are characters of the request's canonical text; ``cached_prefix_reported`` is the
provider's cached input *tokens*; ``cached_prefix_reported_chars`` converts it to
characters at the request's own chars-per-token ratio (an estimate, for drawing).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contextengine.agent.request_log import RecordedRequest, read_requests
from contextengine.agent.usage_log import UsageRecord
from contextengine.context.request import Segments
from contextengine.errors import ContextEngineError
from contextengine.measure.report import call_cost, call_events, load_usage, usage_report
from contextengine.session.layout import SessionLayout
from contextengine.untrusted import JSONObject, JSONValue

PART_NAMES = ("tools", "system", "l2", "history", "live", "tail", "instruction")


@dataclass(frozen=True)
class Part:
    """A character range ``[start, end)`` of a request's text that one layer produced."""

    name: str
    start: int
    end: int


@dataclass(frozen=True)
class CallView:
    """One model call as the inspector shows it."""

    call: int
    purpose: str
    request: RecordedRequest
    parts: tuple[Part, ...]
    usage: UsageRecord | None

    @property
    def cache_break(self) -> JSONObject | None:
        """The monitor's break ``{cause, position, old, new}``, or ``None``."""
        found = self.usage.prefix.get("break") if self.usage else None
        if not isinstance(found, dict):
            return None
        return {
            "cause": found.get("cause"),
            "position": found.get("position"),
            "old": found.get("old_snippet"),
            "new": found.get("new_snippet"),
        }

    @property
    def reported_chars(self) -> int | None:
        """The reported cached tokens as characters of this request (estimate)."""
        u = self.usage
        if u is None or not u.input_tokens:
            return None
        chars = len(self.request.text())
        return min(chars, round(u.cached_tokens * chars / u.input_tokens))

    def as_dict(self) -> JSONObject:
        """The ``inspect --json`` form of the call."""
        u = self.usage
        return {
            "call": self.call,
            "purpose": self.purpose,
            "parts": [p.__dict__ for p in self.parts],
            "request_chars": len(self.request.text()),
            "cached_prefix_reported": u.cached_tokens if u else None,
            "cached_prefix_reported_chars": self.reported_chars,
            "cached_prefix_predicted": _int(u.prefix.get("reusable_chars")) if u else None,
            "break": self.cache_break,
            "input_tokens": u.input_tokens if u else None,
            "cache_write_tokens": u.cache_write_tokens if u else None,
            "output_tokens": u.output_tokens if u else None,
        }


def request_parts(segments: Segments, chunks: tuple[str, ...]) -> tuple[Part, ...]:
    """The non-empty parts of a request, as character ranges of its text, in text order."""
    counts = (
        ("tools", 1),
        ("system", segments.l1),
        ("l2", segments.l2),
        ("history", segments.history),
        ("live", segments.live),
        ("tail", segments.tail),
        ("instruction", segments.extra),
    )
    parts: list[Part] = []
    chunk = start = 0
    for name, count in counts:
        end = start + sum(len(c) for c in chunks[chunk : chunk + count])
        chunk += count
        if end > start:
            parts.append(Part(name, start, end))
        start = end
    return tuple(parts)


def inspect_session(session_dir: Path) -> list[CallView]:
    """Every recorded call of the session in ``session_dir``; one-line error if none were."""
    path = SessionLayout(session_dir).requests
    if not path.is_file():
        raise ContextEngineError(
            f"{session_dir}: no requests.jsonl here (not a session folder, or "
            "record_requests was off)"
        )
    usage = load_usage(session_dir) if SessionLayout(session_dir).usage_log.is_file() else []
    return [
        CallView(
            call=n,
            purpose=request.purpose,
            request=request,
            parts=request_parts(request.segments, request.chunks),
            usage=usage[n - 1] if n <= len(usage) else None,
        )
        for n, request in enumerate(read_requests(path), start=1)
    ]


def first_difference(old: str, new: str) -> int | None:
    """The first character position where ``old`` and ``new`` differ (``None``: equal)."""
    if old == new:
        return None
    limit = min(len(old), len(new))
    return next((k for k in range(limit) if old[k] != new[k]), limit)


def timeline(session_dir: Path) -> JSONObject:
    """Per call cached / cache-write / uncached tokens, cost and events; the report's totals."""
    records = load_usage(session_dir)
    rows: list[JSONValue] = []
    for n, r in enumerate(records, start=1):
        rows.append(
            {
                "call": n,
                "purpose": r.purpose,
                "cached": r.cached_tokens,
                "cache_write": r.cache_write_tokens,
                "uncached": max(0, r.input_tokens - r.cached_tokens - r.cache_write_tokens),
                "output": r.output_tokens,
                # unknown prices count as 0 here; the totals list those models
                "cost_usd": round(call_cost(r) or 0.0, 6),
                "events": list[JSONValue](call_events(r)),
            }
        )
    return {"calls": rows, "totals": usage_report(session_dir, records).as_dict()}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None
