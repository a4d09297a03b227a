"""The mcpServers shape (.mcp.json, Config.mcp_servers, the environment): what a user's
file may say, and one error naming the server for what it may not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextengine import Config
from contextengine.errors import ConfigError
from contextengine.toolkit.mcp_servers import (
    HttpServer,
    StdioServer,
    read_mcp_file,
    server_entries,
    session_servers,
)
from contextengine.tools.mcp.adapter import lean_schema, tool_name, traits_of_hints


def test_claude_code_and_cursor_entries_are_read_as_they_are() -> None:
    servers = server_entries(
        {
            "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "cwd": "/"},
            "typed": {"type": "stdio", "command": "npx"},
            "remote": {"type": "http", "url": "https://example.test/mcp", "headers": {"X": "y"}},
            "cursor": {"url": "http://127.0.0.1:1/mcp"},
        }
    )
    assert servers["git"] == StdioServer(
        command="uvx", args=("mcp-server-git",), env={"A": "1"}, cwd="/"
    )
    assert servers["typed"] == StdioServer(command="npx")
    assert servers["remote"] == HttpServer(url="https://example.test/mcp", headers={"X": "y"})
    assert isinstance(servers["cursor"], HttpServer)


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ({"bad name": {"command": "x"}}, "MCP server name 'bad name' must be"),
        ({"s": {"type": "sse", "url": "http://a"}}, "MCP server 's': the SSE transport"),
        ({"s": {"args": ["x"]}}, "MCP server 's': command: Field required"),
        ({"s": {"command": "x", "enabled": True}}, "MCP server 's': enabled: Extra inputs"),
        ({"s": {"type": "http", "url": "ftp://a"}}, "MCP server 's': url: String should match"),
        ({"s": "npx server"}, "MCP server 's' must be an object"),
    ],
)
def test_a_bad_entry_is_one_error_naming_the_server(entries: dict, problem: str) -> None:
    with pytest.raises(ConfigError, match="^mcpServers: " + problem.replace("(", r"\(")):
        server_entries(entries)


def test_a_file_must_be_json_with_mcp_servers(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text('{"servers": {}}')
    with pytest.raises(ConfigError, match=r'servers.json: expected an object with "mcpServers"'):
        read_mcp_file(path)
    path.write_text("{nope")
    with pytest.raises(ConfigError, match=r"servers.json: not valid JSON"):
        read_mcp_file(path)
    path.write_text(json.dumps({"mcpServers": {"t": {"command": "x"}}}))
    assert read_mcp_file(path) == {"t": StdioServer(command="x")}


def test_the_project_file_is_read_unless_turned_off_and_the_config_wins(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"a": {"command": "from-file"}, "b": {"command": "b"}}})
    )
    configured = {"a": StdioServer(command="from-config")}
    both = session_servers(configured, tmp_path, read_project_file=True)
    assert both == {"a": StdioServer(command="from-config"), "b": StdioServer(command="b")}
    assert session_servers(configured, tmp_path, read_project_file=False) == configured
    assert session_servers({}, tmp_path / "none", read_project_file=True) == {}


def test_the_config_takes_servers_from_a_file_and_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('mcp_tool_budget_tokens = 0\n[mcp_servers.time]\ncommand = "uvx"\n')
    config = Config.load(path, env={})
    assert config.mcp_servers == {"time": StdioServer(command="uvx")}
    assert config.mcp_tool_budget_tokens == 0
    env = {"CONTEXTENGINE_MCP_SERVERS": '{"h": {"type": "http", "url": "http://a/mcp"}}'}
    assert Config.load(env=env).mcp_servers == {"h": HttpServer(url="http://a/mcp")}
    with pytest.raises(ConfigError, match="CONTEXTENGINE_MCP_SERVERS"):
        Config.load(env={"CONTEXTENGINE_MCP_SERVERS": "{not json"})


def test_tool_names_fit_every_provider() -> None:
    assert tool_name("git", "git_log") == "mcp__git__git_log"
    assert tool_name("s", "read.file/v2") == "mcp__s__read_file_v2"
    long_a, long_b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b


def test_hints_become_traits() -> None:
    assert traits_of_hints(True, False, True).category == "read"
    assert traits_of_hints(False, False, True).category == "web"
    assert traits_of_hints(False, True, False).risk == "high"
    assert traits_of_hints(False, False, False).category == "other"


def test_a_schema_loses_generated_titles_but_keeps_a_property_called_title() -> None:
    schema = {
        "title": "createArguments",
        "type": "object",
        "properties": {"title": {"title": "Title", "type": "string"}},
    }
    assert lean_schema(schema) == {"properties": {"title": {"type": "string"}}, "type": "object"}
