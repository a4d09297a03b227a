"""Gemini CLI chat recordings replay as trajectories (``measure.gemini_cli``).

The recordings are written here in the shape Gemini CLI's ``ChatRecordingService`` writes
them: one JSON object (``sessionId``, ``projectHash``, ``messages``), or, in newer versions,
JSON Lines whose messages are written again under the same id once their calls finished, with
``$set`` and ``$rewindTo`` lines (packages/core/src/services/chatRecordingService.ts).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextengine.errors import TrajectoryError
from contextengine.measure.trajectory import load_trajectory

from .conftest import cli

HEAD = {"sessionId": "9f2c", "projectHash": "a33c", "startTime": "2025-12-03T10:00:00Z"}


def user(text: object, message_id: str = "u") -> dict:
    return {"id": message_id, "timestamp": "2025-12-03T10:00:05Z", "type": "user", "content": text}


def gemini(message_id: str, text: str = "", *calls: dict, **extra: object) -> dict:
    message = {"id": message_id, "type": "gemini", "content": text, "model": "gemini-2.5-pro"}
    return {**message, "toolCalls": list(calls), **extra} if calls else {**message, **extra}


def tool_call(call_id: str, name: str, args: dict, response: dict, status: str = "success") -> dict:
    part = {"functionResponse": {"id": call_id, "name": name, "response": response}}
    return {"id": call_id, "name": name, "args": args, "result": [part], "status": status}


MESSAGES = [
    user("Make the tests pass."),
    gemini(
        "g1",
        "Running the tests first.",
        tool_call("r1", "run_shell_command", {"command": "pytest -q"}, {"output": "1 failed"}),
        tool_call("r2", "read_file", {"file_path": "calc.py"}, {"output": "def add(a, b): ..."}),
        thoughts=[{"subject": "Plan", "description": "run the tests, then read the code"}],
        tokens={"input": 900, "output": 40, "cached": 600, "thoughts": 100, "total": 1640},
    ),
    {"id": "i1", "type": "info", "content": "Request cancelled."},
    gemini(
        "g2",
        "",
        tool_call(
            "r3",
            "replace",
            {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
            {"error": "Failed to edit: 0 occurrences found for old_string"},
            status="error",
        ),
    ),
    user([{"text": "The function is in src/calc.py."}], "u2"),
    gemini("g3", "Fixed `add` in src/calc.py; the tests pass."),
]


def test_a_recording_reads_as_one_step_a_gemini_message(tmp_path: Path) -> None:
    path = tmp_path / "session-2025-12-03T10-00-9f2c.json"
    path.write_text(json.dumps({**HEAD, "messages": MESSAGES}, indent=2))
    run = load_trajectory(path)
    assert (run.model, run.task) == ("gemini-2.5-pro", "Make the tests pass.")
    first, second, third = run.steps
    assert first.assistant == "Running the tests first."
    assert first.reasoning == "Plan: run the tests, then read the code"
    assert [c.name for c in first.tool_calls] == ["run_shell_command", "read_file"]
    assert first.tool_calls[0].arguments == {"command": "pytest -q"}
    assert first.observation == "1 failed\n\ndef add(a, b): ..."
    assert not first.is_error
    assert second.is_error and second.observation.startswith("Failed to edit")
    assert third.user == "The function is in src/calc.py."
    assert third.assistant.startswith("Fixed `add`") and not third.tool_calls
    assert run.recorded_usage is not None
    assert (run.recorded_usage.requests, run.recorded_usage.input_tokens) == (1, 900)
    assert (run.recorded_usage.cached_tokens, run.recorded_usage.output_tokens) == (600, 140)


def test_json_lines_are_read_back_as_gemini_cli_reads_them(tmp_path: Path) -> None:
    early = gemini("g1", "Running the tests first.")
    lines = [
        HEAD,
        MESSAGES[0],
        early,
        MESSAGES[4],  # the user spoke before g1's calls finished and g1 was written again
        {"$set": {"lastUpdated": "2025-12-03T10:00:09Z"}},
        MESSAGES[1],  # g1 again, with its calls: in its first place
        MESSAGES[5],
        gemini("g9", "A reply the user rewound."),
        user("Never mind.", "u9"),
        {"$rewindTo": "g9"},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run = load_trajectory(path)
    assert [len(s.tool_calls) for s in run.steps] == [2, 0]
    assert run.steps[0].user is None and run.steps[1].user == "The function is in src/calc.py."
    assert "rewound" not in run.steps[-1].assistant
    restart = {"$set": {"messages": [user("Start over."), gemini("g7", "Started over.")]}}
    path.write_text("".join(json.dumps(line) + "\n" for line in [*lines, restart]))
    run = load_trajectory(path)
    assert (run.task, [s.assistant for s in run.steps]) == ("Start over.", ["Started over."])


def test_a_malformed_recording_is_one_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps({**HEAD, "messages": "none"}))
    with pytest.raises(TrajectoryError, match=r"session\.json: messages: expected a list"):
        load_trajectory(path)
    path.write_text(json.dumps({**HEAD, "messages": [user("Hello.")]}))
    with pytest.raises(TrajectoryError, match="no assistant reply in this Gemini CLI recording"):
        load_trajectory(path)
    lines = tmp_path / "session.jsonl"
    lines.write_text(json.dumps(HEAD) + "\n" + json.dumps(MESSAGES[0]) + "\n{oops\n")
    with pytest.raises(TrajectoryError, match=r"session\.jsonl: line 3: not valid JSON"):
        load_trajectory(lines)


def test_replay_takes_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps({**HEAD, "messages": MESSAGES}))
    done = cli("replay", path, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["steps"] == 3
    assert report["baselines"]["gemini_cli"]["steps"] == 3
