"""A cancel token stops a turn before its next step; the session goes on afterwards."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from contextengine import Config, ScriptedProvider
from contextengine.agent.events import Done, ToolResultEvent
from contextengine.agent.loop import Agent
from contextengine.context.request import Request
from contextengine.session.entries import AssistantEntry, ToolResultEntry, UserEntry

WRITE = {
    "content": "Writing two files.",
    "tool_calls": [
        {"name": "file_write", "arguments": {"path": "a.txt", "content": "a"}},
        {"name": "file_write", "arguments": {"path": "b.txt", "content": "b"}},
    ],
}


def test_a_cancelled_token_ends_the_turn_before_the_first_model_call(tmp_path: Path) -> None:
    provider = ScriptedProvider([{"content": "A complete answer for the user."}])
    agent = Agent(provider, tmp_path, Config())
    cancel = threading.Event()
    cancel.set()
    events = list(agent.stream("go", cancel))
    assert isinstance(events[-1], Done)
    assert events[-1].result.status == "cancelled"
    assert events[-1].result.steps == 0
    assert provider.requests == []
    assert agent.run("again").final_answer == "A complete answer for the user."


def test_a_cancel_during_a_step_lets_its_tool_calls_finish(tmp_path: Path) -> None:
    cancel = threading.Event()

    def model(request: Request) -> dict[str, Any]:
        cancel.set()  # the user presses Stop while the model answers
        return WRITE

    agent = Agent(ScriptedProvider(model), tmp_path, Config())
    events = list(agent.stream("go", cancel))
    assert [e.name for e in events if isinstance(e, ToolResultEvent)] == ["file_write"] * 2
    assert events[-1].result.status == "cancelled"
    assert events[-1].result.steps == 1
    assert (tmp_path / "a.txt").read_text() == "a" and (tmp_path / "b.txt").read_text() == "b"
    entries = [r.entry for r in agent.session.records]
    conversation = [
        type(e) for e in entries if isinstance(e, UserEntry | AssistantEntry | ToolResultEntry)
    ]
    assert conversation == [UserEntry, AssistantEntry, ToolResultEntry, ToolResultEntry]
