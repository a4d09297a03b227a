"""The task-status tail (R4.2): objective, steps and focus end every request, never stored."""

from __future__ import annotations

from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.memory.status import TailRecital


class TaskStatusTail(Rule):
    """Recites the plan's status at the end of each request (the focus alone while that
    is all that is new)."""

    def __init__(self, ctx: HarnessContext) -> None:
        super().__init__(ctx)
        self._recital = TailRecital()

    def start_turn(self, user_text: str) -> HookResult:
        """A new turn: the next tail is recited in full."""
        self._recital.new_turn()
        return NOTHING

    def task_status(self) -> str | None:
        """The tail of the next request."""
        state = self.ctx.state
        return self._recital.tail(self.ctx.memory.plan(), state.first_user_text, state.iterations)
