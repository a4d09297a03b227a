"""The default harness: working memory, recitation, reminders, 3-strike, lessons, injection.

It implements ``contextengine.agent.hooks.Harness`` (the call order is declared there).
Its counters are a fold over the session log (``contextengine.memory.rules``), so a
resumed session continues with the same counts; the plan is ``task_plan.md`` itself.

Reminders are appended only where a chat transcript allows them: ``before_tool`` and
``after_tool`` run between an assistant message and its tool results, where the native
wire formats forbid other messages, so a plan recital due at a high-risk tool and the
2-action reminder are appended at the next ``before_step`` (right after the batch's
results), and a 3-strike reboot waits for the last result of its batch. The plan file is
recited into history only when it is not in view (at session start, after a compaction);
its steps end every request in the task-status tail. A plan that is still the empty
template is recited only at session start (with where the files are).

Lessons: a failed call records a lesson keyed by its action (the shell command, else the
path or pattern); when the same action later succeeds, the open lessons for it are
resolved with what happened in between (the calls made and the model's reasoning).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from contextengine.agent.events import AgentEvent, MemoryUpdate, RunResult
from contextengine.agent.hooks import Harness, HookResult, NullHarness
from contextengine.config import Config
from contextengine.context.canonical import canonical_json
from contextengine.memory.injectors import Injector, default_injectors, run_injectors
from contextengine.memory.lessons import Lesson, LessonStore
from contextengine.memory.longterm import LongTermMemory, session_documents
from contextengine.memory.plan import EMPTY_PLAN, one_line
from contextengine.memory.reboot import human_help, reboot_prompt
from contextengine.memory.rules import (
    PLAN_RULE,
    STRIKES,
    TWO_ACTION_RULE,
    TWO_ACTION_TEXT,
    RecitationReason,
    RuleState,
    is_high_risk,
    plan_reminder_text,
)
from contextengine.memory.scope import SessionScope
from contextengine.memory.status import TailRecital, objective_of
from contextengine.memory.templates import fence
from contextengine.memory.working_memory import FINDINGS, PLAN, PROGRESS, WorkingMemory
from contextengine.session.entries import (
    AssistantEntry,
    Entry,
    ErrorEntry,
    ReminderEntry,
    UserEntry,
)
from contextengine.session.session import Session
from contextengine.tools.base import ToolOutcome
from contextengine.tools.classify import error_tail
from contextengine.tools.traits import UNDECLARED, ToolTraits
from contextengine.tools.workspace import PathRefused, Workspace
from contextengine.types import ToolCall

logger = logging.getLogger(__name__)

HINT_MESSAGES = 3
ARGUMENTS_CHARS = 300
RESULT_CHARS = 200
ERROR_LINES = 20
ERROR_CHARS = 2000
ANSWER_CHARS = 2000
THOUGHT_CHARS = 200
_HARNESS_FLAGS = ("working_memory", "reminders", "recitation", "injection")


class DefaultHarness:
    """Keeps one session's working memory and applies the rules that keep a task on track."""

    def __init__(
        self,
        *,
        session: Session,
        memory: WorkingMemory,
        workspace: Workspace,
        config: Config,
        model: str = "",
        lessons: LessonStore | None = None,
        longterm: LongTermMemory | None = None,
        injectors: Sequence[Injector] = (),
        traits: Callable[[str], ToolTraits] = lambda _: UNDECLARED,
    ) -> None:
        self.session = session
        self.memory = memory
        self.workspace = workspace
        self.config = config
        self.model = model
        self.lessons = lessons
        self.longterm = longterm
        self.injectors = list(injectors)
        self.traits = traits
        self.state = RuleState(traits)
        self._seen = 0
        self._sync(live=False)
        self._resumed = self._seen > 0
        self._started = False
        self._recital = TailRecital()
        self._risk_pending = False
        self._open: dict[tuple[str, str], list[Lesson]] = {}
        if lessons is not None:
            for lesson in self._guard("reading open lessons", lessons.open_lessons) or ():
                self._open.setdefault((lesson.tool, lesson.action), []).append(lesson)

    def start_turn(self, user_text: str) -> HookResult:
        """Log the turn, run the injectors, recite the plan at session start."""
        self._sync()
        self._recital.new_turn()
        request = objective_of(user_text)
        if not self._started and not self._resumed:
            self.memory.log(
                "✅ Session Started",
                f"- Session ID: {self.session.id}\n- Task: {request}\n- Model: {self.model or '-'}",
            )
        elif not self._started:
            self.memory.log(
                "🔁 Session Resumed", f"- Session ID: {self.session.id}\n- Task: {request}"
            )
        else:
            self.memory.log("💬 User Turn", f"- Request: {request}")
        entries: list[Entry] = []
        if self.config.flag("injection") and self.injectors:
            injection = run_injectors(self.injectors, self._hint(), self.state.notes)
            for failure in injection.failures:
                self.memory.log(
                    f"⚠️ Injector Failed: {failure.injector}", f"- Error: {failure.error}"
                )
            entries += injection.notes
        if not self._started and self.config.flag("reminders"):
            entries += self._recitation("session start")
        self._started = True
        return self._result(entries)

    def before_step(self, step: int) -> HookResult:
        """Append the reminders that are due: plan recitation, then the 2-action rule."""
        self._sync()
        entries: list[Entry] = []
        if self.config.flag("reminders") and not self.state.awaiting_reboot:
            if self._risk_pending:
                entries += self._recitation("high-risk tool")
            else:
                entries += self._recitation("periodic")
            if self.state.two_action_due():
                entries.append(ReminderEntry(rule=TWO_ACTION_RULE, text=TWO_ACTION_TEXT))
        self._risk_pending = False
        return self._result(entries)

    def task_status(self) -> str | None:
        """Objective, steps and current focus, from the plan (the focus alone while that
        is all that is new)."""
        plan = self.memory.plan()
        return self._recital.tail(plan, self.state.first_user_text, self.state.iterations)

    def before_tool(self, call: ToolCall) -> HookResult:
        """Note a high-risk call: the plan is re-read once its batch has run."""
        arguments = _arguments(call)
        if is_high_risk(self.traits(call.name), self._target_exists(arguments)):
            self._risk_pending = True
        return self._result([])

    def after_tool(
        self, call: ToolCall, outcome: ToolOutcome, error_class: str | None
    ) -> HookResult:
        """Log the call, apply todo lists to the plan, keep lessons, start a 3-strike reboot."""
        self._sync()
        arguments = _arguments(call)
        traits = self.traits(call.name)
        # A plan tool either writes the plan itself or returns the todo list to apply.
        if traits.category == "plan" and outcome.status == "success" and "todos" in outcome.data:
            todos = outcome.data["todos"]
            self.memory.apply_todos((t["content"], t["status"]) for t in todos)
        strike_on = self.config.flag("reminders")
        if outcome.status == "error":
            cls = error_class or (outcome.error.code if outcome.error else "error")
            attempt = self.state.strikes.get(cls, 0)
            self._log_error(
                call, traits, arguments, outcome, cls, attempt, strike_on and attempt == STRIKES
            )
            self._record_lesson(call, traits, arguments, outcome, cls)
        else:
            self._log_call(call, traits, arguments, outcome)
            self._resolve_lessons(call, traits, arguments)
        struck = self.state.struck()
        if not (strike_on and struck and self.state.batch_done):
            return self._result([])
        # The reboot prompt carries the plan itself: no separate recitation.
        prompt = reboot_prompt(struck, self._plan_body(), self.memory.read(PROGRESS))
        return self._result([], reboot=prompt)

    def after_reboot(self, answer: str) -> HookResult:
        """Log the reboot answer; hand over to a human when question 5 says so."""
        self._sync()
        help_ = human_help(answer)
        decision = f"yes - {help_.question}" if help_.needed else "no"
        body = f"{_clip(answer.strip(), ANSWER_CHARS)}\n\n**Human help**: {decision}"
        self.memory.log("🔄 5-Question Reboot", body)
        return self._result([], needs_human=help_.question if help_.needed else None)

    def end_turn(self, result: RunResult) -> HookResult:
        """Log the turn's end and index the session for long-term memory."""
        self._sync()
        body = f"- Steps: {result.steps}"
        if result.error:
            body += f"\n- Error: {one_line(result.error)}"
        if result.final_answer:
            body += f"\n- Answer: {_clip(one_line(result.final_answer), RESULT_CHARS)}"
        self.memory.log(f"🏁 Turn Ended: {result.status}", body)
        if self.longterm is not None:
            docs = session_documents(self.session.records, self.memory.read(FINDINGS))
            self._guard("indexing long-term memory", partial(self.longterm.index_session, docs))
        return self._result([])

    def _sync(self, live: bool = True) -> None:
        records = self.session.records
        for record in records[self._seen :]:
            self.state.observe(record)
            entry = record.entry
            if live and isinstance(entry, ErrorEntry):
                attempt = self.state.other_errors[entry.error_class]
                self.memory.log(
                    f"❌ ERROR (attempt {attempt}): {entry.error_class}",
                    f"**Error**:\n{fence(_clip(entry.message, ERROR_CHARS))}",
                )
        self._seen = len(records)

    def _result(
        self, entries: list[Entry], *, reboot: str | None = None, needs_human: str | None = None
    ) -> HookResult:
        events: tuple[AgentEvent, ...] = tuple(
            MemoryUpdate(change.file, change.content) for change in self.memory.drain()
        )
        return HookResult(tuple(entries), events, reboot, needs_human)

    def _recitation(self, reason: RecitationReason) -> list[Entry]:
        plan_text = self._plan_body()
        if not plan_text and reason != "session start":
            return []
        if not self.state.plan_due():
            return []
        return [self._plan_reminder(reason, plan_text)]

    def _plan_body(self) -> str:
        """The plan's text, or ``""`` while it is the untouched template."""
        text = self.memory.read(PLAN)
        return "" if text == EMPTY_PLAN else text

    def _plan_reminder(self, reason: RecitationReason, plan_text: str) -> ReminderEntry:
        where = (
            self.workspace.display(self.session.directory) if reason == "session start" else None
        )
        return ReminderEntry(rule=PLAN_RULE, text=plan_reminder_text(reason, plan_text, where))

    def _hint(self) -> str:
        goal = self.memory.plan().goal
        if goal:
            return goal
        texts: list[str] = []
        for record in reversed(self.session.live):
            entry = record.entry
            if isinstance(entry, UserEntry | AssistantEntry) and entry.text.strip():
                texts.append(objective_of(entry.text))
                if len(texts) == HINT_MESSAGES:
                    break
        return "\n".join(reversed(texts))

    def _target_exists(self, arguments: dict[str, Any]) -> bool:
        path = arguments.get("path")
        if not isinstance(path, str):
            return False
        try:
            return self.workspace.resolve(path).is_file()
        except (PathRefused, OSError, ValueError):  # NUL, too long: the tool reports it
            return False

    def _log_call(
        self, call: ToolCall, traits: ToolTraits, arguments: dict[str, Any], outcome: ToolOutcome
    ) -> None:
        first = outcome.text.strip().splitlines()[0] if outcome.text.strip() else ""
        if traits.category == "exec" and "exit_code" in outcome.data:
            lines = outcome.data.get("stdout_lines", 0)
            first = f"exit code {outcome.data['exit_code']}, {lines} stdout lines"
        body = (
            f"{_describe(call, traits, arguments)}\n**Status**: ✅ Success\n"
            f"**Result**: {_clip(first, RESULT_CHARS)}"
        )
        self.memory.log(f"🔧 Tool Call: {call.name}", body)

    def _log_error(
        self,
        call: ToolCall,
        traits: ToolTraits,
        arguments: dict[str, Any],
        outcome: ToolOutcome,
        cls: str,
        attempt: int,
        triggered: bool,
    ) -> None:
        title = f"❌ ERROR (attempt {attempt}): {cls}"
        body = (
            f"**Tool**: {call.name}\n{_describe(call, traits, arguments)}\n"
            f"**Error**:\n{fence(_error_text(outcome))}"
        )
        if triggered:
            title += " 🚨 3-STRIKE TRIGGERED"
            body += "\n**Action**: Stopped; re-reading task_plan.md; 5-Question Reboot"
        self.memory.log(title, body)

    def _record_lesson(
        self,
        call: ToolCall,
        traits: ToolTraits,
        arguments: dict[str, Any],
        outcome: ToolOutcome,
        cls: str,
    ) -> None:
        store = self.lessons
        if store is None:
            return
        action = _action(traits, arguments)
        message = _error_text(outcome)
        index = self.session.records[-1].index
        record = partial(
            store.record_error, cls, message, tool=call.name, action=action, record_index=index
        )
        lesson_id = self._guard("recording a lesson", record)
        if lesson_id is not None:
            lesson = Lesson(
                lesson_id, self.session.id, cls, call.name, action, message, index, None
            )
            self._open.setdefault((call.name, action), []).append(lesson)

    def _resolve_lessons(
        self, call: ToolCall, traits: ToolTraits, arguments: dict[str, Any]
    ) -> None:
        store = self.lessons
        if store is None:
            return
        for lesson in self._open.pop((call.name, _action(traits, arguments)), []):
            resolve = partial(store.resolve_error, lesson.id, self._resolution(lesson, call))
            self._guard("resolving a lesson", resolve)

    def _resolution(self, lesson: Lesson, success: ToolCall) -> str:
        start = (lesson.record_index or 0) + 1
        steps: list[str] = []
        thoughts: list[str] = []
        for record in self.session.records[start:]:
            entry = record.entry
            if not isinstance(entry, AssistantEntry):
                continue
            if entry.text.strip() and all(c.id != success.id for c in entry.tool_calls):
                thoughts.append(_clip(one_line(entry.text), THOUGHT_CHARS))
            for c in entry.tool_calls:
                if c.id != success.id and self.traits(c.name).category != "plan":
                    steps.append(self._short_call(c.name, _arguments(c.as_call())))
        what = self._short_call(success.name, _arguments(success))
        text = (
            f"{what} succeeded after: {'; '.join(steps)}."
            if steps
            else f"{what} succeeded when retried."
        )
        if thoughts:
            text += " Reasoning: " + " / ".join(thoughts[-2:])
        return text

    def _short_call(self, tool: str, arguments: dict[str, Any]) -> str:
        action = _action(self.traits(tool), arguments)
        return f"{tool} `{_clip(action, RESULT_CHARS)}`" if action else tool

    def _guard(self, what: str, action: Callable[[], Any]) -> Any:
        """Run a lessons/long-term-memory operation; a database failure never stops the turn."""
        try:
            return action()
        except (sqlite3.Error, OSError) as exc:
            logger.warning("%s failed and was skipped: %s", what, exc)
            self.memory.log(f"⚠️ Memory Store Failed: {what}", f"- Error: {exc}")
            return None


