"""The text layout of ``findings.md`` and ``progress.md`` (seed 004 §2.2, §2.3).

Timestamps are fine here: these files are read on demand and never part of the cached
prefix. Section titles start with ``## [time]`` so a file splits back into its entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

FINDINGS_TEMPLATE = "# Research Findings\n"
PROGRESS_TEMPLATE = "# Execution Progress Log\n"

Clock = Callable[[], datetime]

_SECTION = re.compile(r"^## (?:\[[^\]]*\]\s*)?(.*)$", re.MULTILINE)


def utc_now() -> datetime:
    """The current time in UTC (the default clock)."""
    return datetime.now(UTC)


def stamp(moment: datetime) -> str:
    """``2026-01-12 10:30:00 UTC``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def section(moment: datetime, title: str, body: str = "") -> str:
    """One ``## [time] title`` section, with a blank line before it."""
    text = f"\n## [{stamp(moment)}] {title}\n"
    return text + (body.rstrip("\n") + "\n" if body.strip() else "")


def finding_section(moment: datetime, title: str, content: str, source: str | None) -> str:
    """A findings.md entry: title, optional source, then the finding itself."""
    body = (f"**Source**: {source}\n" if source else "") + content.strip()
    return section(moment, title, body)


def fence(text: str) -> str:
    """``text`` in a code fence that its own backticks cannot close."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text.rstrip()}\n{ticks}"


def split_sections(text: str) -> list[tuple[str, str]]:
    """``(title, body)`` of every ``##`` section (titles without their timestamp)."""
    found = list(_SECTION.finditer(text))
    out = []
    for k, match in enumerate(found):
        end = found[k + 1].start() if k + 1 < len(found) else len(text)
        out.append((match.group(1).strip(), text[match.end() : end].strip()))
    return out
