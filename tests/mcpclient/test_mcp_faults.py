"""MCP servers that fail (R18.1): one that cannot start is one error naming it; one that
hangs, sends a malformed message or dies costs one error observation naming it, and the
session goes on."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.session.entries import ToolResultEntry
from contextengine.tools.mcp.clients import McpStartError
from support.mcp_servers import stdio_entry


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"content": f"Calling {tool}.", "tool_calls": [{"name": tool, "arguments": arguments}]}


def test_hangs_malformed_messages_and_a_dead_server_cost_one_observation_each(tmp_path):
    script = [
        call("mcp__flaky__hang", seconds=120),
        call("mcp__flaky__echo", text="still answering"),
        call("mcp__flaky__garble"),
        call("mcp__flaky__crash"),
        call("mcp__flaky__echo", text="anyone there?"),
        call("file_ls"),
        {"content": "The flaky server hung, garbled a reply and died; the session went on."},
    ]
    config = Config(mcp_servers={"flaky": stdio_entry()}, mcp_call_timeout_s=4)
    with Agent(ScriptedProvider(script), tmp_path, config) as agent:
        result = agent.run("Try the flaky server.")
        results = [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]
    assert result.status == "completed"
    hang, echo, garble, crash, after, listing = results
    assert hang.status == "error" and hang.error_class == "timeout"
    assert "MCP server 'flaky' did not answer 'hang' within 4 s" in hang.content
    assert echo.status == "success" and "still answering" in echo.content
    assert garble.status == "error" and garble.error_class == "protocol_error"
    assert "MCP server 'flaky' sent a malformed message" in garble.content
    assert crash.status == "error" and "MCP server 'flaky'" in crash.content
    assert after.status == "error" and "MCP server 'flaky'" in after.content
    assert listing.status == "success", "the built-in tools still work"


def test_a_server_that_cannot_start_is_one_error_naming_it_and_no_session(tmp_path):
    config = Config(mcp_servers={"ghost": {"command": str(tmp_path / "no-such-server")}})
    with pytest.raises(McpStartError, match=r"^MCP server 'ghost' failed to start: "):
        Agent(ScriptedProvider([]), tmp_path / "ws", config)
    assert not (tmp_path / "ws" / ".contextengine").exists()


def test_a_server_that_exits_at_once_is_named_with_its_last_stderr_line(tmp_path):
    exits = "import sys; sys.stderr.write('licence key missing\\n'); sys.exit(1)"
    config = Config(mcp_servers={"quitter": {"command": sys.executable, "args": ["-c", exits]}})
    with pytest.raises(McpStartError) as caught:
        Agent(ScriptedProvider([]), tmp_path, config)
    message = str(caught.value)
    assert message.startswith("MCP server 'quitter' failed to start")
    assert "(stderr: licence key missing)" in message and "\n" not in message


def test_a_server_that_never_answers_its_handshake_times_out(tmp_path: Path):
    silent = "import time; time.sleep(60)"
    config = Config(
        mcp_servers={"mute": {"command": sys.executable, "args": ["-c", silent]}},
        mcp_start_timeout_s=2,
    )
    with pytest.raises(McpStartError, match=r"^MCP server 'mute' did not start within 2 s"):
        Agent(ScriptedProvider([]), tmp_path, config)
