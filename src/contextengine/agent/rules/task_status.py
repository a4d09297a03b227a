"""The task-status tail (R4.2): objective, steps and focus end every request, never stored."""

from __future__ import annotations

from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.context.tokens import count_tokens
from contextengine.memory.plan import Plan
from contextengine.memory.status import TailRecital, errors_block, task_status
from contextengine.types import ToolCall


class TaskStatusTail(Rule):
    """Recites the plan's status at the end of each request (the focus alone while that
    is all that is new); a full recital lists up to ``max_errors`` unresolved recent
    errors (seed 001 ``maxPreservedErrors``).

    While the history is shorter than ``in_view_chars`` (``Config.recite_after_chars``)
    the objective, the model's own plan call and every error are in its recent view, where
    reciting them would only be paid for: the tail is the focus line, and after a
    high-risk call the full status without the errors block (R8.2). Lost-in-the-middle,
    what the full status is for, grows with the history's length.

    A plan every step of which was finished when a turn began is not that turn's plan:
    until the model writes another, the tail gives the turn's request as the objective
    and says there is no plan, instead of telling the model that all is done.

    The user messages since the model last replied all stand just before a turn's first
    request (a turn whose call failed left its message unanswered): an objective that is
    one of them is in view there, and that request leaves it out.

    The request right after a high-risk call (a shell command, a deletion, an overwrite,
    a tool declaring itself destructive) recites in full (R8.2): the plan is re-read
    before the next decision, as nothing may stand between a call and its result.

    The tail is paid uncached on every request it ends, from the session's overhead
    allowance (``ctx.allowance``): until that affords a full status, no request has a tail
    (a short run's whole history is in view anyway) and the recital is not consulted, so
    the first tail it affords is the full status. The full status after a high-risk call is
    a safety rule, not a reminder: it is paid whatever the allowance holds.
    """

    def __init__(self, ctx: HarnessContext, max_errors: int = 0, in_view_chars: int = 0) -> None:
        super().__init__(ctx)
        self._recital = TailRecital(plannable=ctx.plannable)
        self._max_errors = max_errors
        self._in_view_chars = in_view_chars
        self._finished: Plan | None = None  # the plan that was all done when the turn began
        self._request = ""  # the turn's user text
        self._risk_ran = False  # a call of the batch under way is high-risk
        self._after_risk = False  # this step's request follows a high-risk call

    def start_turn(self, user_text: str) -> HookResult:
        """A new turn: the next tail is recited in full."""
        self._recital.new_turn()
        plan = self.ctx.memory.plan()
        self._finished = plan if plan.steps and plan.current_index is None else None
        self._request = user_text
        return NOTHING

    def before_step(self, step: int) -> HookResult:
        """A step begins: its tail recites in full if the last batch had a high-risk call."""
        self._after_risk, self._risk_ran = self._risk_ran, False
        return NOTHING

    def before_tool(self, call: ToolCall) -> HookResult:
        """Note a high-risk call: the next request's tail is the full status."""
        self._risk_ran = self._risk_ran or self.ctx.is_high_risk(call)
        return NOTHING

    def task_status(self) -> str | None:
        """The tail of the next request."""
        state = self.ctx.state
        errors = state.recent_errors[-self._max_errors :] if self._max_errors else []
        plan = self.ctx.memory.plan()
        objective_text = state.first_user_text
        if self._finished is not None and plan == self._finished:
            plan, objective_text = Plan(), self._request
        allowance = self.ctx.allowance
        if allowance is not None and not self._after_risk:
            full = task_status(plan, objective_text, plannable=self.ctx.plannable)
            if not allowance.affords(count_tokens(full + errors_block(errors))):
                return None
        tail = self._recital.tail(
            plan,
            objective_text,
            state.iterations,
            errors,
            just_written=state.plan_just_written,
            where=self._memory_folder(),
            objective_is_request=not plan.goal and objective_text in state.unanswered,
            high_risk=self._after_risk,
            in_view=state.history_chars < self._in_view_chars,
        )
        if tail is not None and allowance is not None:
            allowance.pay(count_tokens(tail))
        return tail

    def _memory_folder(self) -> str | None:
        """The memory files' folder, for the tail to name: from the start in a session
        that can plan; in one that cannot (no tool of it writes the plan), once the
        2-action rule asks the model to record findings in ``findings.md``. Named before,
        it would cost a tail on the run's first request, and be out of view by then."""
        if not (self.ctx.plannable or self.ctx.state.two_action_given):
            return None
        return self.ctx.workspace.display(self.ctx.session.directory)
