"""A real uvicorn server on a free localhost port, and a reader of its SSE streams."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from contextengine import Config, ScriptedProvider
from contextengine.context.request import Request
from contextengine.providers.base import Provider
from contextengine.server import create_app

START_TIMEOUT_S = 15.0

# A turn with two tool calls (the second's large output is externalized to an artifact)
# and a final answer.
TURN_SCRIPT: list[dict[str, Any]] = [
    {
        "content": "I'll write the notes file first.",
        "tool_calls": [
            {"name": "file_write", "arguments": {"path": "notes.txt", "content": "hello\n"}}
        ],
    },
    {
        "content": "Now a command with a long output.",
        "tool_calls": [
            {"name": "shell_exec", "arguments": {"command": "python3 -c \"print('x' * 4000)\""}}
        ],
    },
    {"content": "Done: **notes.txt** holds `hello` and the long output is saved."},
]
FINAL_ANSWER = TURN_SCRIPT[-1]["content"]


class Gate:
    """A scripted model that waits for the test before each answer."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = iter(replies)
        self.asked = threading.Semaphore(0)
        self.allowed = threading.Semaphore(0)

    def __call__(self, request: Request) -> dict[str, Any]:
        self.asked.release()
        assert self.allowed.acquire(timeout=30), "the test never let the model answer"
        return next(self.replies)

    def answer(self) -> None:
        """Let the model answer once it has been asked."""
        assert self.asked.acquire(timeout=30), "the model was never asked"
        self.allowed.release()


class LiveServer:
    """Runs ``app`` with uvicorn in a thread; ``url`` is set once it accepts connections."""

    def __init__(self, app: FastAPI) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=2
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)
        self.url = ""
        self.token: str = app.state.token

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    @property
    def auth(self) -> dict[str, str]:
        """The header that carries the API token."""
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, timeout: float = 30) -> httpx.Client:
        """An HTTP client of this server that sends the token."""
        return httpx.Client(base_url=self.url, timeout=timeout, headers=self.auth)

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def scripted_app(
    workspace: Path,
    script: list[dict[str, Any]] | Callable[..., dict[str, Any]] | None = None,
    config: Config | None = None,
) -> FastAPI:
    """The app with a fresh scripted provider per session."""

    def factory() -> Provider:
        return ScriptedProvider(TURN_SCRIPT if script is None else script)

    return create_app(workspace, factory, config or Config())


@dataclass(frozen=True)
class Sse:
    """One server-sent event (``id`` is ``None`` when the event carried none)."""

    event: str
    data: dict[str, Any]
    id: int | None = None


def parse_sse(lines: Iterable[str]) -> list[Sse]:
    """Events of an SSE stream (comments and pings skipped, multi-line data joined)."""
    events: list[Sse] = []
    event, data, event_id = "message", [], None
    for line in lines:
        if not line:
            if data:
                events.append(Sse(event, json.loads("\n".join(data)), event_id))
            event, data, event_id = "message", [], None
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                event_id = int(value)
    if data:
        events.append(Sse(event, json.loads("\n".join(data)), event_id))
    return events


def post_turn(client: httpx.Client, session_id: str, message: str) -> list[Sse]:
    """Send a message and read the whole SSE stream of the turn."""
    with client.stream(
        "POST", f"/api/sessions/{session_id}/messages", json={"message": message}
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return parse_sse(response.iter_lines())
