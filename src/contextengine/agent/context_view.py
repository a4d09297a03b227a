"""What the next request holds, part by part (the CLI's ``/context``).

A request's chunks are the tool list, then one per message (``Request``); ``Segments``
says how many messages each layer gave. History messages that render a compaction
summary are their own part. The cached share of a part is the share of its characters
inside the prefix the next request shares with the last main request (the part the
provider's cache can serve).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from contextengine.context.monitor import common_prefix_chars
from contextengine.context.request import Request


@dataclass(frozen=True)
class ContextPart:
    """One part of a request: its tokens (the provider's units) and how many are cached."""

    name: str
    tokens: int
    cached_tokens: int


PART_NAMES = ("tools", "system", "CODE_LAW", "history", "summary", "live", "tail", "extra")
"""The parts in request order (``live``: the newest tool output shown whole)."""


def context_parts(
    request: Request,
    previous: Request | None,
    summary_chunks: Collection[str],
    tokens_of: Callable[[str], int],
) -> tuple[ContextPart, ...]:
    """The parts of ``request`` with their tokens (``tokens_of`` a chunk) and cached tokens
    (against ``previous``); ``summary_chunks``: the rendered compaction summaries."""
    cached_chars = _shared_prefix(previous, request)
    tokens = dict.fromkeys(PART_NAMES, 0)
    cached = dict.fromkeys(PART_NAMES, 0.0)
    start = 0
    for chunk, part in zip(request.chunks, _part_of_each_chunk(request), strict=True):
        if part == "history" and chunk in summary_chunks:
            part = "summary"
        size = tokens_of(chunk)
        inside = min(max(cached_chars - start, 0), len(chunk))
        tokens[part] += size
        cached[part] += size * inside / len(chunk) if chunk else 0.0
        start += len(chunk)
    return tuple(
        ContextPart(name, tokens[name], round(cached[name])) for name in PART_NAMES if tokens[name]
    )


def _part_of_each_chunk(request: Request) -> list[str]:
    s = request.segments
    counts = (
        ("system", s.l1),
        ("CODE_LAW", s.l2),
        ("history", s.history),
        ("live", s.live),
        ("tail", s.tail),
        ("extra", s.extra),
    )
    return ["tools", *(name for name, count in counts for _ in range(count))]


def _shared_prefix(previous: Request | None, request: Request) -> int:
    return 0 if previous is None else common_prefix_chars(previous, request)[0]
