"""A fake OpenAI Chat Completions server that plays the script and logs every request.

Each run gets its own base URL (``/run/<id>/v1``) and voice. A request that forbids tools
(no ``tools``, or ``tool_choice`` ``none``: a compaction summary, a reboot) is a side call
and gets ``SIDE_REPLY``; any other request gets the run's next scripted reply, counted per
run. Replies carry ``usage`` with the request's o200k tokens and the cached part (see
``cost``), streamed (SSE) when the request asks for it.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from contextengine.measure.tokens import TokenCounter
from fwbench.cost import CostMeter, RequestCost
from fwbench.script import SIDE_REPLY, STEPS, Reply, Voice, reply_for

MODEL = "fake-model"
TOOL_FAILURE = re.compile(
    r"(?m)^(error|Error)\b|not a valid tool|unknown tool|invalid arguments|validation error"
    r"|error occurred|[Tt]ry again"
)
"""How the frameworks report a tool call they could not run (or a tool that failed)."""


@dataclass
class RunLog:
    """One run's requests as received, their prices, and how far the script went;
    ``errors`` are scripted steps whose tool call failed though it should not have."""

    voice: Voice
    meter: CostMeter
    bodies: list[dict[str, Any]] = field(default_factory=list)
    steps: int = 0
    errors: list[str] = field(default_factory=list)


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return str(content or "")


def newest_observation(body: Mapping[str, Any]) -> str:
    """The text of every message after the request's last assistant message."""
    messages = list(body.get("messages") or [])
    last = max((k for k, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return "\n".join(_text(m) for m in messages[last + 1 :])


def is_side_call(body: Mapping[str, Any]) -> bool:
    """Whether the request forbids tool calls (so no scripted step can answer it)."""
    return not body.get("tools") or body.get("tool_choice") == "none"


def _message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_name is not None:
        message["tool_calls"] = [
            {
                "id": reply.call_id,
                "type": "function",
                "function": {"name": reply.tool_name, "arguments": json.dumps(reply.arguments)},
            }
        ]
    return message


def _usage(cost: RequestCost) -> dict[str, Any]:
    return {
        "prompt_tokens": cost.tokens,
        "completion_tokens": 20,
        "total_tokens": cost.tokens + 20,
        "prompt_tokens_details": {"cached_tokens": cost.cached_tokens},
    }


def completion(reply: Reply, cost: RequestCost) -> dict[str, Any]:
    """A non-streamed ``chat.completion``."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": _message(reply),
                "finish_reason": "tool_calls" if reply.tool_name else "stop",
            }
        ],
        "usage": _usage(cost),
    }


def chunks(reply: Reply, cost: RequestCost, with_usage: bool) -> Iterator[dict[str, Any]]:
    """The same reply as ``chat.completion.chunk`` objects."""
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    delta: dict[str, Any] = {"role": "assistant", "content": reply.content}
    yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    if reply.tool_name is not None:
        call = _message(reply)["tool_calls"][0]
        delta = {"tool_calls": [{"index": 0, **call}]}
        yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    finish = "tool_calls" if reply.tool_name else "stop"
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    if with_usage:
        yield {**base, "choices": [], "usage": _usage(cost)}


class FakeOpenAI:
    """The server: use as a context manager, ``open_run`` for each run's base URL."""

    def __init__(self) -> None:
        self.runs: dict[str, RunLog] = {}
        self.url = ""
        self._counter = TokenCounter()
        self._lock = threading.Lock()

    def open_run(self, run_id: str, voice: Voice) -> str:
        """Register a run; returns its base URL."""
        self.runs[run_id] = RunLog(voice, CostMeter(self._counter))
        return f"{self.url}/run/{run_id}/v1"

    def handle(self, run_id: str, body: dict[str, Any]) -> tuple[Reply, RequestCost]:
        """Log a request and choose its reply (raises ``KeyError`` for an unknown run)."""
        run = self.runs[run_id]
        side = is_side_call(body)
        with self._lock:
            run.bodies.append(body)
            cost = run.meter.add(body, side=side)
            if side:
                return Reply(SIDE_REPLY), cost
            done = run.steps - 1
            if 0 <= done < len(STEPS) and not STEPS[done].fails:
                found = TOOL_FAILURE.search(newest_observation(body))
                if found:
                    run.errors.append(f"step {done + 1} ({STEPS[done].action}) failed: {found[0]}")
            reply = reply_for(run.voice, run.steps)
            run.steps += 1
        if reply is None:
            run.errors.append(f"request {len(run.bodies)} after the final answer")
            reply = Reply("The task is finished.")
        return reply, cost

    @contextmanager
    def serving(self) -> Iterator[FakeOpenAI]:
        """Listen on 127.0.0.1 (a free port) until the block ends."""
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                parts = self.path.strip("/").split("/")
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if len(parts) < 3 or parts[0] != "run" or parts[1] not in fake.runs:
                    self._send(404, {"error": {"message": f"unknown path {self.path}"}})
                    return
                reply, cost = fake.handle(parts[1], body)
                if body.get("stream"):
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks(reply, cost, usage))
                    self._send(200, None, (data + "data: [DONE]\n\n").encode(), "text/event-stream")
                else:
                    self._send(200, completion(reply, cost))

            def _send(
                self,
                status: int,
                payload: Any,
                raw: bytes | None = None,
                kind: str = "application/json",
            ) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
