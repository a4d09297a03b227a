"""A scripted OpenAI Chat Completions server on 127.0.0.1 that logs every request body.

Frameworks under test point their OpenAI client at ``base_url``; each ``POST
.../chat/completions`` gets the script's next reply (non-streamed; a script item may be a
function of the request body that returns the reply), and ``bodies`` holds what was sent,
in order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.local_http import serving


@dataclass(frozen=True)
class Reply:
    """One assistant reply: text and at most one tool call (arguments sent as given)."""

    content: str
    tool: str | None = None
    arguments: str = "{}"


@dataclass
class ChatServer:
    """The running server: its base URL, the script and the bodies received."""

    script: Sequence[Reply | Callable[[dict[str, Any]], Reply]]
    base_url: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """Log ``body`` and return the next scripted ``chat.completion``."""
        self.bodies.append(body)
        step = len(self.bodies) - 1
        reply = self.script[min(step, len(self.script) - 1)]
        if not isinstance(reply, Reply):
            reply = reply(body)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.tool is not None:
            message["tool_calls"] = [
                {
                    "id": f"call_{step}",
                    "type": "function",
                    "function": {"name": reply.tool, "arguments": reply.arguments},
                }
            ]
        return {
            "id": f"chatcmpl-{step}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


@contextmanager
def chat_server(
    script: Sequence[Reply | Callable[[dict[str, Any]], Reply]],
) -> Iterator[ChatServer]:
    """Serve ``script`` until the block ends."""
    server = ChatServer(script)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            with lock:
                data = json.dumps(server.answer(body)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    with serving(Handler) as root:
        server.base_url = f"{root}/v1"
        yield server
