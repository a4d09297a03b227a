"""Lessons: a failed call is recorded as a lesson keyed by its action; when the same
action later succeeds, its open lessons are resolved with what happened in between (the
calls made and the model's reasoning)."""

from __future__ import annotations

from functools import partial

from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.agent.rules.calls import (
    RESULT_CHARS,
    action_of,
    error_class_of,
    error_text,
)
from contextengine.memory.lessons import Lesson, LessonStore
from contextengine.session.entries import AssistantEntry
from contextengine.text import clip, one_line
from contextengine.toolkit.base import ToolOutcome
from contextengine.types import ToolCall

THOUGHT_CHARS = 200


class Lessons(Rule):
    """Records failures in ``store`` and resolves them when their action succeeds."""

    def __init__(self, ctx: HarnessContext, store: LessonStore) -> None:
        super().__init__(ctx)
        self.store = store
        self._open: dict[tuple[str, str], list[Lesson]] = {}
        for lesson in ctx.guarded("reading open lessons", store.open_lessons) or ():
            self._open.setdefault((lesson.tool, lesson.action), []).append(lesson)

    def after_tool(
        self, call: ToolCall, outcome: ToolOutcome, error_class: str | None
    ) -> HookResult:
        """Record a failure, or resolve the lessons of a success."""
        if outcome.status == "error":
            self._record(call, outcome, error_class_of(outcome, error_class))
        else:
            self._resolve(call)
        return NOTHING

    def _action(self, call: ToolCall) -> str:
        return action_of(self.ctx.traits(call.name), call.arguments_or_empty())

    def _record(self, call: ToolCall, outcome: ToolOutcome, cls: str) -> None:
        ctx = self.ctx
        action = self._action(call)
        message = error_text(outcome)
        index = ctx.session.records[-1].index
        record = partial(
            self.store.record_error, cls, message, tool=call.name, action=action, record_index=index
        )
        lesson_id = ctx.guarded("recording a lesson", record)
        if lesson_id is not None:
            lesson = Lesson(lesson_id, ctx.session.id, cls, call.name, action, message, index, None)
            self._open.setdefault((call.name, action), []).append(lesson)

    def _resolve(self, call: ToolCall) -> None:
        for lesson in self._open.pop((call.name, self._action(call)), []):
            resolve = partial(self.store.resolve_error, lesson.id, self._resolution(lesson, call))
            self.ctx.guarded("resolving a lesson", resolve)

    def _resolution(self, lesson: Lesson, success: ToolCall) -> str:
        start = (lesson.record_index or 0) + 1
        steps: list[str] = []
        thoughts: list[str] = []
        for record in self.ctx.session.records[start:]:
            entry = record.entry
            if not isinstance(entry, AssistantEntry):
                continue
            if entry.text.strip() and all(c.id != success.id for c in entry.tool_calls):
                thoughts.append(clip(one_line(entry.text), THOUGHT_CHARS))
            for c in entry.tool_calls:
                # Plan bookkeeping is no step toward the fix.
                if c.id != success.id and self.ctx.traits(c.name).category != "plan":
                    steps.append(self._short_call(c.as_call()))
        what = self._short_call(success)
        text = (
            f"{what} succeeded after: {'; '.join(steps)}."
            if steps
            else f"{what} succeeded when retried."
        )
        if thoughts:
            text += " Reasoning: " + " / ".join(thoughts[-2:])
        return text

    def _short_call(self, call: ToolCall) -> str:
        action = self._action(call)
        return f"{call.name} `{clip(action, RESULT_CHARS)}`" if action else call.name
