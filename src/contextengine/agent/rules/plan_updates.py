"""Plan updates: a plan tool's todo list becomes the plan in task_plan.md (R4.1)."""

from __future__ import annotations

from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import Rule
from contextengine.toolkit.base import ToolOutcome
from contextengine.types import ToolCall


class PlanUpdates(Rule):
    """Applies the ``todos`` a successful plan tool returns (a plan tool that writes the
    plan itself returns none)."""

    def after_tool(
        self, call: ToolCall, outcome: ToolOutcome, error_class: str | None
    ) -> HookResult:
        """Apply the todo list of a plan tool's result."""
        if (
            self.ctx.traits(call.name).category == "plan"
            and outcome.status == "success"
            and "todos" in outcome.data
        ):
            todos = outcome.data["todos"]
            self.ctx.memory.apply_todos((t["content"], t["status"]) for t in todos)
        return NOTHING
