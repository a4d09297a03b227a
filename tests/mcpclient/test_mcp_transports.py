"""What reaches a server: an HTTP server receives the configured ``headers`` on its
requests, and ``mcp-server-git`` from PyPI (not written here) answers over stdio about a
real repository through ``Agent.run``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.session.entries import ToolResultEntry
from contextengine.toolkit.mcp_servers import server_entries
from contextengine.tools.mcp.adapter import outcome_of
from contextengine.tools.mcp.clients import McpClients
from support.mcp_servers import http_server


def test_an_http_server_receives_the_configured_headers() -> None:
    headers = {"Authorization": "Bearer t0ken-42", "X-Team": "blue"}
    with http_server("--headers") as url:
        servers = server_entries({"remote": {"type": "http", "url": url, "headers": headers}})
        clients = McpClients.start(servers, 60, 30)
        try:
            outcome = outcome_of(clients.call("remote", "request_headers", {}))
        finally:
            clients.close()
    assert outcome.ok
    received = outcome.text.splitlines()
    assert "authorization: Bearer t0ken-42" in received
    assert "x-team: blue" in received


def _repository(folder: Path) -> Path:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)

    folder.mkdir()
    git("init", "-q")
    (folder / "app.py").write_text("print('hi')\n")
    git("add", "app.py")
    git("-c", "user.name=Tester", "-c", "user.email=t@example.test", "commit", "-qm", "Add app")
    (folder / "app.py").write_text("print('hello')\n")
    return folder


def test_mcp_server_git_answers_about_a_real_repository(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    server = {
        "command": sys.executable,
        "args": ["-m", "mcp_server_git", "--repository", str(repo)],
    }
    script = [
        {"tool_calls": [{"name": "mcp__git__git_log", "arguments": {"repo_path": str(repo)}}]},
        {
            "tool_calls": [
                {"name": "mcp__git__git_diff_unstaged", "arguments": {"repo_path": str(repo)}}
            ]
        },
        {"content": "One commit, 'Add app'; app.py now prints hello."},
    ]
    config = Config(mcp_servers={"git": server}, mcp_project_file=False)
    with Agent(ScriptedProvider(script), tmp_path / "ws", config) as agent:
        assert agent.run("What changed in the repository?").status == "completed"
        log, diff = [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]
        assert agent.mcp is not None
        git_status = agent.mcp.catalog.tools["mcp__git__git_status"]
    assert log.status == diff.status == "success"
    assert "Add app" in log.content
    assert "-print('hi')" in diff.content and "+print('hello')" in diff.content
    assert git_status.traits.category == "read", "readOnlyHint of a real server"
