"""``todo_write``: the model's plan as a todo list (R4.1).

The tool only validates and echoes the list; the agent harness applies it to the plan
file, so tools never touch the session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from contextengine.memory.plan import STATUSES, TodoStatus
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext

TODO_TOOL_NAMES = frozenset({"todo", "todo_write", "todowrite", "write_todos"})
"""Tool names (any letter case) whose ``todos`` argument, items with content and status, is
the model's plan: this tool's and the ones other harnesses and frameworks name alike."""
_STATUS_NAMES: Mapping[str, TodoStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "done",
    "completed": "done",
    "failed": "failed",
}


class TodoItem(BaseModel):
    """One step of the plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = Field(min_length=1)
    status: TodoStatus


class TodoWrite:
    """``todo_write``: replace the todo list with the given one."""

    name: ClassVar[str] = "todo_write"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="plan", compressor="todo")
    description: ClassVar[str] = "Replace the todo list (your plan) with this full list."

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

        todos: list[TodoItem]

    def run(self, args: TodoWrite.Args, ctx: ToolContext) -> ToolOutcome:
        """Return the list as data and a one-line recap."""
        todos = [item.model_dump() for item in args.todos]
        recap = todo_recap(args.todos)
        return ToolOutcome.ok(recap, {"todos": todos, "recap": recap})


def todo_recap(todos: list[TodoItem]) -> str:
    """``Todo list updated: 4 steps (1 done, 1 in_progress, 2 pending). Now: <step>``."""
    counts = ", ".join(
        f"{n} {status}" for status in STATUSES if (n := sum(1 for t in todos if t.status == status))
    )
    recap = f"Todo list updated: {len(todos)} steps" + (f" ({counts})." if counts else ".")
    current = next((t.content for t in todos if t.status == "in_progress"), None)
    return recap + (f" Now: {current}" if current else "")


def todo_items(items: Any) -> list[tuple[str, TodoStatus]]:
    """Another harness's ``todos`` argument as (text, status) pairs (``completed`` is done,
    an unknown status pending); unreadable items are skipped."""
    out: list[tuple[str, TodoStatus]] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        text = item.get("content") or item.get("text") or item.get("task")
        status = _STATUS_NAMES.get(str(item.get("status", "pending")).lower(), "pending")
        if isinstance(text, str) and text.strip():
            out.append((text, status))
    return out
