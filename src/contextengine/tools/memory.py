"""The working-memory tools (R3.1, R8): ``memory_plan_update`` and ``memory_finding_add``.

They write through ``ToolContext.memory`` (the session's ``WorkingMemory``); the harness
emits the resulting ``memory_update`` events. Reading is plain ``file_read``: the session
folder is an extra root of the workspace.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from contextengine.memory.plan import STATUSES, Plan, PlanUpdate
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import Toolset
from contextengine.tools.tool import Tool

_NO_MEMORY = "working memory is off in this session; nothing was written"


def plan_recap(plan: Plan) -> str:
    """``Plan updated: 4 steps (1 done, 1 in_progress, 2 pending). Now: Step 2 - <step>``."""
    steps = plan.steps
    counts = ", ".join(
        f"{n} {status}" for status in STATUSES if (n := sum(1 for s in steps if s.status == status))
    )
    recap = f"Plan updated: {len(steps)} steps" + (f" ({counts})." if counts else ".")
    current = plan.current_index
    return recap + (
        f" Now: Step {current + 1} - {steps[current].text}" if current is not None else ""
    )


class MemoryPlanUpdate:
    """``memory_plan_update``: set the goal or blockers of task_plan.md, add decisions.

    The steps are ``todo_write``'s alone: one way to write them keeps both tool
    definitions, paid on every request, short.
    """

    name: ClassVar[str] = "memory_plan_update"
    traits: ClassVar[ToolTraits] = ToolTraits(category="plan", compressor="other")
    description: ClassVar[str] = "Set the goal or blockers of task_plan.md, or add decisions."

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

        goal: str | None = None
        blockers: str | None = None
        add_decisions: tuple[str, ...] | None = None

    def run(self, args: MemoryPlanUpdate.Args, ctx: ToolContext) -> ToolOutcome:
        """Apply the update and save the plan."""
        memory = ctx.memory
        if memory is None:
            return ToolOutcome.fail("io_error", _NO_MEMORY)
        update = PlanUpdate(**args.model_dump())
        if update.is_empty():
            return ToolOutcome.fail("invalid_arguments", "give at least one field to change")
        plan = memory.update_plan(update)
        recap = plan_recap(plan)
        return ToolOutcome.ok(recap, {"recap": recap, "steps": len(plan.steps)})


class MemoryFindingAdd:
    """``memory_finding_add``: append a timestamped finding to findings.md."""

    name: ClassVar[str] = "memory_finding_add"
    traits: ClassVar[ToolTraits] = ToolTraits(category="memory", compressor="other")
    description: ClassVar[str] = "Record what you learned in findings.md."

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

        title: str = Field(min_length=1)
        content: str = Field(min_length=1)
        source: str | None = None

    def run(self, args: MemoryFindingAdd.Args, ctx: ToolContext) -> ToolOutcome:
        """Append the finding."""
        memory = ctx.memory
        if memory is None:
            return ToolOutcome.fail("io_error", _NO_MEMORY)
        memory.add_finding(args.title, args.content, args.source)
        title = " ".join(args.title.split())
        return ToolOutcome.ok(f"Recorded finding {title!r} in findings.md.", {"title": title})


def memory_tools() -> list[Tool[Any]]:
    """The working-memory tools."""
    return [MemoryFindingAdd(), MemoryPlanUpdate()]


def with_memory_tools(toolset: Toolset) -> Toolset:
    """``toolset`` plus the working-memory tools."""
    return toolset.plus(*memory_tools())
