"""The progress log: progress.md records turns, tool calls, errors and their outcomes."""

from __future__ import annotations

from contextengine.agent.events import RunResult
from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.agent.rules.calls import (
    ERROR_CHARS,
    RESULT_CHARS,
    describe,
    error_class_of,
    error_text,
)
from contextengine.memory.rules import STRIKES
from contextengine.memory.status import objective_of
from contextengine.memory.templates import fence
from contextengine.session.entries import ErrorEntry
from contextengine.session.log import LogRecord
from contextengine.text import clip, one_line
from contextengine.toolkit.base import ToolOutcome
from contextengine.types import ToolCall


class ProgressLog(Rule):
    """Logs each turn's start and end, every call with its result or error, and the
    loop's own errors; ``marks_strikes``: an error reaching the 3-strike limit says so
    (on while the 3-strike rule is)."""

    def __init__(self, ctx: HarnessContext, *, marks_strikes: bool) -> None:
        super().__init__(ctx)
        self.marks_strikes = marks_strikes
        self._started = False

    def observe(self, record: LogRecord) -> None:
        """Log an error the loop recorded (a provider or context failure)."""
        entry = record.entry
        if isinstance(entry, ErrorEntry):
            attempt = self.ctx.state.other_errors[entry.error_class]
            self.ctx.memory.log(
                f"[!] ERROR (attempt {attempt}): {entry.error_class}",
                f"**Error**:\n{fence(clip(entry.message, ERROR_CHARS))}",
            )

    def start_turn(self, user_text: str) -> HookResult:
        """Log the session's start or resumption, else the new user turn."""
        ctx = self.ctx
        request = objective_of(user_text)
        if not self._started and not ctx.resumed:
            ctx.memory.log(
                "[x] Session Started",
                f"- Session ID: {ctx.session.id}\n- Task: {request}\n- Model: {ctx.model or '-'}",
            )
        elif not self._started:
            ctx.memory.log(
                "[~] Session Resumed", f"- Session ID: {ctx.session.id}\n- Task: {request}"
            )
        else:
            ctx.memory.log("[>] User Turn", f"- Request: {request}")
        self._started = True
        return NOTHING

    def after_tool(
        self, call: ToolCall, outcome: ToolOutcome, error_class: str | None
    ) -> HookResult:
        """Log the call with its first result line, or its error."""
        if outcome.status == "error":
            self._log_error(call, outcome, error_class_of(outcome, error_class))
        else:
            self._log_call(call, outcome)
        return NOTHING

    def end_turn(self, result: RunResult) -> HookResult:
        """Log how the turn ended."""
        body = f"- Steps: {result.steps}"
        if result.error:
            body += f"\n- Error: {one_line(result.error)}"
        if result.final_answer:
            body += f"\n- Answer: {clip(one_line(result.final_answer), RESULT_CHARS)}"
        self.ctx.memory.log(f"[=] Turn Ended: {result.status}", body)
        return NOTHING

    def _log_call(self, call: ToolCall, outcome: ToolOutcome) -> None:
        traits = self.ctx.traits(call.name)
        first = outcome.text.strip().splitlines()[0] if outcome.text.strip() else ""
        if traits.category == "exec" and "exit_code" in outcome.data:
            lines = outcome.data.get("stdout_lines", 0)
            first = f"exit code {outcome.data['exit_code']}, {lines} stdout lines"
        body = (
            f"{describe(call, traits, call.arguments_or_empty())}\n**Status**: [x] Success\n"
            f"**Result**: {clip(first, RESULT_CHARS)}"
        )
        self.ctx.memory.log(f"[*] Tool Call: {call.name}", body)

    def _log_error(self, call: ToolCall, outcome: ToolOutcome, cls: str) -> None:
        attempt = self.ctx.state.strikes.get(cls, 0)
        traits = self.ctx.traits(call.name)
        title = f"[!] ERROR (attempt {attempt}): {cls}"
        body = (
            f"**Tool**: {call.name}\n{describe(call, traits, call.arguments_or_empty())}\n"
            f"**Error**:\n{fence(error_text(outcome))}"
        )
        if self.marks_strikes and attempt == STRIKES:
            title += " !! 3-STRIKE TRIGGERED"
            body += "\n**Action**: Stopped; re-reading task_plan.md; 5-Question Reboot"
        self.ctx.memory.log(title, body)
