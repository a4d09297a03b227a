"""The working-memory tools (R3.1, R8): ``memory_plan_update`` and ``memory_finding_add``.

They write through ``ToolContext.memory`` (the session's ``WorkingMemory``); the harness
emits the resulting ``memory_update`` events. Reading is plain ``file_read``: the session
folder is an extra root of the workspace.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from contextengine.memory.plan import Plan, PlanUpdate, PlanUpdateError
from contextengine.tools.base import Tool, ToolOutcome
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import Toolset
from contextengine.tools.todo import STATUSES
from contextengine.tools.traits import ToolTraits

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
    """``memory_plan_update``: change task_plan.md (goal, phases and steps, status, decisions)."""

    name: ClassVar[str] = "memory_plan_update"
    traits: ClassVar[ToolTraits] = ToolTraits(category="plan", compressor="other")
    description: ClassVar[str] = (
        "Change task_plan.md, giving only what changes: `phases` replaces the steps, "
        "`step_status` sets steps by number."
    )
    Args: ClassVar[type[BaseModel]] = PlanUpdate

    def run(self, args: PlanUpdate, ctx: ToolContext) -> ToolOutcome:
        """Apply the update and save the plan."""
        memory = ctx.memory
        if memory is None:
            return ToolOutcome.fail("io_error", _NO_MEMORY)
        if args.is_empty():
            return ToolOutcome.fail("invalid_arguments", "give at least one field to change")
        try:
            plan = memory.update_plan(args)
        except PlanUpdateError as exc:
            return ToolOutcome.fail("invalid_arguments", str(exc))
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
        source: str | None = Field(None, description="A file, command or URL.")

    def run(self, args: MemoryFindingAdd.Args, ctx: ToolContext) -> ToolOutcome:
        """Append the finding."""
        memory = ctx.memory
        if memory is None:
            return ToolOutcome.fail("io_error", _NO_MEMORY)
        memory.add_finding(args.title, args.content, args.source)
        title = " ".join(args.title.split())
        return ToolOutcome.ok(f"Recorded finding {title!r} in findings.md.", {"title": title})


def memory_tools() -> list[Tool]:
    """The working-memory tools."""
    return [MemoryFindingAdd(), MemoryPlanUpdate()]


def with_memory_tools(toolset: Toolset) -> Toolset:
    """``toolset`` plus the working-memory tools."""
    tools: list[Tool] = [t for name in toolset.names if (t := toolset.get(name)) is not None]
    return Toolset([*tools, *memory_tools()])
