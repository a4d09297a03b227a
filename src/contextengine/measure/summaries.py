"""The simulated summary every replayed compaction gets, the engine's and each policy's.

A summary a strategy would ask a model for is simulated once for all (docs/baselines.md):
it holds the identifiers of the span it replaces, newest first, deduplicated, within the
token budget that strategy gives its summary: an optimistic summary, so that no strategy's
recall is lost to a weaker stand-in than another's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextengine.measure.recall import IDENTIFIER, request_text


def identifier_summary(
    heading: str,
    span: Sequence[Mapping[str, Any]],
    count: Callable[[str], int],
    budget: int,
) -> str:
    """``heading``, then the identifiers of ``span``'s messages, newest first, as many as
    fit in ``budget`` tokens with the heading (``count`` counts tokens)."""
    left = budget - count(heading)
    kept: list[str] = []
    seen: set[str] = set()
    for message in reversed(span):
        for name in reversed(IDENTIFIER.findall(request_text([message], []))):
            if name in seen:
                continue
            seen.add(name)
            cost = count(name) + 1
            if cost > left:
                return "\n".join([heading, " ".join(kept)])
            left -= cost
            kept.append(name)
    return "\n".join([heading, " ".join(kept)])
