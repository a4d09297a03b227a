"""The harness protocol: what the loop asks of working memory, recitation and reminders.

The loop calls these hooks in this order, and nowhere else:

1. ``start_turn``     once per user turn, after the user entry (injected notes, plan recitation)
2. ``before_step``    before every model call (periodic plan recitation, 2-action reminder)
3. ``task_status``    the task-status tail of the request being built (never stored)
4. ``before_tool``    before each tool runs (plan re-read before high-risk tools)
5. ``after_tool``     after each tool result is appended (progress log, strikes, plan updates)
   ``after_error``    instead, after a reply the loop refused (an invalid reply, a strike)
6. ``after_reboot``   with the model's answer to a 3-strike reboot
7. ``end_turn``       once, with the run's result

Each hook returns entries to append (append-only, rendered once) and events to emit; the
loop appends and emits them in order. A harness never writes the session itself. A hook
that must change the turn's course (a 3-strike reboot, a question for a human) says so
through the one interrupt channel, ``HookResult.interrupt`` (``contextengine.agent.flow``);
the loop acts on one from ``start_turn`` and from any hook of a step (2 and 4-6);
``end_turn`` comes after the turn's course has ended, so its interrupt is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from contextengine.agent.events import AgentEvent, RunResult
from contextengine.agent.flow import InterruptFlow
from contextengine.session.entries import Entry
from contextengine.toolkit.base import ToolOutcome
from contextengine.types import ToolCall


@dataclass(frozen=True)
class HookResult:
    """What a hook wants appended and emitted, and how the turn's course must change.

    ``interrupt`` (``contextengine.agent.flow``): raised by the loop once the entries are
    appended and the events emitted; the first rule of a harness that gives one wins.
    """

    entries: tuple[Entry, ...] = ()
    events: tuple[AgentEvent, ...] = ()
    interrupt: InterruptFlow | None = None


NOTHING = HookResult()


class Harness(Protocol):
    """Rules that keep a long task on track; see the module docstring for the call order."""

    def start_turn(self, user_text: str) -> HookResult:
        """A user turn began (its entry is already appended)."""
        ...

    def before_step(self, step: int) -> HookResult:
        """A model call is about to be built (``step`` counts from 0 within the turn)."""
        ...

    def task_status(self) -> str | None:
        """The task-status text that ends the next request, or ``None``."""
        ...

    def before_tool(self, call: ToolCall) -> HookResult:
        """``call`` is about to run."""
        ...

    def after_tool(
        self, call: ToolCall, outcome: ToolOutcome, error_class: str | None
    ) -> HookResult:
        """``call`` ran; its result entry is appended."""
        ...

    def after_error(self, error_class: str) -> HookResult:
        """The loop recorded an error of its own (an invalid reply) as an error entry."""
        ...

    def after_reboot(self, answer: str) -> HookResult:
        """The model answered a reboot prompt."""
        ...

    def end_turn(self, result: RunResult) -> HookResult:
        """The turn ended with ``result``."""
        ...


class NullHarness:
    """A harness that adds nothing: the plain loop."""

    def start_turn(self, user_text: str) -> HookResult:
        """Nothing to add."""
        return NOTHING

    def before_step(self, step: int) -> HookResult:
        """Nothing to add."""
        return NOTHING

    def task_status(self) -> str | None:
        """No tail."""
        return None

    def before_tool(self, call: ToolCall) -> HookResult:
        """Nothing to add."""
        return NOTHING

    def after_tool(
        self, call: ToolCall, outcome: ToolOutcome, error_class: str | None
    ) -> HookResult:
        """Nothing to add."""
        return NOTHING

    def after_error(self, error_class: str) -> HookResult:
        """Nothing to add."""
        return NOTHING

    def after_reboot(self, answer: str) -> HookResult:
        """Nothing to add."""
        return NOTHING

    def end_turn(self, result: RunResult) -> HookResult:
        """Nothing to add."""
        return NOTHING
