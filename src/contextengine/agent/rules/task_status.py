"""The task-status tail (R4.2): objective, steps and focus end every request, never stored."""

from __future__ import annotations

from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.memory.status import TailRecital


class TaskStatusTail(Rule):
    """Recites the plan's status at the end of each request (the focus alone while that
    is all that is new); a full recital lists up to ``max_errors`` unresolved recent
    errors (seed 001 ``maxPreservedErrors``)."""

    def __init__(self, ctx: HarnessContext, max_errors: int = 0) -> None:
        super().__init__(ctx)
        self._recital = TailRecital()
        self._max_errors = max_errors

    def start_turn(self, user_text: str) -> HookResult:
        """A new turn: the next tail is recited in full."""
        self._recital.new_turn()
        return NOTHING

    def task_status(self) -> str | None:
        """The tail of the next request."""
        state = self.ctx.state
        errors = state.recent_errors[-self._max_errors :] if self._max_errors else []
        plan = self.ctx.memory.plan()
        return self._recital.tail(
            plan,
            state.first_user_text,
            state.iterations,
            errors,
            just_written=state.plan_just_written,
            where=self.ctx.workspace.display(self.ctx.session.directory),
        )
