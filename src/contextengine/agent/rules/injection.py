"""Injection: at each user turn, injectors add notes (lessons, long-term memory, project
knowledge) relevant to the task; a note already in view is not repeated."""

from __future__ import annotations

from collections.abc import Sequence

from contextengine.agent.hooks import HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.memory.injectors import Injector, run_injectors
from contextengine.memory.status import objective_of
from contextengine.session.entries import AssistantEntry, UserEntry

HINT_MESSAGES = 3


class Injection(Rule):
    """Runs ``injectors`` with the task's hint: the plan's goal, else the last messages."""

    def __init__(self, ctx: HarnessContext, injectors: Sequence[Injector]) -> None:
        super().__init__(ctx)
        self.injectors = list(injectors)

    def start_turn(self, user_text: str) -> HookResult:
        """Inject the notes; log the injectors that failed."""
        injection = run_injectors(self.injectors, self._hint(), self.ctx.state.notes)
        for failure in injection.failures:
            self.ctx.memory.log(
                f"[!] Injector Failed: {failure.injector}", f"- Error: {failure.error}"
            )
        return HookResult(tuple(injection.notes))

    def _hint(self) -> str:
        goal = self.ctx.memory.plan().goal
        if goal:
            return goal
        texts: list[str] = []
        for record in reversed(self.ctx.session.live):
            entry = record.entry
            if isinstance(entry, UserEntry | AssistantEntry) and entry.text.strip():
                texts.append(objective_of(entry.text))
                if len(texts) == HINT_MESSAGES:
                    break
        return "\n".join(reversed(texts))
