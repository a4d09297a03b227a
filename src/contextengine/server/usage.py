"""The usage summary of a session: totals of its ``usage.jsonl`` and the cache hit rate."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contextengine.measure.usage_log import read_usage


@dataclass(frozen=True)
class UsageSummary:
    """Token totals over every model call of a session."""

    calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cache_breaks: int = 0

    @property
    def hit_rate(self) -> float:
        """Share of input tokens read from the prefix cache."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else 0.0

    def as_dict(self) -> dict[str, float | int]:
        """The JSON form, hit rate included."""
        return {**self.__dict__, "hit_rate": round(self.hit_rate, 4)}


def summarize_usage(path: Path) -> UsageSummary:
    """Sum a usage log; a session that made no call yet has all zeros."""
    if not path.exists():
        return UsageSummary()
    records = list(read_usage(path))
    return UsageSummary(
        calls=len(records),
        input_tokens=sum(r.input_tokens for r in records),
        cached_tokens=sum(r.cached_tokens for r in records),
        cache_write_tokens=sum(r.cache_write_tokens for r in records),
        output_tokens=sum(r.output_tokens for r in records),
        cache_breaks=sum(1 for r in records if r.prefix.get("break")),
    )
