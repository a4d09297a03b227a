"""A realistic scripted coding session through the real loop, tools and compression."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from contextengine import Config, ScriptedProvider, ToolMask
from contextengine.agent.loop import Agent
from contextengine.session.entries import ToolResultEntry
from support.requests import persisted_text
from support.sandbox import PYTHON_PATHS

BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('tests passed')\n"
BIG = "import sys\nfor i in range(10000):\n    sys.stdout.write(f'line {i:05d}\\n')\n"


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def coding_script(python: str) -> list[dict]:
    """Round 1: 16 model calls; a failing test, a fix, a passing test."""
    return [
        {
            "content": "Planning.",
            "tool_calls": [
                call(
                    "todo_write",
                    todos=[
                        {"content": "Write calc.py and its test", "status": "in_progress"},
                        {"content": "Make the test pass", "status": "pending"},
                    ],
                )
            ],
        },
        {
            "content": "Writing the module.",
            "tool_calls": [call("file_write", path="calc.py", content=BUGGY)],
        },
        {
            "content": "Writing the test.",
            "tool_calls": [call("file_write", path="test_calc.py", content=TEST)],
        },
        {
            "content": "Running the test.",
            "tool_calls": [call("shell_exec", command=f"{python} test_calc.py")],
        },
        {
            "content": "It failed; reading the module.",
            "tool_calls": [call("file_read", path="calc.py")],
        },
        {
            "content": "Checking the parent folder.",
            "tool_calls": [call("file_read", path="../secret.txt")],
        },
        {"content": "Listing the workspace.", "tool_calls": [call("file_ls")]},
        {"content": "Looking for other uses.", "tool_calls": [call("file_grep", pattern="add\\(")]},
        {
            "content": "Writing a generator of a big output.",
            "tool_calls": [call("file_write", path="big.py", content=BIG)],
        },
        {
            "content": "Producing the big output.",
            "tool_calls": [call("shell_exec", command=f"{python} big.py")],
        },
        {
            "content": "Fixing the bug.",
            "tool_calls": [call("file_edit", path="calc.py", old_text="a - b", new_text="a + b")],
        },
        {
            "content": "Running the test again.",
            "tool_calls": [call("shell_exec", command=f"{python} test_calc.py")],
        },
        {"content": "Finding python files.", "tool_calls": [call("file_glob", pattern="*.py")]},
        {
            "content": "Re-reading the fix.",
            "tool_calls": [call("file_read", path="calc.py", start_line=1, end_line=2)],
        },
        {
            "content": "Updating the plan.",
            "tool_calls": [
                call(
                    "todo_write",
                    todos=[
                        {"content": "Write calc.py and its test", "status": "done"},
                        {"content": "Make the test pass", "status": "done"},
                    ],
                )
            ],
        },
        {
            "content": "calc.add now adds: the test failed with an AssertionError (2 - 3 = -1), I fixed the operator and the test passes."
        },
    ]


@pytest.fixture(params=["full", "compressed"])
def finished_session(tmp_path, request):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret.txt").write_text("do not read")
    script = coding_script(sys.executable)
    script += [
        {
            "content": "Trying to write.",
            "tool_calls": [call("file_write", path="masked.txt", content="x")],
        },
        {
            "content": "The write tool is masked in this mode, so I only inspected: nothing was changed."
        },
    ]
    provider = ScriptedProvider(script)
    # The script runs this interpreter, so the sandbox shows it (read-only).
    config = Config(history_mode=request.param, sandbox_read_only_paths=PYTHON_PATHS)
    agent = Agent(provider, workspace, config)
    first = agent.run("Create calc.py with add(a, b) and a test, and make the test pass.")
    agent.mask = ToolMask.only("file_read", "shell_exec", mode="auto")
    second = agent.run("Now write masked.txt.")
    return agent, provider, first, second, workspace


def main_requests(provider):
    return [r for r in provider.requests if r.purpose == "main"]


def test_run_completes_with_the_final_answer(finished_session):
    agent, provider, first, second, workspace = finished_session
    assert first.status == "completed" and "test passes" in first.final_answer
    assert first.steps >= 16
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert first.session_dir == agent.session_dir
    for name in ("session.jsonl", "usage.jsonl", "artifacts"):
        assert (first.session_dir / name).exists()


def test_tools_and_l1_identical_in_every_request(finished_session):
    _, provider, *_ = finished_session
    first = provider.requests[0]
    for request in provider.requests:
        assert request.tools == first.tools
        assert request.messages[0] == first.messages[0]
    assert [t["function"]["name"] for t in first.tools] == sorted(
        t["function"]["name"] for t in first.tools
    )


def test_persisted_part_is_a_byte_prefix_of_the_next_request(finished_session):
    _, provider, *_ = finished_session
    requests = main_requests(provider)
    for previous, current in itertools.pairwise(requests):
        assert current.text().startswith(persisted_text(previous))


def test_traceback_reaches_the_next_request_verbatim(finished_session, tmp_path):
    _, provider, *_ = finished_session
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "calc.py").write_text(BUGGY)
    (probe / "test_calc.py").write_text(TEST)
    run = subprocess.run(
        [sys.executable, "test_calc.py"], cwd=probe, capture_output=True, text=True
    )
    expected = run.stderr.replace(str(probe), str(finished_session[4]))
    assert "AssertionError" in expected
    answering_the_failure = main_requests(provider)[4]
    observation = next(
        m["content"]
        for m in answering_the_failure.messages
        if "AssertionError" in str(m["content"])
    )
    assert expected in observation
    assert "[exit code 1]" in observation


def test_masked_call_is_not_executed_and_names_the_allowed_tools(finished_session):
    agent, provider, first, second, workspace = finished_session
    assert not (workspace / "masked.txt").exists()
    refused = [
        r.entry
        for r in agent.session.records
        if isinstance(r.entry, ToolResultEntry)
        and r.entry.tool_name == "file_write"
        and r.entry.status == "error"
    ]
    assert refused and refused[-1].error_class == "masked_tool"
    assert "file_read" in refused[-1].content and "shell_exec" in refused[-1].content
    masked_request = main_requests(provider)[-2]
    assert masked_request.mask == ToolMask.only("file_read", "shell_exec", mode="auto")
    assert masked_request.tools == provider.requests[0].tools
    assert second.status == "completed"


def test_path_escape_is_refused(finished_session):
    agent, *_ = finished_session
    escape = next(
        r.entry
        for r in agent.session.records
        if isinstance(r.entry, ToolResultEntry) and "secret" in r.entry.content
    )
    assert escape.status == "error" and escape.error_class == "outside_workspace"
    assert "outside the workspace" in escape.content
    assert "do not read" not in (agent.session_dir / "session.jsonl").read_text()


def test_big_output_is_externalized_and_recovered_exactly(finished_session):
    agent, provider, *_ = finished_session
    expected = "".join(f"line {i:05d}\n" for i in range(10000))
    entry = next(
        r.entry
        for r in agent.session.records
        if isinstance(r.entry, ToolResultEntry) and r.entry.original_length > 50_000
    )
    assert entry.full_ref is not None
    answering = main_requests(provider)[10]
    shown = next(
        str(m["content"])
        for m in answering.messages
        if '"_type":"compressed_ref"' in str(m["content"])
    )
    assert len(shown) < 5_000, "the model sees a ref, a preview and an index, not 110 kB"
    assert "Names in the full output" not in shown, "plain line numbers hold no new names"
    ref_json = shown[shown.index("{") : shown.index("}", shown.index('"_type"')) + 1]
    recovered = agent.recover(ref_json)
    assert expected in recovered
    assert len(entry.content) < 5_000
    assert len(json.dumps(answering.messages)) < 40_000
