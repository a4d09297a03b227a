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

TODO_TOOL_NAMES = frozenset(
    {"todo", "todo_write", "todowrite", "write_todos", "update_plan", "task_tracker"}
)
"""Tool names (any letter case) whose list of items with a text and a status is the model's
plan: this tool's, Claude Code's and deepagents' (``todos`` of ``content``), Gemini CLI's
(``todos`` of ``description``), Codex's ``update_plan`` (``plan`` of ``step``) and the
OpenHands SDK's ``task_tracker`` (``task_list`` of ``title``)."""
_PLAN_LISTS = ("todos", "plan", "task_list")
_ITEM_TEXTS = ("content", "description", "step", "title", "text", "task")
_STATUS_NAMES: Mapping[str, TodoStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "done",
    "completed": "done",
    "failed": "failed",
    "todo": "pending",
}
_DROPPED = frozenset({"cancelled", "canceled"})  # a step no longer planned


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


def plan_items(arguments: Mapping[str, Any]) -> list[tuple[str, TodoStatus]] | None:
    """Another harness's plan-tool arguments as (text, status) pairs: the first list of
    ``_PLAN_LISTS`` they hold, each item's first non-empty text of ``_ITEM_TEXTS`` (``completed`` is
    done, ``todo`` and an unknown status pending, a cancelled step left out, an unreadable
    item skipped); ``None`` for a call that writes no list (``task_tracker``'s ``view``)."""
    items = next((v for key in _PLAN_LISTS if isinstance(v := arguments.get(key), list)), None)
    if items is None:
        return None
    out: list[tuple[str, TodoStatus]] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        text = next(
            (t for key in _ITEM_TEXTS if isinstance(t := item.get(key), str) and t.strip()), ""
        )
        status = str(item.get("status", "pending")).lower()
        if text.strip() and status not in _DROPPED:
            out.append((text, _STATUS_NAMES.get(status, "pending")))
    return out
