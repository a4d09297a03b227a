"""The default harness: working memory, recitation, reminders, 3-strike, lessons, injection.

It implements ``contextengine.agent.hooks.Harness`` (the call order is declared there) by
running small rules (``contextengine.agent.rules``) in the order of one list,
``default_rules``. Their counters are a fold over the session log
(``contextengine.memory.rules``), so a resumed session continues with the same counts;
the plan is ``task_plan.md`` itself.

Reminders are appended only where a chat transcript allows them: ``before_tool`` and
``after_tool`` run between an assistant message and its tool results, where the native
wire formats forbid other messages, so a plan recital due at a high-risk tool and the
2-action reminder are appended at the next ``before_step`` (right after the batch's
results), and a 3-strike reboot waits for the last result of its batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from contextengine.agent.allowance import Allowance
from contextengine.agent.events import AgentEvent, MemoryUpdate, RunResult
from contextengine.agent.flow import InterruptFlow
from contextengine.agent.hooks import Harness, HookResult, NullHarness
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.agent.rules.injection import Injection
from contextengine.agent.rules.lessons import Lessons
from contextengine.agent.rules.longterm import LongTermIndex
from contextengine.agent.rules.memory_git import MemoryVersions
from contextengine.agent.rules.plan_recitation import PlanRecitation
from contextengine.agent.rules.plan_updates import PlanUpdates
from contextengine.agent.rules.progress_log import ProgressLog
from contextengine.agent.rules.task_status import TaskStatusTail
from contextengine.agent.rules.three_strike import ThreeStrikeRule
from contextengine.agent.rules.two_action import TwoActionRule
from contextengine.memory.injectors import Injector, default_injectors
from contextengine.memory.lessons import LessonStore
from contextengine.memory.longterm import LongTermMemory
from contextengine.memory.plan import recital_tokens
from contextengine.memory.scope import SessionScope
from contextengine.memory.versions import MemoryRepo
from contextengine.memory.working_memory import WorkingMemory
from contextengine.session.entries import Entry
from contextengine.session.session import Session
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import UNDECLARED, ToolTraits
from contextengine.toolkit.workspace import Workspace
from contextengine.types import ToolCall


@dataclass(frozen=True)
class HarnessSettings:
    """The default harness's settings (``Config`` fields of the same names, flags in force)."""

    working_memory: bool = True
    reminders: bool = True
    recitation: bool = True
    injection: bool = True
    memory_git: bool = False
    context_window: int = 200_000
    max_preserved_errors: int = 5
    recite_after_chars: int = 24_000

    @property
    def any_rule(self) -> bool:
        """Whether any rule of the harness is on (else the null harness does)."""
        return self.working_memory or self.reminders or self.recitation or self.injection


def default_rules(
    ctx: HarnessContext,
    config: HarnessSettings,
    *,
    lessons: LessonStore | None = None,
    longterm: LongTermMemory | None = None,
    injectors: Sequence[Injector] = (),
    versions: MemoryRepo | None = None,
) -> list[Rule]:
    """The rules of the default harness, in the order they run at every hook; the
    component flags pick which are in (``reminders``: recitation, 2-action, 3-strike;
    ``recitation``: the task-status tail; ``injection``: the injectors); ``versions``:
    the git repository the memory files are committed to at each turn's end (last, so
    the commit holds what every other rule wrote)."""
    reminders = config.reminders
    plan_tokens = recital_tokens(config.context_window)
    rules: list[Rule | None] = [
        PlanUpdates(ctx),
        ProgressLog(ctx, marks_strikes=reminders),
        Lessons(ctx, lessons) if lessons is not None else None,
        Injection(ctx, injectors) if config.injection and injectors else None,
        PlanRecitation(ctx, plan_tokens) if reminders else None,
        TwoActionRule(ctx) if reminders else None,
        ThreeStrikeRule(ctx, plan_tokens) if reminders else None,
        (
            TaskStatusTail(ctx, config.max_preserved_errors, config.recite_after_chars)
            if config.recitation
            else None
        ),
        LongTermIndex(ctx, longterm) if longterm is not None else None,
        MemoryVersions(ctx, versions) if versions is not None else None,
    ]
    return [rule for rule in rules if rule is not None]


