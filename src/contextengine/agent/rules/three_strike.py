"""The 3-strike rule (R5.3): an error class failing three times stops the work for a
5-question reboot over the plan and the progress log; the answer may ask for a human."""

from __future__ import annotations

from contextengine.agent.flow import HumanNeeded, RebootDue
from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.context.tokens import count_tokens
from contextengine.memory.reboot import human_help, reboot_prompt
from contextengine.memory.status import objective_of
from contextengine.memory.working_memory import PROGRESS
from contextengine.text import clip
from contextengine.toolkit.base import ToolOutcome
from contextengine.types import ToolCall

ANSWER_CHARS = 2000


class ThreeStrikeRule(Rule):
    """Starts a reboot once the struck call's batch has all its results; the reboot prompt
    carries the plan up to ``plan_tokens``. The reboot is a side call paid from the
    session's overhead allowance (``ctx.allowance``): until that affords its prompt, it
    waits, the strikes still counted, and is asked after a later call's batch."""

    def __init__(self, ctx: HarnessContext, plan_tokens: int) -> None:
        super().__init__(ctx)
        self._plan_tokens = plan_tokens

    def after_tool(
        self, call: ToolCall, outcome: ToolOutcome, error_class: str | None
    ) -> HookResult:
        """Ask for the reboot when an error class reached its strikes."""
        return self._reboot_if_struck()

    def after_error(self, error_class: str) -> HookResult:
        """Ask for the reboot when a loop error class (an invalid reply) reached its strikes."""
        return self._reboot_if_struck()

    def _reboot_if_struck(self) -> HookResult:
        state = self.ctx.state
        struck = state.struck()
        if not (struck and state.batch_done):
            return NOTHING
        # The reboot prompt carries the plan itself: no separate recitation.
        memory = self.ctx.memory
        objective = objective_of(state.first_user_text or "")
        plan = self.ctx.plan_body(self._plan_tokens)
        prompt = reboot_prompt(struck, objective, plan, memory.read(PROGRESS))
        allowance = self.ctx.allowance
        if allowance is not None and not allowance.affords(count_tokens(prompt)):
            return NOTHING
        return HookResult(interrupt=RebootDue(prompt))

    def after_reboot(self, answer: str) -> HookResult:
        """Log the reboot answer; hand over to a human when question 5 says so."""
        help_ = human_help(answer)
        decision = f"yes - {help_.question}" if help_.needed else "no"
        body = f"{clip(answer.strip(), ANSWER_CHARS)}\n\n**Human help**: {decision}"
        self.ctx.memory.log("[~] 5-Question Reboot", body)
        return HookResult(interrupt=HumanNeeded(help_.question) if help_.needed else None)
