"""Scrubbing of dynamic values from the stable prefix (R1.1).

A date, a clock time, a UUID or a session id in a system prompt changes on every run and
breaks the provider's prefix cache from that byte on. They are replaced by fixed
placeholders; each replaced value is reported so a user learns their prompt had one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SESSION = re.compile(
    r"\bsession(?:[ _-]?id|Id|ID)\b\s*[:=]\s*(?!\[SESSION\])[\"']?[^\s\"',;)\]}]+[\"']?",
    re.IGNORECASE,
)
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?"
    r"(?![\d])"
)
_TIME = re.compile(r"(?<![\d:])\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?![\d:])")
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)

# Order matters: a session id may itself be a UUID, and a timestamp contains a time.
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("session_id", _SESSION, "session_id: [SESSION]"),
    ("uuid", _UUID, "[UUID]"),
    ("date", _DATE, "[DATE]"),
    ("time", _TIME, "[TIME]"),
)


@dataclass(frozen=True)
class ScrubFinding:
    """One dynamic value that was replaced: its kind, the original text and the placeholder."""

    kind: str
    value: str
    placeholder: str


@dataclass(frozen=True)
class ScrubResult:
    """The scrubbed text and what was replaced in it."""

    text: str
    findings: tuple[ScrubFinding, ...]


def scrub_report(text: str) -> ScrubResult:
    """Scrub ``text`` and report every replaced value, in rule order."""
    findings: list[ScrubFinding] = []
    for kind, pattern, placeholder in _RULES:

        def _replace(match: re.Match[str], kind: str = kind, placeholder: str = placeholder) -> str:
            findings.append(ScrubFinding(kind, match.group(0), placeholder))
            return placeholder

        text = pattern.sub(_replace, text)
    return ScrubResult(text, tuple(findings))


def scrub_dynamic(text: str) -> str:
    """Replace dates, times, UUIDs and session ids in ``text`` with fixed placeholders."""
    return scrub_report(text).text
