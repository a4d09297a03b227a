"""Codex CLI session rollouts replay as trajectories (``measure.codex``).

The rollouts are written here in the shape Codex CLI writes them (``session_meta``,
``response_item``, ``event_msg``, ``turn_context`` and ``compacted`` lines, as in the
rollouts of Codex 0.60 and the items of ``codex-rs/protocol``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextengine.errors import TrajectoryError
from contextengine.measure.codex import rollout_as_trajectory
from contextengine.measure.trajectory import load_trajectory

from .conftest import cli

BASE = "You are Codex, a coding agent."
PATCH = "*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n*** End Patch\n"


def line(kind: str, **payload: object) -> dict:
    return {"timestamp": "2025-11-22T20:48:46.593Z", "type": kind, "payload": payload}


def item(kind: str, **fields: object) -> dict:
    return line("response_item", type=kind, **fields)


def message(role: str, text: str) -> dict:
    part = "output_text" if role == "assistant" else "input_text"
    return item("message", role=role, content=[{"type": part, "text": text}])


def call(call_id: str, command: str) -> dict:
    arguments = json.dumps({"command": command, "workdir": "/work/app"})
    return item("function_call", name="shell_command", arguments=arguments, call_id=call_id)


def output(call_id: str, text: object, kind: str = "function_call_output") -> dict:
    return item(kind, call_id=call_id, output=text)


def tokens(total: int, last: int, cached: int) -> dict:
    usage = {"input_tokens": last, "cached_input_tokens": cached, "output_tokens": 30}
    info = {"total_token_usage": {"input_tokens": total}, "last_token_usage": usage}
    return line("event_msg", type="token_count", info=info)


def thought(text: str) -> dict:
    summary = [{"type": "summary_text", "text": text}]
    return item("reasoning", summary=summary, content=None, encrypted_content="gAAA")


ROLLOUT = [
    line("session_meta", id="0199", cwd="/work/app", base_instructions={"text": BASE}),
    message("developer", "<permissions instructions>workspace-write</permissions instructions>"),
    message("user", "<environment_context>\n  <cwd>/work/app</cwd>\n</environment_context>"),
    message("user", "Fix the failing test in calc.py."),
    line("event_msg", type="user_message", message="Fix the failing test in calc.py."),
    line("turn_context", cwd="/work/app", model="gpt-5.1-codex"),
    item("ghost_snapshot", ghost_commit={"id": "d8b2", "parent": None}),
    line("event_msg", type="token_count", info=None),
    tokens(3559, 3559, 3072),
    thought("**Running the tests**"),
    call("c1", "pytest -q"),
    call("c2", "cat calc.py"),
    output(
        "c1", "Exit code: 1\nWall time: 0.4 seconds\nOutput:\nFAILED test_add - assert 3 == 4\n"
    ),
    output("c2", "Exit code: 0\nWall time: 0 seconds\nOutput:\ndef add(a, b):\n    return a - b\n"),
    tokens(3559, 3559, 3072),
    line("event_msg", type="agent_reasoning", text="**Fixing add**"),
    tokens(7207, 3648, 3072),
    thought("**Fixing add**"),
    item("custom_tool_call", status="completed", call_id="c3", name="apply_patch", input=PATCH),
    output(
        "c3",
        json.dumps({"output": "Success. Updated:\nM calc.py\n", "metadata": {"exit_code": 0}}),
        "custom_tool_call_output",
    ),
    item("function_call", name="exec_command", arguments='{"cmd":"pytest -q"}', call_id="c4"),
    output(
        "c4",
        "Chunk ID: 1a\nWall time: 0.3 seconds\nProcess exited with code 0\nOutput:\n1 passed\n",
    ),
    message("assistant", "Fixed `add` in calc.py; the test passes."),
    line("event_msg", type="agent_message", message="Fixed `add` in calc.py; the test passes."),
    message("user", "Now add a test of subtract."),
    item("custom_tool_call", status="completed", call_id="c5", name="apply_patch", input=PATCH),
    output(
        "c5",
        "apply_patch verification failed: Failed to find expected lines in /work/app/calc.py",
        "custom_tool_call_output",
    ),
    line("compacted", message="Summary: add fixed; a subtract test is next."),
    item(
        "local_shell_call",
        call_id="c6",
        status="completed",
        action={"type": "exec", "command": ["bash", "-lc", "ls"]},
    ),
    output("c6", [{"type": "input_text", "text": "calc.py\ntest_calc.py\n"}]),
    item("web_search_call", status="completed", action={"type": "search", "query": "pytest"}),
    message("assistant", "Added the test of subtract."),
]


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(entry) + "\n" for entry in lines), encoding="utf-8")
    return path


def test_a_rollout_reads_as_one_step_a_reply(tmp_path: Path) -> None:
    run = load_trajectory(write(tmp_path / "rollout.jsonl", ROLLOUT))
    assert run.model == "gpt-5.1-codex"
    assert run.task.startswith("<environment_context>") and "Fix the failing test" in run.task
    assert run.system.startswith(BASE) and "<permissions instructions>" in run.system
    steps = run.steps
    assert [[c.name for c in s.tool_calls] for s in steps] == [
        ["shell_command", "shell_command"],
        ["apply_patch"],
        ["exec_command"],
        [],
        ["apply_patch"],
        ["local_shell"],
        ["web_search"],
    ]
    first = steps[0]
    assert first.reasoning == "**Running the tests**"
    assert first.tool_calls[0].arguments == {"command": "pytest -q", "workdir": "/work/app"}
    assert "assert 3 == 4" in first.observation and "return a - b" in first.observation
    assert steps[1].tool_calls[0].arguments == PATCH, "a custom tool's input stays text"
    assert steps[3].assistant == "Fixed `add` in calc.py; the test passes."
    assert steps[4].user == "Now add a test of subtract."
    assert steps[5].user == "Summary: add fixed; a subtract test is next."
    assert steps[5].tool_calls[0].arguments == {"type": "exec", "command": ["bash", "-lc", "ls"]}
    assert steps[5].observation == "calc.py\ntest_calc.py\n"
    assert steps[6].tool_calls[0].arguments == {"type": "search", "query": "pytest"}
    assert steps[6].assistant == "Added the test of subtract."


def test_the_usage_codex_counted_is_summed_once_a_model_call(tmp_path: Path) -> None:
    run = load_trajectory(write(tmp_path / "rollout.jsonl", ROLLOUT))
    assert run.recorded_usage is not None
    assert run.recorded_usage.model_dump() == {
        "requests": 2,
        "input_tokens": 3559 + 3648,
        "cached_tokens": 6144,
        "cache_write_tokens": 0,
        "output_tokens": 60,
    }, "a count repeated unchanged is the same call"


def test_the_table_says_what_the_session_log_records(tmp_path: Path) -> None:
    path = write(tmp_path / "rollout.jsonl", ROLLOUT)
    done = cli("replay", path)
    assert done.returncode == 0, done.stderr
    assert "as the session log records it: 2 model calls, 7,207 input tokens (85.3% cached)" in (
        " ".join(done.stdout.split())
    )


def test_a_step_fails_on_a_non_zero_exit_code_or_an_error_line(tmp_path: Path) -> None:
    run = load_trajectory(write(tmp_path / "rollout.jsonl", ROLLOUT))
    assert [s.is_error for s in run.steps] == [True, False, False, False, True, False, False]


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("Exit code: 2\nWall time: 1 seconds\nOutput:\nboom\n", True),
        ("Exit code: 0\nWall time: 1 seconds\nOutput:\nerror: in the output only\n", False),
        ("Chunk ID: a\nWall time: 0 seconds\nProcess exited with code 127\nOutput:\n", True),
        ('{"output":"x","metadata":{"exit_code":1,"duration_seconds":0.1}}', True),
        ('{"output":"x","metadata":{"exit_code":0,"duration_seconds":0.1}}', False),
        ("error: unknown command", True),
        ("failed to parse function arguments: missing field `command`", True),
        ("No errors found.", False),
        ("Plan updated", False),
    ],
)
def test_what_marks_an_output_as_failed(tmp_path: Path, text: str, failed: bool) -> None:
    lines = [message("user", "Go."), call("c1", "make"), output("c1", text)]
    (step,) = rollout_as_trajectory("".join(json.dumps(x) + "\n" for x in lines), "r")["steps"]
    assert step["is_error"] is failed


def test_an_mcp_result_flagged_as_an_error_fails() -> None:
    result = {"content": [{"type": "text", "text": "no such issue"}], "isError": True}
    lines = [message("user", "Go."), call("c1", "x"), output("c1", result, "mcp_tool_call_output")]
    (step,) = rollout_as_trajectory("".join(json.dumps(x) + "\n" for x in lines), "r")["steps"]
    assert (step["observation"], step["is_error"]) == ("no such issue", True)


def test_a_malformed_rollout_is_one_error_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_text(json.dumps(ROLLOUT[0]) + "\n" + json.dumps(ROLLOUT[1]) + "\n{oops\n")
    with pytest.raises(TrajectoryError, match=r"rollout\.jsonl: line 3: not valid JSON"):
        load_trajectory(path)
    path.write_text(json.dumps(ROLLOUT[0]) + "\n[1, 2]\n")
    with pytest.raises(TrajectoryError, match=r"line 2: not a Codex rollout line"):
        load_trajectory(path)
    with pytest.raises(TrajectoryError, match=r"no assistant reply in this Codex rollout"):
        load_trajectory(write(path, ROLLOUT[:8]))


def test_replay_takes_a_rollout_and_compares_it_with_every_policy(tmp_path: Path) -> None:
    path = write(tmp_path / "rollout.jsonl", ROLLOUT)
    done = cli("replay", path, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["steps"] == 7
    assert report["baselines"]["full_history"]["steps"] == 7
    assert "codex" in report["baselines"]
    recorded = report["recorded"]
    assert (recorded["requests"], recorded["uncached_tokens"]) == (2, 7207 - 6144)
    assert 0 < recorded["input_cost_usd"] < recorded["cost_usd"]
