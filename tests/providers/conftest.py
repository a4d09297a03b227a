"""Fixtures for adapter tests: realistic requests from a real session, and fake servers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextengine import (
    AssistantEntry,
    Config,
    ContextBuilder,
    LiveContext,
    ReminderEntry,
    Request,
    Session,
    SummaryEntry,
    ToolCallRecord,
    ToolMask,
    ToolResultEntry,
    ToolSpec,
    UserEntry,
)
from contextengine.context.builder import BuilderSettings

from .fake_servers import FakeModelServer

SESSION_ID = "sess-0001"

TOOLS = [
    ToolSpec(
        "file_read",
        "Read a file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(
        "file_write",
        "Write a file.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    ToolSpec(
        "shell_exec",
        "Run a shell command.",
        {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    ),
    ToolSpec("todo_write", "Replace the todo list.", {"type": "object", "properties": {}}),
]

HISTORY = (
    SummaryEntry(
        text="Earlier: the user asked for a fix.", archive="a.md", first_index=0, end_index=0
    ),
    UserEntry(text="Fix the bug in app.py"),
    AssistantEntry(
        text="Reading it first.",
        tool_calls=(
            ToolCallRecord(id="call_1", name="file_read", arguments_json='{"path":"app.py"}'),
        ),
    ),
    ToolResultEntry(call_id="call_1", tool_name="file_read", status="success", content="1: x = 1"),
    ReminderEntry(rule="plan", text="Update the plan."),
)

BuildRequest = Callable[..., Request]


@pytest.fixture
def build_request(tmp_path: Path) -> BuildRequest:
    """Build a request from a real session: L1, L2 (CODE_LAW.md), a summary, a tool round,
    a reminder and a task-status tail; ``history`` replaces the default entries."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "CODE_LAW.md").write_text("Always run the tests.\n")
    counter = iter(range(1000))

    def build(
        mask: ToolMask | None = None,
        *,
        history: tuple[Any, ...] = HISTORY,
        config: Config | None = None,
    ) -> Request:
        builder = ContextBuilder(
            system_prompt="You are a careful coding agent.",
            tools=TOOLS,
            project_root=project,
            settings=config.settings(BuilderSettings) if config is not None else None,
        )
        session = Session.create(tmp_path / f"session-{next(counter)}", session_id=SESSION_ID)
        for entry in history:
            session.append(entry)
        request = builder.build(session, LiveContext(tail="Task status: fix app.py"), mask=mask)
        session.close()
        return request

    return build


StartServer = Callable[..., FakeModelServer]


@pytest.fixture
def fake_server() -> Iterator[StartServer]:
    """Start ``FakeModelServer(*args, **kwargs)``; every server is stopped after the test."""
    servers: list[FakeModelServer] = []

    def start(*args: Any, **kwargs: Any) -> FakeModelServer:
        server = FakeModelServer(*args, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
