"""Reference recall: does a request still hold what the agent goes on to use?

For each recorded step, the identifiers in its text and tool-call arguments that occurred
in an earlier observation, and not in the system prompt or task, are its references.
Recall is the share of them present verbatim in the request that step answered; a
strategy's recall is the mean over steps that have any. It guards against compression
that saves tokens by hiding what the agent needed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextengine.measure.trajectory import Trajectory

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{5,}")


def step_references(trajectory: Trajectory) -> list[frozenset[str]]:
    """Per step, the identifiers it uses that it can only have learned from observations."""
    given = trajectory.system + "\n" + trajectory.task
    seen = ""
    refs: list[frozenset[str]] = []
    for step in trajectory.steps:
        texts = [step.assistant]
        for call in step.tool_calls:
            texts.extend(_strings(call.arguments))
        found = {i for t in texts for i in IDENTIFIER.findall(t)}
        refs.append(frozenset(i for i in found if i in seen and i not in given))
        seen += "\n" + step.observation
    return refs


def request_text(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> str:
    """Every string in a request's messages and tools, one per line (decoded, not JSON)."""
    return "\n".join([*_strings(list(messages)), *_strings(list(tools))])


def step_recall(references: frozenset[str], text: str) -> float | None:
    """The share of ``references`` found in ``text``; ``None`` when there are none."""
    if not references:
        return None
    return sum(1 for r in references if r in text) / len(references)


def mean_recall(values: Sequence[float | None]) -> float | None:
    """The mean over steps that have references; ``None`` when no step has any."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)
