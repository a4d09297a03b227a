"""Why a request stopped sharing its prefix with the previous one, in plain words.

Given the first segment where two requests of a conversation differ, the cause is read from
what changed there: the tool list (reordered, one tool edited, tools added or removed), a
dynamic value (a timestamp or a request-specific id in the system prompt or the first
message), only the JSON key order (same content), the system prompt, or an earlier message
(history rewritten: compaction or truncation). Each cause comes with the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextengine.canonical import canonical_json
from contextengine.context.monitor import BreakCause
from contextengine.context.scrub import scrub_report
from contextengine.measure.segments import RequestShape, Segment, tool_name

FIXES: dict[BreakCause, str] = {
    "timestamp": "Move the date or time out of the prompt's prefix: send it in the latest "
    "message (or round it to the day).",
    "request_id": "Keep request-specific ids out of the system prompt and first message: send "
    "them in request metadata or the latest message.",
    "system_prompt_changed": "Keep the system prompt byte-identical across requests; put what "
    "changes in the latest message.",
    "tools_reordered": "Send the tools in one fixed order (e.g. sorted by name) on every request.",
    "tool_edited": "Keep tool definitions fixed for the session; restrict tools with tool_choice "
    "or allowed_tools instead of editing them.",
    "tools_changed": "Keep the tool list fixed for the session; mask tools with tool_choice or "
    "allowed_tools instead of adding or removing them.",
    "key_order": "Serialize tool schemas and tool-call arguments as canonical JSON (sorted keys, "
    "fixed separators).",
    "history_rewritten": "Keep history append-only: compact rarely and all at once instead of "
    "trimming or editing old messages on every request.",
    "l1_changed": "Keep the system prompt byte-identical across requests; put what changes in "
    "the latest message.",
    "l2_changed": "Keep the project context after the system prompt fixed for the session; "
    "refresh it only when history is compacted.",
    "compaction": "Compact rarely and all at once: each compaction starts a new prefix.",
    "prune": "Prune only when the shorter prefix is reused by enough later requests to pay "
    "back the tokens read again.",
}

SNIPPET_BEFORE = 30
SNIPPET_AFTER = 50
_ID_CHARS = re.compile(r"[A-Za-z0-9_\-]")
_HEX_ID = re.compile(r"^[0-9a-fA-F\-]{8,}$")
_TIMESTAMP_KINDS = frozenset({"date", "time"})


@dataclass(frozen=True)
class BreakExplanation:
    """The cause of one break: a code, where, what changed (snippet), why in words, the fix."""

    cause: BreakCause
    message_index: int | None
    description: str
    snippet: str

    @property
    def fix(self) -> str:
        """One sentence: how to keep this part of the prefix stable."""
        return FIXES[self.cause]


def explain_break(
    prev: RequestShape, cur: RequestShape, segment: int, offset: int
) -> BreakExplanation:
    """The cause of a divergence at ``prev.segments[segment]``, char ``offset`` into it."""
    old = prev.segments[segment]
    new = cur.segments[segment] if segment < len(cur.segments) else None
    snippet = _snippet(old.text, new.text if new else "", offset)
    if old.kind == "tool" or (new is not None and new.kind == "tool"):
        cause, words = _tools_cause(prev.tools, cur.tools)
        return BreakExplanation(cause, None, words, snippet)
    where = "the system prompt" if old.kind == "system" else f"message {old.index}"
    early = old.kind == "system" or old is prev.first_message
    index = old.index
    if new is None:
        words = f"history rewritten at message {index}: it and later messages were removed"
        return BreakExplanation("history_rewritten", index, words, snippet)
    if _canonical(old.value) == _canonical(new.value):
        part = "tool arguments" if _has_tool_calls(old.value) else "JSON"
        words = f"non-canonical JSON key order in the {part} of {where}: same content, other order"
        return BreakExplanation("key_order", index, words, snippet)
    dynamic = _dynamic_kinds(old.text, new.text)
    if early and dynamic & _TIMESTAMP_KINDS:
        return BreakExplanation("timestamp", index, f"a timestamp in {where}", snippet)
    if early and (dynamic - _TIMESTAMP_KINDS or _id_changed_at(old.text, new.text, offset)):
        words = f"a request-specific id early in the prompt ({where})"
        return BreakExplanation("request_id", index, words, snippet)
    if old.kind == "system":
        words = f"system prompt changed at character {offset} of {old.label}"
        return BreakExplanation("system_prompt_changed", index, words, snippet)
    how = "changed" if _same_slot(old.value, new.value) else "removed or replaced"
    words = f"history rewritten at message {index}: an earlier message was {how} (compaction or truncation)"
    return BreakExplanation("history_rewritten", index, words, snippet)


def _tools_cause(old: tuple[Segment, ...], new: tuple[Segment, ...]) -> tuple[BreakCause, str]:
    old_tools = {tool_name(s.value) or s.label: _canonical(s.value) for s in old}
    new_tools = {tool_name(s.value) or s.label: _canonical(s.value) for s in new}
    if sorted(old_tools.values()) == sorted(new_tools.values()):
        if list(old_tools) != list(new_tools):
            return "tools_reordered", (
                f"tools reordered: the same {len(new_tools)} tools, now in the order "
                f"{', '.join(new_tools)} (was {', '.join(old_tools)})"
            )
        changed = next(
            (o.label for o, n in zip(old, new) if o.text != n.text), old[0].label if old else ""
        )
        return "key_order", (
            f"non-canonical JSON key order in the schema of tool '{changed}': same content, "
            "other order"
        )
    edited = [
        name for name in new_tools if name in old_tools and new_tools[name] != old_tools[name]
    ]
    if edited:
        return "tool_edited", f"tool '{edited[0]}' edited (its definition changed)"
    added = [name for name in new_tools if name not in old_tools]
    removed = [name for name in old_tools if name not in new_tools]
    parts = [
        f"added {', '.join(added)}" if added else "",
        f"removed {', '.join(removed)}" if removed else "",
    ]
    return "tools_changed", "tools changed: " + "; ".join(p for p in parts if p)


def _canonical(value: Any) -> str:
    """Canonical JSON of ``value`` with JSON held in strings (tool arguments) parsed too."""
    return canonical_json(_parse_nested(value))


def _parse_nested(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _parse_nested(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_parse_nested(v) for v in value]
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _parse_nested(json.loads(value))
        except ValueError:
            return value
    return value


def _has_tool_calls(message: Any) -> bool:
    if not isinstance(message, Mapping):
        return False
    if message.get("tool_calls") or message.get("type") == "function_call":
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_use" for b in content
    )


def _dynamic_kinds(old: str, new: str) -> set[str]:
    """Kinds of dynamic values (date, time, uuid, session id) that differ between the texts."""
    before, after = scrub_report(old), scrub_report(new)
    if before.text != after.text:
        return set()
    return {a.kind for a, b in zip(before.findings, after.findings) if a.value != b.value}


def _id_changed_at(old: str, new: str, offset: int) -> bool:
    """Whether the texts differ at ``offset`` inside an id-like word (letters and digits)."""
    return _looks_like_id(_word_at(old, offset)) and _looks_like_id(_word_at(new, offset))


def _word_at(text: str, offset: int) -> str:
    start = offset
    while start > 0 and _ID_CHARS.match(text[start - 1]):
        start -= 1
    end = offset
    while end < len(text) and _ID_CHARS.match(text[end]):
        end += 1
    return text[start:end]


def _looks_like_id(word: str) -> bool:
    digits = sum(c.isdigit() for c in word)
    letters = sum(c.isalpha() for c in word)
    return len(word) >= 8 and digits >= 2 and (letters >= 2 or bool(_HEX_ID.match(word)))


def _same_slot(old: Any, new: Any) -> bool:
    """Whether ``new`` is ``old`` edited in place (same role, type and call id), not another
    message moved up into its place."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return False
    return all(old.get(k) == new.get(k) for k in ("role", "type", "tool_call_id", "call_id"))


def _snippet(old: str, new: str, offset: int) -> str:
    """``- old`` / ``+ new`` around the first differing character."""
    start = max(0, offset - SNIPPET_BEFORE)
    end = offset + SNIPPET_AFTER

    def clip(text: str) -> str:
        lead = "…" if start > 0 else ""
        tail = "…" if len(text) > end else ""
        return lead + text[start:end] + tail

    return f"- {clip(old)}\n+ {clip(new)}"
