"""The per-session usage log (R1.6): one JSON line per model call."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path

from contextengine.canonical import canonical_json
from contextengine.context.monitor import PrefixReport
from contextengine.errors import SessionLogError
from contextengine.types import Usage
from contextengine.untrusted import JSONObject, parse_json

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UsageRecord:
    """Usage of one model call with the prefix monitor's verdict on its request, and the
    provider's own verdict (``cache_diagnosis``: ``reason``, ``missed_input_tokens``) when
    it gave one."""

    step: int
    purpose: str
    model: str
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    latency_s: float
    prefix: JSONObject = field(default_factory=dict)
    ts: str = ""
    cache_diagnosis: JSONObject | None = None

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
            cache_diagnosis=None
            if usage.cache_diagnosis is None
            else asdict(usage.cache_diagnosis),
        )


class UsageLog:
    """Hands usage records, one JSON line each, to the session's store (``usage.jsonl`` in
    the file store)."""

    def __init__(self, keep: Callable[[str], None]) -> None:
        self._keep = keep

    def append(self, record: UsageRecord) -> None:
        """Add one record (without ``cache_diagnosis`` when the provider gave none)."""
        line = asdict(record)
        if record.cache_diagnosis is None:
            del line["cache_diagnosis"]
        self._keep(canonical_json(line))


def read_usage(path: Path) -> Iterator[UsageRecord]:
    """Read a usage log; a torn last line is skipped with a warning, a bad line elsewhere is
    an error naming the file and the line."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SessionLogError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise SessionLogError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return parse_usage(text.split("\n"), str(path))


def parse_usage(lines: Sequence[str], where: str) -> Iterator[UsageRecord]:
    """Usage records from their lines (as a store keeps them); a bad last line is skipped with
    a warning, a bad line elsewhere is an error naming ``where`` and the line."""
    last = len(lines) - 1
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield _record(line)
        except ValueError as exc:
            if n == last:
                logger.warning("%s:%d: torn last usage record skipped (%s)", where, n + 1, exc)
                return
            raise SessionLogError(f"{where}:{n + 1}: bad usage record ({exc})") from None


_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "step": int,
    "purpose": str,
    "model": str,
    "input_tokens": int,
    "cached_tokens": int,
    "cache_write_tokens": int,
    "output_tokens": int,
    "latency_s": (int, float),
    "prefix": dict,
    "ts": str,
    "cache_diagnosis": (dict, type(None)),
}


def _record(line: str) -> UsageRecord:
    """One line as a record; ``ValueError`` names what is wrong with it."""
    data = parse_json(line)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    known = {f.name: f for f in fields(UsageRecord)}
    values = {name: value for name, value in data.items() if name in known}
    for name, value in values.items():
        expected = _FIELD_TYPES.get(name, object)
        if not isinstance(value, expected) or isinstance(value, bool):
            raise ValueError(f"field {name!r} has the wrong type")
    missing = [
        name
        for name, f in known.items()
        if name not in values and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise ValueError(f"missing fields {missing}")
    return UsageRecord(**values)
