"""``contextengine run`` with MCP servers: the workspace's .mcp.json by default,
``--mcp-config FILE`` instead, and one line with exit 2 for a server that cannot start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.mcp_servers import stdio_entry
from test_cli import assert_one_line_error, run_cli


def _script(tmp_path: Path, tool: str) -> str:
    replies = [
        {"content": "Echoing.", "tool_calls": [{"name": tool, "arguments": {"text": "cli hello"}}]},
        {"content": "The MCP server echoed the text back as asked."},
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies))
    return f"scripted:{path}"


def _session_log(workspace: Path) -> str:
    (log,) = (workspace / ".contextengine").rglob("session.jsonl")
    return log.read_text()


def test_help_says_the_workspace_mcp_json_is_read() -> None:
    result = run_cli("run", "--help", env={"COLUMNS": "400"})
    assert result.returncode == 0
    text = " ".join(result.stdout.replace("│", " ").split())
    assert "--mcp-config" in text and ".mcp.json at the workspace root is read" in text


def test_run_uses_the_servers_of_the_workspace_mcp_json(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"local": stdio_entry()}}))
    result = run_cli(
        "run", "Echo it.", "-p", _script(tmp_path, "mcp__local__echo"), "-w", str(workspace)
    )
    assert result.returncode == 0, result.stderr
    assert "mcp__local__echo" in result.stdout
    assert "cli hello" in _session_log(workspace)


def test_mcp_config_stands_instead_of_the_workspace_file(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"broken": {"command": str(tmp_path / "missing")}}})
    )
    chosen = tmp_path / "servers.json"
    chosen.write_text(json.dumps({"mcpServers": {"other": stdio_entry()}}))
    result = run_cli(
        "run",
        "Echo it.",
        "-p",
        _script(tmp_path, "mcp__other__echo"),
        "-w",
        str(workspace),
        "--mcp-config",
        str(chosen),
    )
    assert result.returncode == 0, result.stderr
    assert "cli hello" in _session_log(workspace)


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        pytest.param(
            {"ghost": {"command": "{tmp}/nope"}},
            ("MCP server 'ghost' failed to start",),
            id="cannot-start",
        ),
        pytest.param(
            {"s": {"type": "sse", "url": "http://a"}},
            ("servers.json", "MCP server 's'", "SSE transport"),
            id="bad-config",
        ),
    ],
)
def test_an_mcp_server_that_cannot_be_used_is_one_line_and_exit_2(
    tmp_path: Path, servers: dict[str, dict[str, str]], expected: tuple[str, ...]
) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}).replace("{tmp}", str(tmp_path)))
    result = run_cli(
        "run",
        "Hi.",
        "-p",
        _script(tmp_path, "x"),
        "-w",
        str(tmp_path),
        "--mcp-config",
        str(config),
    )
    assert result.returncode == 2
    assert_one_line_error(result, *expected)


def test_serve_refuses_a_bad_mcp_config_before_listening(tmp_path: Path) -> None:
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"bad name": {"command": "x"}}}))
    result = run_cli("serve", "-w", str(tmp_path), "--port", "0", "--mcp-config", str(servers))
    assert result.returncode == 2
    assert_one_line_error(result, "servers.json", "MCP server name 'bad name'")
