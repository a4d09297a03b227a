"""The loop's one interrupt channel: any hook of a step may change the turn's course."""

from __future__ import annotations

from pathlib import Path

from contextengine import Config, ScriptedProvider
from contextengine.agent.events import Done, HumanQuestion
from contextengine.agent.flow import HumanNeeded, RebootDue
from contextengine.agent.hooks import NOTHING, HookResult, NullHarness
from contextengine.agent.loop import Agent
from contextengine.session.entries import NoteEntry, ToolResultEntry, UserEntry
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.modes import NO_TOOLS
from contextengine.types import ToolCall

LIST = {"content": "Looking.", "tool_calls": [{"name": "file_ls", "arguments": {}}]}
ANSWER = {"content": "The workspace is empty, so there is nothing to list."}


class AsksAtStep(NullHarness):
    """Asks a human ``question`` before step ``at``, after noting that it does."""

    def __init__(self, at: int, question: str) -> None:
        self.at, self.question = at, question

    def before_step(self, step: int) -> HookResult:
        if step != self.at:
            return NOTHING
        note = NoteEntry(source="test", text="asking")
        return HookResult((note,), interrupt=HumanNeeded(self.question))


class RebootsAfterTool(NullHarness):
    """Asks for one reboot after the first tool result; keeps the answer."""

    def __init__(self) -> None:
        self.answers: list[str] = []

    def after_tool(self, call: ToolCall, outcome: ToolOutcome, error: str | None) -> HookResult:
        return NOTHING if self.answers else HookResult(interrupt=RebootDue("Where are you?"))

    def after_reboot(self, answer: str) -> HookResult:
        self.answers.append(answer)
        return NOTHING


class AsksBeforeTool(NullHarness):
    """Asks a human before the first tool call."""

    def before_tool(self, call: ToolCall) -> HookResult:
        return HookResult(interrupt=HumanNeeded(f"May I run {call.name}?"))


def agent_with(
    tmp_path: Path, harness: NullHarness, *script: dict
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(list(script))
    return Agent(provider, tmp_path / "ws", Config(), harness=harness), provider


def test_a_question_from_before_step_ends_the_turn_when_nobody_answers(tmp_path: Path) -> None:
    agent, provider = agent_with(tmp_path, AsksAtStep(1, "Which folder?"), LIST, ANSWER)
    events = list(agent.stream("List the files."))
    assert [e.question for e in events if isinstance(e, HumanQuestion)] == ["Which folder?"]
    result = events[-1]
    assert isinstance(result, Done) and result.result.status == "needs_human"
    assert result.result.error == "Which folder?" and result.result.steps == 2
    # the hook's entries are appended before the loop acts on its interrupt
    assert isinstance(agent.session.records[-1].entry, NoteEntry)
    assert len(provider.requests) == 1


def test_a_question_answered_for_this_turn_goes_on(tmp_path: Path) -> None:
    agent, provider = agent_with(tmp_path, AsksAtStep(1, "Which folder?"), LIST, ANSWER)
    asked: list[str] = []
    events = list(agent.stream("List the files.", ask_human=lambda q: asked.append(q) or "ws"))
    assert asked == ["Which folder?"]
    assert events[-1].result.status == "completed"
    users = [r.entry.text for r in agent.session.records if isinstance(r.entry, UserEntry)]
    assert users == ["List the files.", "ws"]
    assert len(provider.requests) == 2


def test_a_reboot_from_after_tool_asks_its_prompt_once_with_no_tools(tmp_path: Path) -> None:
    harness = RebootsAfterTool()
    reboot_answer = {"content": "I listed the workspace; next I answer."}
    agent, provider = agent_with(tmp_path, harness, LIST, reboot_answer, ANSWER)
    assert agent.run("List the files.").status == "completed"
    assert [r.purpose for r in provider.requests] == ["main", "reboot", "main"]
    reboot = provider.requests[1]
    assert reboot.mask == NO_TOOLS
    assert reboot.messages[-1] == {"role": "user", "content": "Where are you?"}
    assert harness.answers == ["I listed the workspace; next I answer."]


def test_a_question_from_before_tool_waits_for_the_batch_to_end(tmp_path: Path) -> None:
    agent, provider = agent_with(tmp_path, AsksBeforeTool(), LIST, ANSWER)
    result = agent.run("List the files.")
    assert result.status == "needs_human" and result.error == "May I run file_ls?"
    # nothing stands between a call and its result: the call ran, then the loop asked
    assert isinstance(agent.session.records[-1].entry, ToolResultEntry)
    assert len(provider.requests) == 1
