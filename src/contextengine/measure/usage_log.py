"""The per-session usage log (R1.6): one JSON line per model call."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextengine.context.canonical import canonical_json
from contextengine.context.monitor import PrefixReport
from contextengine.errors import SessionLogError
from contextengine.types import Usage


@dataclass(frozen=True)
class UsageRecord:
    """Usage of one model call with the prefix monitor's verdict on its request."""

    step: int
    purpose: str
    model: str
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    latency_s: float
    prefix: dict[str, Any] = field(default_factory=dict)
    ts: str = ""

    @classmethod
    def of(cls, step: int, purpose: str, usage: Usage, prefix: PrefixReport) -> UsageRecord:
        """Combine a provider's usage and the prefix report of the same request."""
        return cls(
            step=step,
            purpose=purpose,
            model=usage.model,
            input_tokens=usage.input_tokens,
            cached_tokens=usage.cached_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
            latency_s=round(usage.latency_s, 4),
            prefix=prefix.as_dict(),
            ts=datetime.now(UTC).isoformat(timespec="milliseconds"),
        )


class UsageLog:
    """Appends usage records to ``usage.jsonl`` (flushed per line)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: UsageRecord) -> None:
        """Add one record."""
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(canonical_json(asdict(record)) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def read_usage(path: Path) -> Iterator[UsageRecord]:
    """Read a usage log; a torn last line is skipped, a bad line elsewhere is an error."""
    lines = path.read_text(encoding="utf-8").split("\n")
    last = len(lines) - 1
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield UsageRecord(**json.loads(line))
        except (ValueError, TypeError) as exc:
            if n == last:
                return
            raise SessionLogError(f"{path}:{n + 1}: bad usage record ({exc})") from None
