"""The 2-action rule (R8.3): after two information-gathering actions with no finding
recorded, the model is reminded to record what it learned."""

from __future__ import annotations

from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import Rule
from contextengine.memory.rules import TWO_ACTION_FILE_TEXT, TWO_ACTION_RULE, TWO_ACTION_TEXT
from contextengine.session.entries import ReminderEntry
from contextengine.tools.memory import MemoryFindingAdd


class TwoActionRule(Rule):
    """Reminds once per stretch of reads without a finding (counted in ``ctx.state``),
    naming ``memory_finding_add`` where the session has it, else ``findings.md``."""

    def before_step(self, step: int) -> HookResult:
        """Append the reminder when it is due."""
        if not self.ctx.state.two_action_due():
            return NOTHING
        has_tool = MemoryFindingAdd.name in self.ctx.tool_names
        text = TWO_ACTION_TEXT if has_tool else TWO_ACTION_FILE_TEXT
        return HookResult((ReminderEntry(rule=TWO_ACTION_RULE, text=text),))
