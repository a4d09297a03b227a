"""In-process counters of an agent (seed 001 ``getStats``), kept from the events it emits.

Every counter is updated by looking at one event as it leaves ``Agent.stream``, so the
numbers cost a few integer additions per event and can never disagree with what a
consumer of the stream saw. They cover this ``Agent`` object's lifetime (a resumed session
starts from zero); the usage log on disk is the durable record.
"""

from __future__ import annotations

from collections import Counter

from contextengine.agent.events import (
    AgentEvent,
    CompactionEvent,
    PruneEvent,
    ToolResultEvent,
    UsageEvent,
)
from contextengine.untrusted import JSONObject


class AgentStats:
    """Counters of model calls, tokens, cache breaks, rewrites, strikes and tool results."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.input_tokens = 0
        self.cached_tokens = 0
        self.cache_write_tokens = 0
        self.output_tokens = 0
        self.breaks: Counter[str] = Counter()
        self.compactions = 0
        self.prunes = 0
        self.pruned_results = 0
        self.tool_calls: Counter[str] = Counter()
        self.tool_errors: Counter[str] = Counter()

    def observe(self, event: AgentEvent) -> None:
        """Count what ``event`` reports."""
        if isinstance(event, UsageEvent):
            self.calls[event.purpose] += 1
            self.input_tokens += event.input_tokens
            self.cached_tokens += event.cached_tokens
            self.cache_write_tokens += event.cache_write_tokens
            self.output_tokens += event.output_tokens
            if event.cache_break:
                self.breaks[event.cache_break] += 1
        elif isinstance(event, ToolResultEvent):
            self.tool_calls[event.name] += 1
            if event.status != "success":
                self.tool_errors[event.error_class or "error"] += 1
        elif isinstance(event, PruneEvent):
            self.prunes += 1
            self.pruned_results += event.results
        elif isinstance(event, CompactionEvent) and event.stage == "started":
            self.compactions += 1

    def as_dict(self) -> JSONObject:
        """The counters as plain JSON-ready values.

        ``cache_hit_rate`` is cached / input tokens over every call; ``strikes`` counts
        3-strike reboots (one reboot call each).
        """
        return {
            "calls": dict(self.calls),
            "calls_total": sum(self.calls.values()),
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "output_tokens": self.output_tokens,
            "cache_hit_rate": self.cached_tokens / self.input_tokens if self.input_tokens else 0.0,
            "cache_breaks": dict(self.breaks),
            "compactions": self.compactions,
            "prunes": self.prunes,
            "pruned_results": self.pruned_results,
            "strikes": self.calls["reboot"],
            "tool_calls": sum(self.tool_calls.values()),
            "tool_calls_by_name": dict(self.tool_calls),
            "tool_errors": dict(self.tool_errors),
        }
