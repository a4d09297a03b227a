"""Claude Code session transcripts replay as trajectories (``measure.claude_code``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextengine.errors import TrajectoryError
from contextengine.measure.trajectory import load_trajectory

from .conftest import cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
SONNET_SESSION = FIXTURES / "5ed31c36-bca8-40fd-8d24-f1a1f0af7901.jsonl"
SID = {"sessionId": "s1"}


def reply(message_id: str, *blocks: dict, model: str = "claude-x", **extra: object) -> dict:
    message = {"id": message_id, "model": model, "role": "assistant", "content": list(blocks)}
    return {"type": "assistant", "message": message, **SID, **extra}


def said(content: object, **extra: object) -> dict:
    return {"type": "user", "message": {"role": "user", "content": content}, **SID, **extra}


def result(call_id: str, content: object, *, error: bool = False) -> dict:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    return said([{**block, "is_error": error}])


def use(call_id: str, name: str, **arguments: object) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_real_session_reads_as_its_replies_with_their_calls_and_results() -> None:
    run = load_trajectory(SONNET_SESSION)
    assert run.model == "claude-sonnet-4-5-20250929"
    assert "mysterious build errors" in run.task
    assert len(run.steps) == 3
    first = run.steps[0]
    assert [c.name for c in first.tool_calls] == ["Glob", "Glob", "Glob"]
    assert first.observation.count("No files found") == 3
    assert [c.name for c in run.steps[1].tool_calls] == ["Write"]
    assert not run.steps[2].tool_calls and run.steps[2].assistant
    assert run.recorded_usage is not None, "each reply's usage, once"
    assert run.recorded_usage.model_dump() == {
        "requests": 3,
        "input_tokens": 49_115,
        "cached_tokens": 12_243 + 16_131 + 16_368,
        "cache_write_tokens": 3_888 + 237 + 205,
        "output_tokens": 3,
    }


def test_replay_takes_a_transcript_and_compares_it_with_every_policy() -> None:
    done = cli("replay", SONNET_SESSION, "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["steps"] == 3 and figures["reference_recall"] is not None
    assert {"full_history", "claude_code", "codex"} <= set(figures["baselines"])


def test_lines_of_one_reply_are_one_step_and_later_messages_go_with_the_next(
    tmp_path: Path,
) -> None:
    lines = [
        {"type": "summary", "summary": "an old title", "leafUuid": "u0"},
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
        said("<command-name>/clear</command-name>", isMeta=True),
        said("Fix the tests in src/app.py"),
        reply("r1", {"type": "thinking", "thinking": "Look first."}),
        reply("r1", {"type": "text", "text": "Reading it."}),
        reply("r1", use("t1", "Read", file_path="src/app.py")),
        result("t1", [{"type": "text", "text": "1 def app(): ..."}]),
        reply("r2", use("t2", "Bash", command="pytest")),
        result("t2", "Exit code 1\nFAILED test_app", error=True),
        reply("r9", {"type": "text", "text": "No response requested."}, model="<synthetic>"),
        reply("s1", use("t3", "Grep", pattern="x"), isSidechain=True),
        said([{"type": "text", "text": "Also update the README"}]),
        reply("r3", {"type": "text", "text": "Done."}),
    ]
    run = load_trajectory(write(tmp_path / "session.jsonl", lines))
    assert run.task == "Fix the tests in src/app.py"
    assert run.model == "claude-x"
    first, second, third = run.steps
    assert (first.reasoning, first.assistant) == ("Look first.", "Reading it.")
    assert first.tool_calls[0].argument_values == {"file_path": "src/app.py"}
    assert first.observation == "1 def app(): ..." and not first.is_error
    assert second.is_error and "FAILED test_app" in second.observation
    assert first.user == "<command-name>/clear</command-name>" and second.user is None
    assert third.user == "Also update the README" and third.assistant == "Done."
    assert all(c.name != "Grep" for s in run.steps for c in s.tool_calls)


def test_a_sub_agents_own_transcript_is_read_although_every_line_is_sidechain(
    tmp_path: Path,
) -> None:
    lines = [
        said("Find the config", isSidechain=True),
        reply("r1", use("t1", "Glob", pattern="*.toml"), isSidechain=True),
        result("t1", "pyproject.toml") | {"isSidechain": True},
        reply("r2", {"type": "text", "text": "pyproject.toml"}, isSidechain=True),
    ]
    run = load_trajectory(write(tmp_path / "agent-a1.jsonl", lines))
    assert run.task == "Find the config" and len(run.steps) == 2


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([said("hi"), "not json"], "line 2: not valid JSON"),
        ([said("hi"), [1, 2]], "line 2: not a Claude Code transcript line"),
        ([said("hi"), said("anyone?")], "no assistant reply in this Claude Code transcript"),
        (["", "  "], "empty file (no trajectory in it)"),
    ],
)
def test_a_malformed_transcript_is_one_error_naming_file_and_line(
    tmp_path: Path, lines: list[object], message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    with pytest.raises(TrajectoryError) as caught:
        load_trajectory(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_a_trajectory_written_on_one_line_is_still_a_trajectory(tmp_path: Path) -> None:
    step = {"assistant": "ok", "tool_calls": [{"name": "ls", "id": "c1"}], "observation": "a"}
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"task": "List", "steps": [step]}), encoding="utf-8")
    assert load_trajectory(path).task == "List"


def test_a_transcript_of_one_line_is_still_a_transcript(tmp_path: Path) -> None:
    """A sub-agent that answered once without a task of its own (Claude Code's warm-up
    agents) writes a one-line transcript."""
    line = reply("r1", {"type": "text", "text": "Ready to help."}, isSidechain=True)
    run = load_trajectory(write(tmp_path / "agent-w1.jsonl", [line]))
    assert (run.task, [s.assistant for s in run.steps]) == ("", ["Ready to help."])
