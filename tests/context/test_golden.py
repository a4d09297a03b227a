"""Golden files for the rendered prefix: a change to the cached bytes must show up in review.

Regenerate deliberately with ``UPDATE_GOLDEN=1 pytest tests/context/test_golden.py``.
"""

import json
import os
from pathlib import Path

from contextengine import (
    AssistantEntry,
    Config,
    ContextBuilder,
    FullObservation,
    LiveContext,
    NoteEntry,
    Session,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.context.builder import BuilderSettings

GOLDEN = Path(__file__).parent.parent / "golden"

SYSTEM = "You are contextengine's coding agent. Work in small verified steps.\nStarted 2026-11-22T02:00:00Z."
TOOLS = [
    {
        "name": "shell_exec",
        "description": "Run a shell command in the workspace.",
        "parameters": {
            "type": "object",
            "required": ["command"],
            "properties": {"timeout_s": {"type": "number"}, "command": {"type": "string"}},
        },
    },
    {
        "name": "file_read",
        "description": "Read a file with numbered lines.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
]


def _golden_request(tmp_path: Path) -> dict:
    project = tmp_path / "project"
    project.mkdir()
    (project / "CODE_LAW.md").write_text("1. Tests before code.\n", encoding="utf-8")
    session = Session.create(tmp_path / "s", session_id="golden-session")
    session.append(UserEntry(text="Add a greeting to hello.py"))
    session.append(NoteEntry(source="lessons", text="Last time: run pytest with -q."))
    session.append(
        AssistantEntry(
            text="Let me look at the file first.",
            tool_calls=(
                ToolCallRecord(
                    id="call_2_0", name="file_read", arguments_json='{"path":"hello.py"}'
                ),
            ),
        )
    )
    session.append(
        ToolResultEntry(
            call_id="call_2_0",
            tool_name="file_read",
            status="success",
            content='{"data":{"lines":"     1\\tprint(\\"hi\\")","path":"hello.py"},"status":"success"}',
        )
    )
    session.append(
        AssistantEntry(
            text="Running it.",
            tool_calls=(
                ToolCallRecord(
                    id="call_4_0", name="shell_exec", arguments_json='{"command":"python hello.py"}'
                ),
            ),
        )
    )
    session.append(
        ToolResultEntry(
            call_id="call_4_0",
            tool_name="shell_exec",
            status="error",
            content='{"error":{"code":"nonzero_exit","message":"exit code 1"},"status":"error"}',
            error_class="NameError",
        )
    )
    builder = ContextBuilder(
        system_prompt=SYSTEM,
        tools=TOOLS,
        project_root=project,
        settings=Config(history_mode="compressed").settings(BuilderSettings),
    )
    live = LiveContext(
        full_observations={
            5: FullObservation("shell_exec", "call_4_0", "NameError: name 'x' is not defined")
        },
        tail="## Current Task Status\n**Objective**: greet\n[>] Step 1: fix hello.py",
    )
    request = builder.build(session, live)
    return {
        "tools": request.tools,
        "messages": request.messages,
        "breakpoints": request.breakpoints,
    }


def test_rendered_request_matches_golden_file(tmp_path):
    actual = (
        json.dumps(_golden_request(tmp_path), ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    )
    path = GOLDEN / "request_basic.json"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8"), (
        "rendered prefix changed: review, then UPDATE_GOLDEN=1"
    )
