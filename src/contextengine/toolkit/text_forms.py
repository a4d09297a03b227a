"""Text forms a tool's observation and its history form share (``contextengine.compress``
writes the short form of an output in the same lines the tool wrote the full one)."""

from __future__ import annotations

from typing import Any


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (``\\r`` kept), without the empty piece after a final newline."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def number_lines(lines: list[str], first: int) -> list[str]:
    """Lines numbered from ``first``, each number right-aligned to the width of the last
    one and followed by a tab (``cat -n`` without its fixed six-column padding, which
    every later request would pay for again)."""
    width = len(str(first + len(lines) - 1))
    return [f"{n:>{width}}\t{line}" for n, line in enumerate(lines, first)]


def format_ls_entry(entry: dict[str, Any]) -> str:
    """One listing line: ``name/`` for a dir, ``name  (N bytes)``, ``name -> target``."""
    if entry["type"] == "dir":
        return f"{entry['name']}/"
    if entry["type"] == "link":
        return f"{entry['name']} -> {entry.get('target', '?')}"
    size = "?" if entry.get("size") is None else entry["size"]
    return f"{entry['name']}  ({size} bytes)"
