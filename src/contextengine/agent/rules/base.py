"""What every harness rule shares: the context it works in and the hooks it may answer.

A rule answers the hooks of ``contextengine.agent.hooks.Harness`` it cares about (the
others add nothing) and ``observe``, which sees each record appended to the session log
while the harness runs. Rules run in the order of their list; what they write to working
memory is emitted once per hook by the harness that runs them.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contextengine.agent.allowance import Allowance
from contextengine.agent.hooks import NullHarness
from contextengine.memory.plan import EMPTY_PLAN, fit_plan
from contextengine.memory.rules import RuleState, is_high_risk
from contextengine.memory.working_memory import PLAN, WorkingMemory
from contextengine.session.log import LogRecord
from contextengine.session.session import Session
from contextengine.toolkit.traits import ToolTraits
from contextengine.toolkit.workspace import PathRefused, Workspace
from contextengine.types import ToolCall
from contextengine.untrusted import JSONObject

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HarnessContext:
    """One session as the rules see it: its log, working memory, workspace, the counters
    folded from its log, its tools' names and what each tool (by name) declares.

    ``resumed``: the log already held records when the harness started; ``allowance``:
    what the optional overheads may cost (``None``: no limit).
    """

    session: Session
    memory: WorkingMemory
    workspace: Workspace
    state: RuleState
    traits: Callable[[str], ToolTraits]
    model: str
    resumed: bool
    tool_names: tuple[str, ...]
    call_traits: Callable[[ToolCall], ToolTraits] | None = None  # else traits by name
    allowance: Allowance | None = None

    @classmethod
    def of(
        cls,
        session: Session,
        memory: WorkingMemory,
        workspace: Workspace,
        traits: Callable[[str], ToolTraits],
        model: str = "",
        tool_names: Sequence[str] = (),
        *,
        call_traits: Callable[[ToolCall], ToolTraits] | None = None,
        allowance: Allowance | None = None,
    ) -> HarnessContext:
        """The context of ``session``, its counters folded from every record so far."""
        state = RuleState(traits)
        for record in session.records:
            state.observe(record)
        resumed = bool(session.records)
        return cls(
            session,
            memory,
            workspace,
            state,
            traits,
            model,
            resumed,
            tuple(tool_names),
            call_traits,
            allowance,
        )

    @property
    def plannable(self) -> bool:
        """One of the session's tools writes the plan (``todo_write``, a recorded todo tool)."""
        return any(self.traits(name).category == "plan" for name in self.tool_names)

    def is_high_risk(self, call: ToolCall) -> bool:
        """Whether ``call`` is high-risk (R8.2): its tool (or the call, for a tool that runs
        others) declares it, or it overwrites a file that exists now (asked before it runs)."""
        arguments = call.arguments_or_empty()
        traits = self.call_traits(call) if self.call_traits else self.traits(call.name)
        return is_high_risk(traits, self._target_exists(arguments))

    def _target_exists(self, arguments: JSONObject) -> bool:
        path = arguments.get("path")
        if not isinstance(path, str):
            return False
        try:
            return self.workspace.resolve(path).is_file()
        except (PathRefused, OSError, ValueError):  # NUL, too long: the tool reports it
            return False

    def plan_body(self, limit_tokens: int | None = None) -> str:
        """The plan's text, or ``""`` while it is the untouched template; cut to its first
        whole lines within ``limit_tokens`` when given (``fit_plan``)."""
        text = self.memory.read(PLAN)
        if text == EMPTY_PLAN:
            return ""
        return text if limit_tokens is None else fit_plan(text, limit_tokens)

    def guarded(self, what: str, action: Callable[[], Any]) -> Any:
        """Run a lessons/long-term-memory operation; a database failure never stops the turn."""
        try:
            return action()
        except (sqlite3.Error, OSError) as exc:
            logger.warning("%s failed and was skipped: %s", what, exc)
            self.memory.log(f"[!] Memory Store Failed: {what}", f"- Error: {exc}")
            return None


class Rule(NullHarness):
    """One harness rule; every hook adds nothing unless the rule overrides it."""

    def __init__(self, ctx: HarnessContext) -> None:
        self.ctx = ctx

    def observe(self, record: LogRecord) -> None:
        """A record was appended (the counters in ``ctx.state`` already include it)."""
