"""Hypothesis strategies for session entries."""

from __future__ import annotations

from hypothesis import strategies as st

from contextengine import (
    AssistantEntry,
    ErrorEntry,
    NoteEntry,
    ReminderEntry,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)

texts = st.text(min_size=0, max_size=40)


@st.composite
def steps(draw: st.DrawFn) -> list:
    """One agent step: a user turn, an assistant reply with its tool results, or a note."""
    kind = draw(st.sampled_from(["user", "tool_step", "final", "note", "reminder", "error"]))
    n = draw(st.integers(0, 10_000))
    if kind == "user":
        return [UserEntry(text=draw(texts))]
    if kind == "final":
        return [AssistantEntry(text=draw(texts))]
    if kind == "note":
        return [NoteEntry(source="lessons", text=draw(texts))]
    if kind == "reminder":
        return [ReminderEntry(rule="two_action", text=draw(texts))]
    if kind == "error":
        return [ErrorEntry(error_class="invalid_reply", message=draw(texts))]
    calls = [
        ToolCallRecord(
            id=f"c{n}_{k}",
            name=draw(st.sampled_from(["file_read", "shell_exec"])),
            arguments_json="{}",
        )
        for k in range(draw(st.integers(1, 3)))
    ]
    results = [
        ToolResultEntry(
            call_id=c.id,
            tool_name=c.name,
            status=draw(st.sampled_from(["success", "error"])),
            content=draw(texts),
        )
        for c in calls
    ]
    return [AssistantEntry(text=draw(texts), tool_calls=tuple(calls)), *results]
