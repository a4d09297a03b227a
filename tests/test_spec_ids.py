"""Every requirement id the code cites (``R7.4``, ``R8``) is defined in docs/spec.md."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CITED = re.compile(r"\bR\d+(?:\.\d+)?\b")
DEFINED = re.compile(r"^(?:## |- )(R\d+(?:\.\d+)?) ", re.MULTILINE)


def cited_ids() -> dict[str, set[str]]:
    """Requirement id -> the source files (relative to the repo) citing it."""
    cited: dict[str, set[str]] = {}
    for path in sorted((REPO / "src").rglob("*.py")):
        for rid in CITED.findall(path.read_text(encoding="utf-8")):
            cited.setdefault(rid, set()).add(str(path.relative_to(REPO)))
    return cited


def defined_ids() -> set[str]:
    """Section (``## R8``) and row (``- R8.5``) ids of docs/spec.md."""
    return set(DEFINED.findall((REPO / "docs" / "spec.md").read_text(encoding="utf-8")))


def test_spec_defines_sections_and_rows() -> None:
    assert {"R1", "R1.1", "R7.4", "R8.5"} <= defined_ids()


def test_every_cited_requirement_is_in_the_spec() -> None:
    cited = cited_ids()
    assert len(cited) > 20
    missing = {rid: sorted(files) for rid, files in cited.items() if rid not in defined_ids()}
    assert not missing, f"ids cited in src but not defined in docs/spec.md: {missing}"
