"""How a turn's course changes: the outcomes of a loop step and the one interrupt channel.

Every step of the loop (``contextengine.agent.loop``) returns a ``StepOutcome``: go on to
the next step (``PROCEED``) or end the turn with a result (``Finished``). A rule that must
change the course of the turn does not get a field of its own on ``HookResult``: it puts an
``InterruptFlow`` in the result's ``interrupt``, the loop appends and emits the result's
entries and events, then raises it, and the step's handler acts on it (as mini-swe-agent's
``InterruptAgentFlow`` exceptions do). The interrupts are:

- ``RebootDue``: ask the model ``prompt`` once with no tools (the 3-strike reboot), then
  hand its answer to ``after_reboot``;
- ``HumanNeeded``: ask a human ``question``; with no answer the turn ends ``needs_human``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from contextengine.agent.events import RunResult

AskHuman = Callable[[str], str | None]
"""Who answers the agent's question: the answer, or ``None`` when nobody can."""


class InterruptFlow(Exception):
    """A hook asks the loop to change the turn's course (one subclass per way)."""


class RebootDue(InterruptFlow):
    """Ask the model ``prompt`` with no tools before anything else, once."""

    def __init__(self, prompt: str) -> None:
        super().__init__(prompt)
        self.prompt = prompt


class HumanNeeded(InterruptFlow):
    """Ask a human ``question``; the turn ends ``needs_human`` when nobody answers."""

    def __init__(self, question: str) -> None:
        super().__init__(question)
        self.question = question


@dataclass(frozen=True)
class Proceed:
    """The step is over; the loop goes on to the next one."""


@dataclass(frozen=True)
class Finished:
    """The turn is over with ``result``."""

    result: RunResult


PROCEED = Proceed()

StepOutcome = Proceed | Finished
"""What one step of the loop ends with."""
