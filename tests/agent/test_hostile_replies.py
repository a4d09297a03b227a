"""Hostile model replies become observations the model reads, never exceptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
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