def build_harness(
    *,
    session: Session,
    memory: WorkingMemory,
    workspace: Workspace,
    config: Config,
    model: str = "",
    injectors: Sequence[Injector] = (),
    traits: Callable[[str], ToolTraits] = lambda _: UNDECLARED,
) -> Harness:
    """The default harness for an agent, or the null one when every harness flag is off.

    ``injectors`` run after the built-in ones (when the ``injection`` flag is on);
    ``traits`` says what each tool (by name) declares, as ``Toolset.traits`` does.
    """
    if not any(config.flag(name) for name in _HARNESS_FLAGS):
        return NullHarness()
    lessons = longterm = None
    chosen: list[Injector] = []
    if config.flag("working_memory") or config.flag("injection"):
        scope = SessionScope.of(session.directory)
        lessons, longterm = LessonStore(scope), LongTermMemory(scope)
        if config.flag("injection"):
            chosen = [
                *default_injectors(lessons, longterm, scope.preferences, workspace.root),
                *injectors,
            ]
    return DefaultHarness(
        session=session,
        memory=memory,
        workspace=workspace,
        config=config,
        model=model,
        lessons=lessons,
        longterm=longterm,
        injectors=chosen,
        traits=traits,
    )


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        return call.arguments()
    except ValueError:
        return {}


def _action(traits: ToolTraits, arguments: dict[str, Any]) -> str:
    """What a call acts on: its declared action argument (whitespace folded), else its
    path or pattern."""
    if traits.action_key:
        return " ".join(str(arguments.get(traits.action_key, "")).split())
    target = arguments.get("path") or arguments.get("pattern")
    return str(target) if target else ""


def _describe(call: ToolCall, traits: ToolTraits, arguments: dict[str, Any]) -> str:
    key = traits.action_key
    if key and isinstance(arguments.get(key), str):
        return f"**{key.capitalize()}**: `{_clip(one_line(arguments[key]), ARGUMENTS_CHARS)}`"
    shown = canonical_json(arguments) if arguments else call.arguments_json
    return f"**Arguments**: `{_clip(shown, ARGUMENTS_CHARS)}`"


def _error_text(outcome: ToolOutcome) -> str:
    text = outcome.error.message if outcome.error else outcome.text
    return _clip_tail(error_tail(text, ERROR_LINES), ERROR_CHARS)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _clip_tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]
