"""The provider-neutral request a builder produces: messages, tools, breakpoints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contextengine.toolkit.mask import ToolMask
from contextengine.types import Message, ToolDefinition

Purpose = Literal["main", "summary", "reboot"]


@dataclass(frozen=True)
class Segments:
    """How many messages each layer contributes, in request order."""

    l1: int
    l2: int
    history: int
    live: int
    tail: int
    extra: int

    @property
    def persisted(self) -> int:
        """Messages that come from the stable prefix and the record (L1 + L2 + history)."""
        return self.l1 + self.l2 + self.history


@dataclass(frozen=True)
class Request:
    """One model request, built from (static prefix, record, live input, task status).

    ``chunks`` is the request's canonical text split into pieces: chunk 0 is the tool
    list, chunk ``k + 1`` is message ``k``. The concatenation is what the prefix monitor
    and the benchmarks compare. ``epoch`` counts the record's rewrites (compactions and
    prunings) and ``rewrite`` names the latest. ``deferred_tools`` names tools a provider
    with its own tool search may leave out of the prompt until the model finds them (R18.2;
    Anthropic's ``defer_loading``); other providers list them like the rest. Treat every list
    and dict here as read-only.
    """

    session_id: str
    purpose: Purpose
    _tools: tuple[ToolDefinition, ...]
    _messages: tuple[Message, ...]
    chunks: tuple[str, ...]
    segments: Segments
    persisted_chars: int
    epoch: int
    mask: ToolMask | None = None
    mark_breakpoints: bool = True
    rewrite: Literal["compaction", "prune"] | None = None
    deferred_tools: frozenset[str] = frozenset()

    @property
    def messages(self) -> list[Message]:
        """Chat messages in OpenAI format: L1, L2, history, live observations, tail."""
        return list(self._messages)

    @property
    def tools(self) -> list[ToolDefinition]:
        """Tools in OpenAI function format, sorted by name; identical for a whole session."""
        return list(self._tools)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Names of the tools, in request order."""
        return tuple(t["function"]["name"] for t in self._tools)

    @property
    def breakpoints(self) -> list[int]:
        """Message indices (inclusive) ending L1, L2 and the persisted history, deduplicated."""
        if not self.mark_breakpoints:
            return []
        s = self.segments
        ends = [s.l1 - 1, s.l1 + s.l2 - 1, s.persisted - 1]
        return sorted({e for e in ends if e >= 0})

    @property
    def persisted_chunks(self) -> int:
        """Chunks covering tools + L1 + L2 + history."""
        return 1 + self.segments.persisted

    @property
    def total_chars(self) -> int:
        """Length of the request's canonical text."""
        return self.persisted_chars + sum(len(c) for c in self.chunks[self.persisted_chunks :])

    def text(self) -> str:
        """The request's canonical text (tools, then every message)."""
        return "".join(self.chunks)
