"""Hostile model replies become observations the model reads, never exceptions."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.events import ToolResultEvent
from contextengine.agent.loop import Agent
from contextengine.agent.tool_step import MAX_CALLS_PER_REPLY
from contextengine.session.entries import AssistantEntry, ToolResultEntry

FINAL = {"content": "The task is done and checked."}


def run(tmp_path: Path, *replies: dict, protocol: str = "native") -> Agent:
    final = FINAL if protocol == "native" else {"content": f"Action: Finish[{FINAL['content']}]"}
    agent = Agent(ScriptedProvider([*replies, final]), tmp_path / "ws", Config(), protocol=protocol)
    result = agent.run("Read the file.")
    assert result.status == "completed", result.error
    return agent


def results(agent: Agent) -> list[ToolResultEntry]:
    return [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"path": NaN}', "NaN is not valid JSON"),
        ('{"path": Infinity}', "Infinity is not valid JSON"),
        ('{"path": 1e999}', "out of range"),
        ('{"path": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 100"),
        ("[1, 2]", "must be a JSON object"),
        ('"a.txt"', "must be a JSON object"),
    ],
)
def test_bad_arguments_are_an_invalid_arguments_observation(
    tmp_path: Path, arguments: str, problem: str
) -> None:
    agent = run(tmp_path, {"tool_calls": [{"name": "file_read", "arguments": arguments}]})
    (result,) = results(agent)
    assert result.status == "error" and result.error_class is not None
    assert "not a JSON object" in result.content and problem in result.content


@pytest.mark.parametrize("path", ["a\x00b", "a" * 5000, "x/" * 3000])
def test_nul_and_over_long_paths_are_error_observations(tmp_path: Path, path: str) -> None:
    agent = run(tmp_path, {"tool_calls": [{"name": "file_read", "arguments": {"path": path}}]})
    (result,) = results(agent)
    assert result.status == "error"


def test_lone_surrogates_are_recorded_as_replacement_characters(tmp_path: Path) -> None:
    reply = {
        "content": "look \ud800",
        "reasoning": "\udfff",
        "tool_calls": [{"name": "file_read", "arguments": '{"path": "\\ud800.txt"}'}],
    }
    agent = run(tmp_path, reply)
    (entry, _) = [r.entry for r in agent.session.records if isinstance(r.entry, AssistantEntry)]
    assert isinstance(entry, AssistantEntry)
    assert entry.text == "look \ufffd" and entry.reasoning == "\ufffd"
    (result,) = results(agent)
    assert "\ufffd.txt" in result.content
    reread = Agent.resume(agent.session_dir, ScriptedProvider([]))
    assert len(reread.session.records) == len(agent.session.records)


def test_text_protocol_actions_with_nan_or_deep_json_are_error_observations(
    tmp_path: Path,
) -> None:
    agent = run(
        tmp_path,
        {"content": 'Action: file_read[{"path": NaN}]'},
        {"content": "Action: file_read[" + "[" * 5000 + "]"},
        protocol="text",
    )
    assert [r.status for r in results(agent)] == ["error", "error"]


@pytest.mark.timeout(120)
def test_ten_thousand_calls_in_one_reply_run_at_most_the_cap(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    for index in range(10):
        (tmp_path / "ws" / f"f{index}.txt").write_text(f"file {index}\n")
    calls = [
        {"name": "file_read", "arguments": {"path": f"f{index % 10}.txt"}}
        for index in range(10_000)
    ]
    started = time.monotonic()
    agent = run(tmp_path, {"tool_calls": calls})
    assert time.monotonic() - started < 60
    done = results(agent)
    assert len(done) == MAX_CALLS_PER_REPLY + 1
    assert all(result.status == "success" for result in done[:-1])
    assert done[-1].status == "error"
    assert "this reply made 10000 tool calls" in done[-1].content
    assert f"the {10_000 - MAX_CALLS_PER_REPLY - 1} after it were dropped" in done[-1].content
    (reply, _) = [r.entry for r in agent.session.records if isinstance(r.entry, AssistantEntry)]
    assert isinstance(reply, AssistantEntry)
    assert len(reply.tool_calls) == MAX_CALLS_PER_REPLY + 1


def test_a_reply_at_the_cap_runs_every_call(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    calls = [{"name": "file_read", "arguments": {"path": "a.txt"}}] * MAX_CALLS_PER_REPLY
    done = results(run(tmp_path, {"tool_calls": calls}))
    assert [r.status for r in done] == ["success"] * MAX_CALLS_PER_REPLY


def test_cancel_stops_a_batch_after_the_running_call(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    calls = [{"name": "file_read", "arguments": {"path": "a.txt"}}] * 5
    agent = Agent(ScriptedProvider([{"tool_calls": calls}, FINAL]), tmp_path / "ws", Config())
    cancel = threading.Event()
    for event in agent.stream("Read the file.", cancel):
        if isinstance(event, ToolResultEvent):
            cancel.set()
    assert [r.status for r in results(agent)] == ["success"] + ["error"] * 4
    assert all("Not run: the turn was cancelled." in r.content for r in results(agent)[1:])
