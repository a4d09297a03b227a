"""Plan recitation (R8.2): the plan file is recited into history when it is not in view.

That is at session start, after a compaction, and before the next model call after a
high-risk tool (a shell command, a deletion, an overwrite): the recital waits for the
batch's results, as the native wire formats allow no message between an assistant
message and its tool results. An empty plan is not recited: there is nothing to read
(the tail says there is no plan), and the model's own plan call keeps the plan it writes
in view. Each recital says where the memory files are; a plan longer than its share of
the window is recited up to that share (``fit_plan``), the rest left in the file.
"""

from __future__ import annotations

from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.memory.rules import PLAN_RULE, RecitationReason, plan_reminder_text
from contextengine.session.entries import ReminderEntry
from contextengine.types import ToolCall


class PlanRecitation(Rule):
    """Recites the plan at session start, after a compaction and after high-risk tools."""

    def __init__(self, ctx: HarnessContext, plan_tokens: int) -> None:
        super().__init__(ctx)
        self._plan_tokens = plan_tokens
        self._started = False
        self._risk_pending = False

    def start_turn(self, user_text: str) -> HookResult:
        """Recite the plan at the session's first turn."""
        started, self._started = self._started, True
        return NOTHING if started else self._recitation("session start")

    def before_step(self, step: int) -> HookResult:
        """Recite the plan if it is out of view, for a high-risk call if one just ran."""
        risk, self._risk_pending = self._risk_pending, False
        if self.ctx.state.awaiting_reboot:
            return NOTHING
        return self._recitation("high-risk tool" if risk else "periodic")

    def before_tool(self, call: ToolCall) -> HookResult:
        """Note a high-risk call: the plan is re-read once its batch has run."""
        if self.ctx.is_high_risk(call):
            self._risk_pending = True
        return NOTHING

    def _recitation(self, reason: RecitationReason) -> HookResult:
        ctx = self.ctx
        plan_text = ctx.plan_body(self._plan_tokens)
        if not plan_text or not ctx.state.plan_due():
            return NOTHING
        where = ctx.workspace.display(ctx.session.directory)
        text = plan_reminder_text(reason, plan_text, where)
        return HookResult((ReminderEntry(rule=PLAN_RULE, text=text),))
