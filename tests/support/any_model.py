"""A permissive OpenAI-compatible model on 127.0.0.1 for running example programs.

Examples are written for a real model, so no script can know what they ask. This server
answers any ``POST .../chat/completions`` (streamed or not) and any ``POST .../responses``
(streamed): on a Chat Completions request that offers a tool taking no required argument and
holds no tool result yet, it calls that tool once; otherwise it answers with a short text.
Every body is logged in ``bodies``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from providers.fake_servers import FakeUsage, responses_events
from support.local_http import serving

ANSWER = "Done: nothing more to do here."


@dataclass
class AnyModel:
    """The running server: its base URL and the bodies received, in order."""

    base_url: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)


def _callable_tool(body: dict[str, Any]) -> str | None:
    """The first offered tool with no required argument, unless a tool already answered."""
    if any(m.get("role") == "tool" for m in body.get("messages") or ()):
        return None
    for tool in body.get("tools") or ():
        function = tool.get("function") or {}
        if not (function.get("parameters") or {}).get("required"):
            return str(function.get("name"))
    return None


def _message(body: dict[str, Any], number: int) -> dict[str, Any]:
    """The assistant message answering ``body``."""
    tool = _callable_tool(body)
    if tool is None:
        return {"role": "assistant", "content": ANSWER}
    call = {"id": f"call_{number}", "type": "function"}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{**call, "function": {"name": tool, "arguments": "{}"}}],
    }


def _completion(body: dict[str, Any], number: int) -> dict[str, Any]:
    message = _message(body, number)
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "any"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chunks(body: dict[str, Any], number: int) -> Iterator[bytes]:
    """The completion for ``body`` as a Chat Completions event stream."""
    done = _completion(body, number)
    (choice,) = done["choices"]
    message = dict(choice["message"])
    calls = [{**c, "index": k} for k, c in enumerate(message.pop("tool_calls", []))]
    delta = {**message, **({"tool_calls": calls} if calls else {})}
    frames: list[dict[str, Any]] = [
        {"index": 0, "delta": delta, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]},
    ]
    head = {k: done[k] for k in ("id", "created", "model")}
    for frame in frames:
        payload = {**head, "object": "chat.completion.chunk", "choices": [frame]}
        yield f"data: {json.dumps(payload)}\n\n".encode()
    if (body.get("stream_options") or {}).get("include_usage"):
        payload = {**head, "object": "chat.completion.chunk", "choices": [], "usage": done["usage"]}
        yield f"data: {json.dumps(payload)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _answer(path: str, body: dict[str, Any], number: int) -> tuple[str, bytes]:
    """The content type and bytes answering ``body`` sent to ``path``."""
    if path.rstrip("/").endswith("/responses"):
        usage = FakeUsage(input_tokens=10, output_tokens=5)
        events = responses_events(body, {"content": ANSWER}, usage, number, "any")
        return "text/event-stream", b"".join(events)
    if body.get("stream") is True:
        return "text/event-stream", b"".join(_chunks(body, number))
    return "application/json", json.dumps(_completion(body, number)).encode()


@contextmanager
def any_model() -> Iterator[AnyModel]:
    """Serve until the block ends."""
    server = AnyModel()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            with lock:
                server.bodies.append(body)
                kind, data = _answer(self.path, body, len(server.bodies) - 1)
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    with serving(Handler) as root:
        server.base_url = f"{root}/v1"
        yield server
