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


def test_a_cancel_while_the_model_answers_records_its_calls_as_not_run(tmp_path: Path) -> None:
    cancel = threading.Event()

    def model(request: Request) -> dict[str, Any]:
        cancel.set()  # the user presses Stop while the model answers
        return WRITE

    agent = Agent(ScriptedProvider(model), tmp_path, Config())
    events = list(agent.stream("go", cancel))
    assert [e.name for e in events if isinstance(e, ToolResultEvent)] == ["file_write"] * 2
    assert events[-1].result.status == "cancelled"
    assert events[-1].result.steps == 1
    # a cancel waits for at most the one call running, not a reply's batch of up to 64:
    # the reply is recorded and every call answered (the history stays valid), none runs
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()
    entries = [r.entry for r in agent.session.records]
    answered = [e for e in entries if isinstance(e, ToolResultEntry)]
    assert all("Not run: the turn was cancelled." in e.content for e in answered)
    conversation = [
        type(e) for e in entries if isinstance(e, UserEntry | AssistantEntry | ToolResultEntry)
    ]
    assert conversation == [UserEntry, AssistantEntry, ToolResultEntry, ToolResultEntry]
