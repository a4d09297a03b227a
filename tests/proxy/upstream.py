"""A local model API for proxy tests: Chat Completions, Responses and Anthropic Messages.

It answers each endpoint in its own wire format, as JSON or as an event stream (the body's
``stream`` flag), records every request's path, headers and exact body bytes, and reports
usage computed from the body (``usage_for``), so a test knows what the proxy must capture.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "Hello from upstream."


@dataclass(frozen=True)
class Received:
    """One request as the upstream got it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


def usage_for(body: bytes) -> dict[str, int]:
    """The normalized usage the upstream reports for a request body."""
    total = max(8, len(body) // 4)
    return {
        "input_tokens": total,
        "cached_tokens": total // 2,
        "cache_write_tokens": 0,
        "output_tokens": 5,
    }


class Upstream:
    """The fake API on 127.0.0.1 (a free port), served from a thread."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.gate = threading.Event()  # ``GET /gated`` sends its second event once this is set
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        """The root URL (no ``/v1``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> Upstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def answer(self, received: Received) -> tuple[int, str, list[bytes]]:
        """Status, content type and the body chunks for a request."""
        with self._lock:
            self.received.append(received)
        if received.path == "/gated":
            return 200, "text/event-stream", [b"data: first\n\n", b"data: second\n\n"]
        if received.method == "GET":
            return 200, "application/json", [json.dumps({"data": [{"id": "m"}]}).encode()]
        body = json.loads(received.body)
        usage = usage_for(received.body)
        stream = bool(body.get("stream"))
        if received.path.endswith("/chat/completions"):
            events = _chat(body, usage) if stream else None
            reply: Any = _chat_reply(usage)
        elif received.path.endswith("/responses"):
            events = _responses(usage) if stream else None
            reply = _response_object(usage)
        elif received.path.endswith("/messages"):
            events = _anthropic(usage) if stream else None
            reply = _message(usage, usage["output_tokens"])
        else:
            return 404, "application/json", [b'{"error":{"message":"no route"}}']
        if events is None:
            return 200, "application/json", [json.dumps(reply).encode()]
        return 200, "text/event-stream", list(events)


def _chat_usage(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        "prompt_tokens_details": {"cached_tokens": usage["cached_tokens"]},
    }


def _chat_reply(usage: dict[str, int]) -> dict[str, Any]:
    message = {"role": "assistant", "content": REPLY}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": _chat_usage(usage),
    }


def _chat(body: dict[str, Any], usage: dict[str, int]) -> Iterator[bytes]:
    def chunk(choices: list[Any], **extra: Any) -> bytes:
        payload = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(payload)}\n\n".encode()

    for piece in ("Hello ", "from ", "upstream."):
        yield chunk([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
    yield chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}])
    if (body.get("stream_options") or {}).get("include_usage"):
        yield chunk([], usage=_chat_usage(usage))
    yield b"data: [DONE]\n\n"


def _response_object(usage: dict[str, int]) -> dict[str, Any]:
    text = {"type": "output_text", "text": REPLY, "annotations": []}
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [text],
            }
        ],
        "usage": {
            "input_tokens": usage["input_tokens"],
            "input_tokens_details": {"cached_tokens": usage["cached_tokens"]},
            "output_tokens": usage["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        },
    }


def _responses(usage: dict[str, int]) -> Iterator[bytes]:
    def event(kind: str, n: int, **payload: Any) -> bytes:
        data = json.dumps({"type": kind, "sequence_number": n, **payload})
        return f"event: {kind}\ndata: {data}\n\n".encode()

    done = _response_object(usage)
    started = {**done, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", 0, response=started)
    for n, piece in enumerate(("Hello ", "from ", "upstream."), start=1):
        yield event(
            "response.output_text.delta",
            n,
            item_id="msg_1",
            output_index=0,
            content_index=0,
            delta=piece,
            logprobs=[],
        )
    yield event("response.completed", 4, response=done)


def _message(usage: dict[str, int], output_tokens: int) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": REPLY}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage["input_tokens"] - usage["cached_tokens"],
            "cache_read_input_tokens": usage["cached_tokens"],
            "cache_creation_input_tokens": 0,
            "output_tokens": output_tokens,
        },
    }


def _anthropic(usage: dict[str, int]) -> Iterator[bytes]:
    def event(kind: str, **payload: Any) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n".encode()

    start = {**_message(usage, 1), "content": [], "stop_reason": None}
    yield event("message_start", message=start)
    yield event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    for piece in ("Hello ", "from ", "upstream."):
        yield event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
    yield event("content_block_stop", index=0)
    yield event(
        "message_delta",
        delta={"stop_reason": "end_turn", "stop_sequence": None},
        usage={"output_tokens": usage["output_tokens"]},
    )
    yield event("message_stop")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        received = Received(
            self.command,
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            self.rfile.read(length),
        )
        status, content_type, chunks = self.server.owner.answer(received)  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("set-cookie", "vendor_session=abc")  # a vendor's cookie, never relayed
        if content_type == "text/event-stream":
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for number, chunk in enumerate(chunks):
                if number and self.path == "/gated":
                    self.server.owner.gate.wait(10)  # type: ignore[attr-defined]
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            payload = b"".join(chunks)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    do_GET = do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""
