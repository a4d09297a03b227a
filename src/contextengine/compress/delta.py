"""A tool result told as its difference from an earlier one history shows whole.

Agents run the same command again (the tests after an edit, a reproduction script) and
read the same file again; the new output is then mostly lines the context already holds.
History can carry only the lines that differ, as a unified diff from that earlier result:
nothing is lost while the earlier result is in view, and the full text is saved to the
artifacts like any other shortened result (R3.3). Only a result shown whole can be a base,
so a difference is never taken from another difference.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from contextengine.session.entries import AssistantEntry, ToolResultEntry
from contextengine.session.session import Session
from contextengine.types import ToolCall

DELTA_WINDOW = 20  # the newest results shown whole a difference may be taken from
DELTA_MIN_CHARS = 300  # a shorter result stays as it is: its difference would save too little
DELTA_MAX_CHARS = 100_000  # larger texts are not compared: a diff of them costs too much time
DELTA_MIN_SHARED = 0.5  # the share of a result's characters a base must already hold


@dataclass(frozen=True)
class ShownResult:
    """An earlier tool result history shows whole: its log index, tool, text, how many
    tool results back it is (1: the previous one), the call as made (``None`` when
    history no longer holds it), and whether it failed (its error is then in ``text``)."""

    index: int
    tool_name: str
    text: str
    back: int
    call: ToolCall | None = None
    failed: bool = False


def shown_results(session: Session, most: int = DELTA_WINDOW) -> list[ShownResult]:
    """The newest ``most`` tool results ``session``'s history shows whole, newest first."""
    records = session.records
    found: list[tuple[int, ToolResultEntry, int]] = []  # log index, result, how far back
    calls: dict[str, ToolCall] = {}
    wanted: set[str] = set()  # the found results' call ids not met yet
    back = 0
    # Stops at the reply holding the calls of the newest ``most`` results, converting only
    # those calls: the cost per result is bounded by the window and the calls per reply,
    # not by the history (a 10,000-call reply made this quadratic).
    for record in reversed(session.live):
        entry, appended = record.entry, records[record.index]
        if isinstance(entry, AssistantEntry) and isinstance(appended.entry, AssistantEntry):
            # the calls as made: a pruned reply's stand-in has its long arguments stubbed
            for made in appended.entry.tool_calls:
                if made.id in wanted:
                    calls[made.id] = made.as_call()
                    wanted.discard(made.id)
            if len(found) == most and not wanted:
                break
        elif isinstance(entry, ToolResultEntry) and len(found) < most:
            back += 1
            # a pruned or compacted result's live record is a stand-in, not the one appended
            if entry.full_ref is None and appended is record:
                found.append((record.index, entry, back))
                wanted.add(entry.call_id)
    return [
        ShownResult(
            index,
            result.tool_name,
            result.content,
            back,
            calls.get(result.call_id),
            failed=result.status == "error",
        )
        for index, result, back in found
    ]


def closest(text: str, earlier: Sequence[ShownResult]) -> ShownResult | None:
    """The earlier result holding the most of ``text``'s lines (by characters), if it
    holds at least ``DELTA_MIN_SHARED`` of them; the newest among equals."""
    if not DELTA_MIN_CHARS <= len(text) <= DELTA_MAX_CHARS:
        return None
    lines = Counter(text.splitlines(keepends=True))
    best: ShownResult | None = None
    best_shared = int(len(text) * DELTA_MIN_SHARED) - 1
    for result in earlier:
        if len(result.text) > DELTA_MAX_CHARS:
            continue
        held = Counter(result.text.splitlines(keepends=True))
        shared = sum(len(line) * min(n, held[line]) for line, n in lines.items())
        if shared > best_shared:
            best, best_shared = result, shared
    return best


def diff_hunks(base: str, text: str) -> str:
    """The unified diff turning ``base`` into ``text``, without context lines or file
    headers: ``@@ -a,b +c,d @@`` and the lines removed (``-``) and added (``+``)."""
    lines = difflib.unified_diff(base.splitlines(), text.splitlines(), n=0, lineterm="")
    return "\n".join(line for line in lines if not line.startswith(("---", "+++")))


def delta_text(base: ShownResult, title: str, text: str, path: str) -> str:
    """``text`` as its difference from ``base`` (``title``: what ran to produce it)."""
    which = "the previous result" if base.back == 1 else f"the result {base.back} back"
    what = f"{which} ({title})"
    hunks = diff_hunks(base.text, text)
    if not hunks:
        return f"Same output as {what}. Saved at {path}."
    return f"Same output as {what} except these lines (diff from it; saved at {path}):\n{hunks}"
