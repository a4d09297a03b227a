"""The harness as an ordered list of rules, and rules that ask a tool's traits."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from contextengine import Config, ReminderEntry, ScriptedProvider
from contextengine.agent.events import MemoryUpdate
from contextengine.agent.flow import RebootDue
from contextengine.agent.harness import HarnessSettings, RuleHarness, default_rules
from contextengine.agent.hooks import HookResult
from contextengine.agent.loop import Agent
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.agent.rules.plan_recitation import PlanRecitation
from contextengine.agent.rules.progress_log import ProgressLog
from contextengine.context.tokens import count_tokens
from contextengine.memory.plan import PlanUpdate
from contextengine.memory.working_memory import PLAN, PROGRESS, WorkingMemory
from contextengine.session.entries import NoteEntry, ToolResultEntry, UserEntry
from contextengine.session.log import LogRecord
from contextengine.session.session import Session
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import ToolTraits
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.memory import with_memory_tools
from contextengine.tools.registry import Toolset, default_toolset
from contextengine.types import ToolCall


def _context(tmp_path: Path) -> HarnessContext:
    session = Session.create(tmp_path / "s", session_id="rules")
    memory = WorkingMemory(session.directory)
    return HarnessContext.of(session, memory, Workspace(tmp_path), default_toolset().traits)


def _names(rules: list[Rule]) -> list[str]:
    return [type(rule).__name__ for rule in rules]


def test_the_flags_pick_the_rules_of_the_one_list(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    assert _names(default_rules(ctx, Config().settings(HarnessSettings))) == [
        "PlanUpdates",
        "ProgressLog",
        "PlanRecitation",
        "TwoActionRule",
        "ThreeStrikeRule",
        "TaskStatusTail",
    ]
    quiet = default_rules(ctx, Config(reminders=False, recitation=False).settings(HarnessSettings))
    assert _names(quiet) == ["PlanUpdates", "ProgressLog"]
    progress = quiet[1]
    assert isinstance(progress, ProgressLog) and not progress.marks_strikes


class _Says(Rule):
    """A rule that adds one note per turn, writes progress, and names a tail."""

    def __init__(self, ctx: HarnessContext, text: str, tail: str | None = None) -> None:
        super().__init__(ctx)
        self.text, self.tail, self.seen = text, tail, 0

    def observe(self, record: LogRecord) -> None:
        self.seen += 1

    def start_turn(self, user_text: str) -> HookResult:
        self.ctx.memory.log(f"said {self.text}")
        return HookResult(
            (NoteEntry(source="test", text=self.text),), interrupt=RebootDue(self.text)
        )

    def task_status(self) -> str | None:
        return self.tail


def test_a_harness_runs_its_rules_in_list_order(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    first, second = _Says(ctx, "one"), _Says(ctx, "two", tail="tail two")
    harness = RuleHarness(ctx, [first, second])
    ctx.session.append(UserEntry(text="go"))
    result = harness.start_turn("go")
    assert [e.text for e in result.entries if isinstance(e, NoteEntry)] == ["one", "two"]
    assert isinstance(result.interrupt, RebootDue)
    assert result.interrupt.prompt == "one", "the first rule that asks for a reboot wins"
    progress = [e for e in result.events if isinstance(e, MemoryUpdate)]
    assert progress and "said one" in progress[-1].content and "said two" in progress[-1].content
    assert harness.task_status() == "tail two"
    assert (first.seen, second.seen) == (1, 1), "each new record is observed once"


class _Peek:
    """A read-only tool the engine knows only by what it declares."""

    name: ClassVar[str] = "peek"
    description: ClassVar[str] = "Look at something."
    traits: ClassVar[ToolTraits] = ToolTraits(category="read")

    class Args(BaseModel):
        pass

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome.ok("nothing new")


class _Zap(_Peek):
    """A high-risk tool with a name that says nothing about it."""

    name: ClassVar[str] = "zap"
    traits: ClassVar[ToolTraits] = ToolTraits(category="exec", risk="high", action_key="target")


def _agent(tmp_path: Path, script: list[dict], recite_after_chars: int = 0) -> Agent:
    """An agent with the default tools, ``peek`` and ``zap``; by default a long history's
    tail policy (``recite_after_chars=0``: the full status whenever it is due)."""
    base = with_memory_tools(default_toolset())
    tools = [t for name in base.names if (t := base.get(name)) is not None]
    toolset = Toolset([*tools, _Peek(), _Zap()])
    config = Config(overhead_share=None, recite_after_chars=recite_after_chars)
    return Agent(ScriptedProvider(script), tmp_path / "ws", config, tools=toolset)


def _step(name: str) -> dict:
    return {"content": "Working.", "tool_calls": [{"name": name, "arguments": {}}]}


def test_a_new_read_tool_counts_toward_the_two_action_rule(tmp_path: Path) -> None:
    agent = _agent(tmp_path, [_step("peek"), _step("peek"), {"content": "Seen enough now."}])
    agent.run("Look.")
    kinds = []
    for record in agent.session.records:
        entry = record.entry
        if isinstance(entry, ToolResultEntry):
            kinds.append(entry.tool_name)
        elif isinstance(entry, ReminderEntry) and entry.rule == "2-action":
            kinds.append("REMIND")
    assert kinds == ["peek", "peek", "REMIND"]


def test_a_new_high_risk_tool_re_reads_the_plan_and_is_logged_by_its_action(
    tmp_path: Path,
) -> None:
    session = Session.create(tmp_path / "s", session_id="risk")
    memory = WorkingMemory(session.directory)
    memory.apply_todos([("Zap the moon", "in_progress")])
    traits = Toolset([_Peek(), _Zap()]).traits
    ctx = HarnessContext.of(session, memory, Workspace(tmp_path), traits)
    recitation = PlanRecitation(ctx, 2_000)
    recitation.before_tool(ToolCall("c1", "peek", "{}"))
    (periodic,) = recitation.before_step(1).entries
    assert isinstance(periodic, ReminderEntry) and "(periodic)" in periodic.text
    recitation.before_tool(ToolCall("c2", "zap", '{"target": "the moon"}'))
    (risky,) = recitation.before_step(2).entries
    assert isinstance(risky, ReminderEntry) and "(high-risk action)" in risky.text
    ProgressLog(ctx, marks_strikes=False).after_tool(
        ToolCall("c2", "zap", '{"target": "the moon"}'), ToolOutcome.ok("zapped"), None
    )
    assert "**Target**: `the moon`" in memory.read(PROGRESS)


def test_a_long_plan_is_recited_up_to_its_share_of_the_window(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    ctx.memory.apply_todos([("Port the parser", "in_progress")])
    decisions = tuple(f"Decision {k}: keep table {k} as it is." for k in range(600))
    ctx.memory.update_plan(PlanUpdate(add_decisions=decisions))
    whole = ctx.memory.read(PLAN)
    harness = RuleHarness(
        ctx, default_rules(ctx, Config(context_window=8_000).settings(HarnessSettings))
    )
    (recital,) = harness.start_turn("go").entries
    assert isinstance(recital, ReminderEntry)
    assert "1. [>] Port the parser" in recital.text and "Decision 0:" in recital.text
    assert "Decision 599:" not in recital.text and "task_plan.md goes on" in recital.text
    assert count_tokens(recital.text) <= 800 + 100
    assert ctx.memory.read(PLAN) == whole


def test_undeclared_tools_are_no_plan_tools(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    harness = RuleHarness(ctx, default_rules(ctx, Config().settings(HarnessSettings)))
    outcome = ToolOutcome.ok("done", {"todos": [{"content": "x", "status": "done"}]})
    harness.after_tool(ToolCall("c", "my_todo", "{}"), outcome, None)
    assert ctx.memory.plan().steps == ()


def test_without_a_plan_tool_a_status_names_the_memory_folder_once_findings_are_asked_for(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider([_step("peek"), _step("peek"), {"content": "Nothing new here."}])
    Agent(
        provider,
        tmp_path / "ws",
        Config(overhead_share=None, recite_after_chars=0),
        tools=Toolset([_Peek()]),
    ).run("Look around.")
    requests = [r.messages for r in provider.requests if r.purpose == "main"]
    assert requests[0][-1]["content"] == "Look around.", "nothing to recite: the task was just said"
    assert requests[1][-1]["role"] == "tool", "no line repeating nothing new"
    reminder, status = requests[2][-2:]
    assert reminder["content"] == (
        "<system-reminder>\n2-action rule: record what your last two reads taught you in "
        "findings.md.\n</system-reminder>"
    ), "the 2-action rule names no tool the session lacks"
    assert status["content"].startswith("## Task status\nObjective: Look around.\nMemory files: ")
    assert status["content"].endswith("/ task_plan.md, findings.md, progress.md.")
    assert "No plan yet." not in status["content"], "no tool of the session writes a plan"

    with_plan = ScriptedProvider([_step("peek"), {"content": "Nothing new here."}])
    todo_write = default_toolset().get("todo_write")
    assert todo_write is not None
    Agent(
        with_plan,
        tmp_path / "ws2",
        Config(overhead_share=None, recite_after_chars=0),
        tools=Toolset([_Peek(), todo_write]),
    ).run("Look around.")
    assert with_plan.requests[1].messages[-1]["content"] == "No plan yet."


def _zap_script() -> list[dict]:
    plan = {
        "name": "todo_write",
        "arguments": {
            "todos": [
                {"content": "Look around", "status": "in_progress"},
                {"content": "Zap the target", "status": "pending"},
            ]
        },
    }
    shell = {"name": "shell_exec", "arguments": {"command": "true"}}
    script = [
        {"content": "Planning.", "tool_calls": [plan]},
        _step("peek"),
        {"content": "Zapping.", "tool_calls": [{"name": "zap", "arguments": {}}]},
        _step("peek"),
        {"content": "Running.", "tool_calls": [shell]},
        {"content": "All zapped and checked."},
    ]
    return script


def test_the_request_after_a_high_risk_call_recites_the_full_status(tmp_path: Path) -> None:
    """R8.2: the plan is re-read before the next decision after a high-risk call (the
    built-in shell_exec or any tool declaring high risk), even when the plan was recited
    a few steps before and only the focus line would be due."""
    agent = _agent(tmp_path, _zap_script())
    agent.run("Zap the target.")
    provider = agent.provider
    assert isinstance(provider, ScriptedProvider)
    tails = [str(r.messages[-1]["content"]) for r in provider.requests]
    assert "[ ] 2 Zap the target" not in tails[2], "the request before is brief"
    after_zap, after_peek, after_shell = tails[3], tails[4], tails[5]
    assert "## Task status" in after_zap and "2 Zap the target" in after_zap
    assert "Zap the target" not in after_peek, "a low-risk call is followed by the focus"
    assert "## Task status" in after_shell and "2 Zap the target" in after_shell


def test_a_short_history_ends_with_the_focus_and_with_the_plan_after_a_high_risk_call(
    tmp_path: Path,
) -> None:
    """While the history is shorter than ``recite_after_chars`` the objective, the plan
    call and the errors are in view: the tail is the focus line, and after a high-risk
    call the full status, objective, steps and focus (R8.2), without the memory folder."""
    agent = _agent(tmp_path, _zap_script(), recite_after_chars=24_000)
    agent.run("Zap the target.")
    provider = agent.provider
    assert isinstance(provider, ScriptedProvider)
    tails = [str(r.messages[-1]["content"]) for r in provider.requests]
    assert tails[1:3] == ["Focus: step 1"] * 2, "the plan call and the task are in view"
    plan = (
        "## Task status\nObjective: Zap the target.\n"
        "[>] 1 Look around\n[ ] 2 Zap the target\nFocus: step 1"
    )
    assert tails[3] == plan, "after zap: the full status"
    assert tails[4] == "Focus: step 1", "a low-risk call is followed by the focus"
    assert tails[5] == plan, "after shell_exec: the plan again"
    assert not any("Memory files" in t for t in tails)


def test_a_history_longer_than_recite_after_chars_gets_the_full_status(tmp_path: Path) -> None:
    """Out of recent view, the changed status is recited in full, objective included."""
    agent = _agent(tmp_path, _zap_script(), recite_after_chars=600)
    agent.run("Zap the target.")
    provider = agent.provider
    assert isinstance(provider, ScriptedProvider)
    tails = [str(r.messages[-1]["content"]) for r in provider.requests]
    assert tails[1] == "Focus: step 1", "the model's own plan call counts as recited"
    assert tails[2].startswith("## Task status\nObjective: Zap the target.\n[>] 1 Look around")
    assert "\nMemory files: " in tails[2], "the folder is named with the first full status"
    assert tails[3].startswith("## Task status\nObjective: "), "after zap (R8.2)"