class RuleHarness:
    """A harness made of ``rules``: each hook runs them in order, appends what they add,
    and emits what they wrote to working memory."""

    def __init__(self, ctx: HarnessContext, rules: Sequence[Rule]) -> None:
        self.ctx = ctx
        self.rules = list(rules)
        self._seen = len(ctx.session.records)

    def start_turn(self, user_text: str) -> HookResult:
        """Log the turn, run the injectors, recite the plan at session start."""
        self._sync()
        return self._merge(rule.start_turn(user_text) for rule in self.rules)

    def before_step(self, step: int) -> HookResult:
        """Append the reminders that are due: plan recitation, then the 2-action rule."""
        self._sync()
        return self._merge(rule.before_step(step) for rule in self.rules)

    def task_status(self) -> str | None:
        """Objective, steps and current focus, from the plan (the reminders just appended
        counted: the 2-action rule's is when the tail names the memory files' folder)."""
        self._sync()
        return next((s for rule in self.rules if (s := rule.task_status()) is not None), None)

    def before_tool(self, call: ToolCall) -> HookResult:
        """Note a high-risk call: the plan is re-read once its batch has run."""
        return self._merge(rule.before_tool(call) for rule in self.rules)

    def after_tool(
        self, call: ToolCall, outcome: ToolOutcome, error_class: str | None
    ) -> HookResult:
        """Log the call, apply todo lists to the plan, keep lessons, start a 3-strike reboot."""
        self._sync()
        return self._merge(rule.after_tool(call, outcome, error_class) for rule in self.rules)

    def after_error(self, error_class: str) -> HookResult:
        """Start a 3-strike reboot when the loop's own error class reached its strikes."""
        self._sync()
        return self._merge(rule.after_error(error_class) for rule in self.rules)

    def after_reboot(self, answer: str) -> HookResult:
        """Log the reboot answer; hand over to a human when question 5 says so."""
        self._sync()
        return self._merge(rule.after_reboot(answer) for rule in self.rules)

    def end_turn(self, result: RunResult) -> HookResult:
        """Log the turn's end and index the session for long-term memory."""
        self._sync()
        return self._merge(rule.end_turn(result) for rule in self.rules)

    def _sync(self) -> None:
        records = self.ctx.session.records
        for record in records[self._seen :]:
            self.ctx.state.observe(record)
            for rule in self.rules:
                rule.observe(record)
        self._seen = len(records)

    def _merge(self, results: Iterable[HookResult]) -> HookResult:
        entries: list[Entry] = []
        events: list[AgentEvent] = []
        interrupt: InterruptFlow | None = None
        for result in results:
            entries += result.entries
            events += result.events
            interrupt = interrupt or result.interrupt
        events += (MemoryUpdate(c.file, c.content) for c in self.ctx.memory.drain())
        return HookResult(tuple(entries), tuple(events), interrupt)


class DefaultHarness(RuleHarness):
    """Keeps one session's working memory and applies the rules that keep a task on track
    (``default_rules``)."""

    def __init__(
        self,
        *,
        session: Session,
        memory: WorkingMemory,
        workspace: Workspace,
        config: HarnessSettings,
        model: str = "",
        lessons: LessonStore | None = None,
        longterm: LongTermMemory | None = None,
        injectors: Sequence[Injector] = (),
        traits: Callable[[str], ToolTraits] = lambda _: UNDECLARED,
        tool_names: Sequence[str] = (),
        versions: MemoryRepo | None = None,
        call_traits: Callable[[ToolCall], ToolTraits] | None = None,
        allowance: Allowance | None = None,
    ) -> None:
        ctx = HarnessContext.of(
            session,
            memory,
            workspace,
            traits,
            model,
            tool_names,
            call_traits=call_traits,
            allowance=allowance,
        )
        rules = default_rules(
            ctx,
            config,
            lessons=lessons,
            longterm=longterm,
            injectors=injectors,
            versions=versions,
        )
        super().__init__(ctx, rules)


def build_harness(
    *,
    session: Session,
    memory: WorkingMemory,
    workspace: Workspace,
    config: HarnessSettings,
    model: str = "",
    injectors: Sequence[Injector] = (),
    traits: Callable[[str], ToolTraits] = lambda _: UNDECLARED,
    tool_names: Sequence[str] = (),
    call_traits: Callable[[ToolCall], ToolTraits] | None = None,
    allowance: Allowance | None = None,
) -> Harness:
    """The default harness for an agent, or the null one when every harness flag is off.

    ``injectors`` run after the built-in ones (when the ``injection`` flag is on);
    ``traits`` says what each tool (by name) declares, as ``Toolset.traits`` does, and
    ``tool_names`` which tools the session has (the task-status tail needs a plan tool);
    ``call_traits``, where given, what one call declares (``Toolset.call_traits``);
    ``allowance``: what the tail and reboots may cost (``None``: no limit). With
    ``memory_git`` on (and working memory), the memory files are committed per turn;
    ``ConfigError`` when git is missing.
    """
    if not config.any_rule:
        return NullHarness()
    lessons = longterm = None
    chosen: list[Injector] = []
    versions = None
    if config.memory_git and config.working_memory:
        versions = MemoryRepo.open(session.directory)
    if config.working_memory or config.injection:
        scope = SessionScope.of(session.directory)
        lessons, longterm = LessonStore(scope), LongTermMemory(scope)
        if config.injection:
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
        tool_names=tool_names,
        versions=versions,
        call_traits=call_traits,
        allowance=allowance,
    )
