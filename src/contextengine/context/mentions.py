"""``@file`` mentions in user input (R7.5, seed 003 A7/C3).

A mention only adds a reminder to read the file; the file's content is never injected.
An ``@`` inside a fenced code block is code (a decorator, an annotation), not a mention.
"""

from __future__ import annotations

import re

MENTION_PATTERN = re.compile(r"(?<![a-zA-Z0-9])@([a-zA-Z0-9/._-]+(?:\.[a-zA-Z0-9]+)?)")
MAX_MENTIONS = 5
# a CommonMark code fence: ``` or ~~~ (3 or more), to a closing run of the same, or the end
_FENCED_BLOCK = re.compile(
    r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1(?:`*|~*)[ \t]*$|\Z)", re.M | re.S
)

_REMINDER = (
    "<system-reminder>\n"
    "The user mentioned @{path}.\n"
    "You MUST read this file with the Read tool before answering.\n"
    "</system-reminder>"
)
_MORE = "<system-reminder>\n(and {count} more…)\n</system-reminder>"


def find_mentions(text: str) -> list[str]:
    """Return the mentioned paths in order of first appearance, without duplicates.

    A trailing sentence period is not part of a path ("see @a.py." mentions ``a.py``);
    fenced code blocks hold none (Python's ``@property``, Java's ``@Override``).
    """
    seen: dict[str, None] = {}
    for match in MENTION_PATTERN.finditer(_FENCED_BLOCK.sub("\n", text)):
        path = match.group(1).rstrip(".")
        if path and path not in seen:
            seen[path] = None
    return list(seen)


def add_mention_reminders(text: str) -> str:
    """Append one ``<system-reminder>`` per mentioned file (at most 5, then "(and N more…)")."""
    paths = find_mentions(text)
    if not paths:
        return text
    blocks = [_REMINDER.format(path=p) for p in paths[:MAX_MENTIONS]]
    if len(paths) > MAX_MENTIONS:
        blocks.append(_MORE.format(count=len(paths) - MAX_MENTIONS))
    return text + "\n\n" + "\n".join(blocks)
