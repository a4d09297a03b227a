"""The loop records each call's start before running it; open calls are closed, not re-run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from contextengine import Config, ScriptedProvider, Session, ToolResultEntry
from contextengine.agent.loop import Agent
from contextengine.session.interrupted import MAY_HAVE_RUN, NOT_RUN
from contextengine.toolkit.base import ToolOutcome
from contextengine.tools.registry import Toolset, default_toolset

FIXTURES = Path(__file__).parent.parent / "fixtures"


class Crash(BaseModel):
    """No arguments."""


class CrashTool:
    """Stops the process the way a kill would, from the loop's point of view."""

    name: ClassVar[str] = "crash"
    description: ClassVar[str] = "Stops the agent."
    Args: ClassVar[type[BaseModel]] = Crash

    def run(self, args: Any, ctx: Any) -> ToolOutcome:
        raise KeyboardInterrupt


def _tools() -> Toolset:
    base = default_toolset()
    return Toolset([*(base.get(n) for n in base.names), CrashTool()])  # type: ignore[list-item]


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


BATCH = {
    "content": "Three steps.",
    "tool_calls": [
        _call("file_write", path="a.txt", content="a\n"),
        _call("crash"),
        _call("file_write", path="b.txt", content="b\n"),
    ],
}


def _tool_results(request_messages: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request_messages if m["role"] == "tool"}


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(root=str(tmp_path / "sessions"))


def test_each_call_is_started_on_record_before_it_runs(tmp_path, config):
    script = [
        {
            "content": "Two files.",
            "tool_calls": [
                _call("file_write", path="a.txt", content="a\n"),
                _call("file_write", path="b.txt", content="b\n"),
            ],
        },
        {"content": "Both files are written."},
    ]
    provider = ScriptedProvider(script)
    agent = Agent(provider, tmp_path / "ws", config)
    agent.run("write two files")
    kinds = [r.entry.kind for r in agent.session.records if r.entry.kind != "reminder"]
    start = kinds.index("assistant")
    assert kinds[start : start + 5] == [
        "assistant",
        "tool_start",
        "tool_result",
        "tool_start",
        "tool_result",
    ]
    # The start records add nothing to the request.
    last = provider.requests[-1].messages
    assert [m["role"] for m in last].count("tool") == 2
    assert sum(not r.messages for r in agent.session.records) == 2


def test_a_turn_that_died_mid_batch_is_closed_before_the_next_one(tmp_path, config):
    provider = ScriptedProvider([BATCH, {"content": "I will check a.txt before going on."}])
    agent = Agent(provider, tmp_path / "ws", config, tools=_tools())
    with pytest.raises(KeyboardInterrupt):
        agent.run("do three steps")
    assert (tmp_path / "ws" / "a.txt").exists() and not (tmp_path / "ws" / "b.txt").exists()

    agent.run("go on")
    results = _tool_results(provider.requests[-1].messages)
    calls = [c.id for r in agent.session.records for c in getattr(r.entry, "tool_calls", ())]
    assert MAY_HAVE_RUN in results[calls[1]]
    assert NOT_RUN in results[calls[2]]
    assert not (tmp_path / "ws" / "b.txt").exists()  # nothing re-run behind the model's back


def test_resume_closes_the_open_calls_at_once(tmp_path, config):
    agent = Agent(ScriptedProvider([BATCH]), tmp_path / "ws", config, tools=_tools())
    with pytest.raises(KeyboardInterrupt):
        agent.run("do three steps")
    agent.session.close()

    resumed = Agent.resume(agent.session_dir, ScriptedProvider([]), config, tools=_tools())
    closing = [r.entry for r in resumed.session.records[-2:]]
    assert all(isinstance(e, ToolResultEntry) for e in closing)
    assert [e.content for e in closing] == [MAY_HAVE_RUN, NOT_RUN]  # type: ignore[union-attr]
    assert len(Session.open(agent.session_dir).records) == len(resumed.session.records)


def test_a_version_1_session_resumes_and_goes_on(tmp_path, config):
    folder = tmp_path / "v1"
    shutil.copytree(FIXTURES / "session_v1", folder)
    meta = {"session_id": "20260101-000000-fixture", "workspace": str(tmp_path / "ws")}
    (folder / "session.json").write_text(json.dumps(meta), encoding="utf-8")
    script = [
        {"content": "Reading.", "tool_calls": [_call("file_read", path="missing.py")]},
        {"content": "That file does not exist here."},
    ]
    provider = ScriptedProvider(script)
    agent = Agent.resume(folder, provider, config)
    assert agent.run("read missing.py").status == "completed"
    reopened = Session.open(folder)
    assert [r.entry.kind for r in reopened.records][:4] == [
        "user",
        "assistant",
        "tool_result",
        "assistant",
    ]
    assert "tool_start" in [r.entry.kind for r in reopened.records]
