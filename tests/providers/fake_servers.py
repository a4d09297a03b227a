"""A real local model server for adapter tests: records requests, streams scripted replies.

``FakeModelServer`` listens on 127.0.0.1 (a free port) in a background thread and speaks
the OpenAI Chat Completions streaming format (``wire="openai"``, path
``/v1/chat/completions``), the OpenAI Responses streaming format (``wire="responses"``, path
``/v1/responses``) or the Anthropic Messages streaming format (``wire="anthropic"``, path
``/v1/messages``), all as server-sent events. It

* records every request: method, path, headers (lower-case names) and the exact body bytes;
* answers from a script in ``ScriptedProvider``'s format,
  ``{"content": str, "tool_calls": [{"name": str, "arguments": dict | str}], "reasoning": str}``
  (a list answered in order, or a callable given the parsed JSON body); on the Anthropic
  wire ``"tool_search": {"query": str, "found": [tool names]}`` opens the reply with a
  server-side tool search and its result;
* reports usage from ``usage`` (a fixed ``FakeUsage`` or a rule); the default rule counts
  ``len // 4`` tokens of tools + system + messages and calls the part shared with the
  previous request cached;
* leaves the first ``stalls`` requests unanswered (the client times out), then fails the
  next ones with the statuses in ``failures`` (e.g. ``[429, 500]``), with a 1 ms
  ``retry-after-ms`` so SDK retries are fast;
* with ``event_delay_s``, sends its events one by one with that pause between them (a
  slowly streaming model; the text in ``pieces`` deltas), so clients can be watched
  showing a reply before it ends;
* with ``diagnostics=True`` (Anthropic), keeps each answered request under its reply id and
  answers a request whose ``diagnostics.previous_message_id`` names one with Anthropic's
  cache diagnostics on ``message_start``: ``null`` when the old request's model, system,
  tools and content blocks (``cache_control`` aside) are a prefix of the new one, else the
  first of ``model_changed`` / ``system_changed`` / ``tools_changed`` /
  ``messages_changed`` that differs, with ``len // 4`` tokens of the old blocks from the
  first differing one on (``previous_message_not_found`` for an unknown id);
* answers a ``RawReply`` from the script byte for byte (any status, content type and body;
  ``cut=True`` promises more bytes than it sends and hangs up), so clients meet broken
  streams; ``stream_bytes(response)`` is the well-formed stream to break.

Use it as a context manager::

    with FakeModelServer("openai", [{"content": "hi"}]) as server:
        provider = OpenAIProvider("gpt-x", api_key="k", base_url=server.base_url)
        provider.complete(request)
        server.requests[0].json()["prompt_cache_key"]
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Wire = Literal["openai", "responses", "anthropic"]
PATHS: dict[str, str] = {
    "openai": "/v1/chat/completions",
    "responses": "/v1/responses",
    "anthropic": "/v1/messages",
}
Response = Mapping[str, Any]
_UNASKED = object()  # no cache diagnostics were asked for (none is ``null``: no divergence)


@dataclass(frozen=True)
class RawReply:
    """An answer sent exactly as given; ``cut`` announces more bytes than ``body`` holds."""

    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"
    cut: bool = False


Script = Sequence[Response | RawReply] | Callable[[dict[str, Any]], Response | RawReply]


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as the server received it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class FakeUsage:
    """Usage to report; ``input_tokens`` is the whole prompt, cached part included."""

    input_tokens: int
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 1


UsageRule = Callable[[RecordedRequest, RecordedRequest | None, Response], FakeUsage]


def prefix_usage(
    request: RecordedRequest, previous: RecordedRequest | None, response: Response
) -> FakeUsage:
    """Default usage: ``len // 4`` tokens of the prompt (tools, system, messages - the order
    providers render them in); the prefix shared with the previous prompt counts as cached."""
    prompt = _prompt_text(request.json())
    shared = 0
    if previous is not None:
        for a, b in zip(_prompt_text(previous.json()), prompt, strict=False):
            if a != b:
                break
            shared += 1
    output = str(response.get("content") or "") + json.dumps(response.get("tool_calls") or [])
    return FakeUsage(
        input_tokens=len(prompt) // 4,
        cached_tokens=shared // 4,
        output_tokens=max(1, len(output) // 4),
    )


def _prompt_text(body: Mapping[str, Any]) -> str:
    messages = body.get("messages", body.get("input"))
    return json.dumps([body.get("tools"), body.get("system"), messages])


class FakeModelServer:
    """A scripted model server on 127.0.0.1; see the module docstring."""

    def __init__(
        self,
        wire: Wire,
        script: Script,
        *,
        usage: FakeUsage | UsageRule = prefix_usage,
        failures: Sequence[int] = (),
        stalls: int = 0,
        timings_only: bool = False,
        model: str = "fake-model",
        event_delay_s: float = 0.0,
        pieces: int = 3,
        diagnostics: bool = False,
    ) -> None:
        self.wire = wire
        self.diagnostics = diagnostics
        self._by_reply_id: dict[str, dict[str, Any]] = {}
        self.event_delay_s = event_delay_s
        self.pieces = pieces
        self.model = model
        self.timings_only = timings_only
        self._script = script
        self._usage = usage
        self._failures = list(failures)
        self._stalls = stalls
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._answered: list[RecordedRequest] = []
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """What to pass as an SDK's ``base_url``."""
        host, port = self._httpd.server_address[:2]
        root = f"http://{host}:{port}"
        return root if self.wire == "anthropic" else f"{root}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, failed ones included."""
        with self._lock:
            return list(self._requests)

    @property
    def answered(self) -> list[RecordedRequest]:
        """The requests that got a scripted reply."""
        with self._lock:
            return list(self._answered)

    def start(self) -> FakeModelServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handle(self, recorded: RecordedRequest) -> tuple[int, dict[str, str], bytes | list[bytes]]:
        with self._lock:
            self._requests.append(recorded)
            arrival = len(self._requests)
        if arrival <= self._stalls:
            # Never answered: the client times out; the thread ends when the server stops.
            self._stopping.wait()
            return _refuse(504, self._error(504, "stalled request"))
        with self._lock:
            if arrival - self._stalls <= len(self._failures):
                status = self._failures[arrival - self._stalls - 1]
                return status, {"retry-after-ms": "1"}, self._error(status, "injected failure")
        expected = PATHS[self.wire]
        if recorded.path != expected:
            return _refuse(404, self._error(404, f"no route {recorded.path}; use {expected}"))
        try:
            body = recorded.json()
        except ValueError:
            return _refuse(400, self._error(400, "body is not JSON"))
        if body.get("stream") is not True:
            return _refuse(400, self._error(400, "the fake server only streams"))
        with self._lock:
            previous = self._answered[-1] if self._answered else None
            number = len(self._answered)
            response = self._next_response(body, number)
            if response is None:
                return _refuse(500, self._error(500, f"script exhausted at reply {number + 1}"))
            self._answered.append(recorded)
            verdict = self._diagnose(body)
            self._by_reply_id[f"msg_{number}"] = body
        if isinstance(response, RawReply):
            headers = {"content-type": response.content_type, "x-should-retry": "false"}
            if response.cut:
                headers["content-length"] = str(len(response.body) + 64)
            return response.status, headers, response.body
        usage = self._usage(recorded, previous, response) if callable(self._usage) else self._usage
        headers = {"content-type": "text/event-stream"}
        if self.event_delay_s:
            return 200, headers, list(self._events(body, response, usage, number, verdict))
        return 200, headers, self._stream(body, response, usage, number, verdict)

    def _diagnose(self, body: dict[str, Any]) -> object:
        """Anthropic's ``diagnostics`` for ``body`` (see the module docstring), or
        ``_UNASKED`` when diagnostics are off or the request named no previous message."""
        asked = body.get("diagnostics")
        if not self.diagnostics or not isinstance(asked, dict):
            return _UNASKED
        previous_id = asked.get("previous_message_id")
        if previous_id is None:
            return _UNASKED
        old = self._by_reply_id.get(previous_id)
        if old is None:
            return {"cache_miss_reason": {"type": "previous_message_not_found"}}
        old_blocks, new_blocks = _blocks(old), _blocks(body)
        for kind, part in (("model", "model"), ("system", "system"), ("tools", "tools")):
            if _plain(old.get(part)) != _plain(body.get(part)):
                missed = sum(len(json.dumps(b)) // 4 for b in old_blocks)
                return _miss(f"{kind}_changed", missed)
        for k, block in enumerate(old_blocks):
            if k >= len(new_blocks) or new_blocks[k] != block:
                return _miss(
                    "messages_changed", sum(len(json.dumps(b)) // 4 for b in old_blocks[k:])
                )
        return None

    def stream_bytes(self, response: Response, number: int = 0) -> bytes:
        """The complete, well-formed event stream that answers ``response`` (usage included)."""
        usage = FakeUsage(input_tokens=10, cached_tokens=0, output_tokens=1)
        body = {"stream_options": {"include_usage": True}}
        return self._stream(body, response, usage, number)

    def _stream(
        self,
        body: dict[str, Any],
        response: Response,
        usage: FakeUsage,
        number: int,
        verdict: object = _UNASKED,
    ) -> bytes:
        return b"".join(self._events(body, response, usage, number, verdict))

    def _events(
        self,
        body: dict[str, Any],
        response: Response,
        usage: FakeUsage,
        number: int,
        verdict: object = _UNASKED,
    ) -> Iterator[bytes]:
        if self.wire == "openai":
            return self._openai_events(body, response, usage, number)
        if self.wire == "responses":
            return responses_events(body, response, usage, number, self.model)
        return self._anthropic_events(response, usage, number, verdict)

    def _next_response(self, body: dict[str, Any], number: int) -> Response | RawReply | None:
        if callable(self._script):
            return self._script(body)
        return self._script[number] if number < len(self._script) else None

    def _error(self, status: int, message: str) -> bytes:
        kind = {429: "rate_limit_error", 400: "invalid_request_error"}.get(status, "api_error")
        error = {"type": kind, "message": f"fake server: {message}"}
        if self.wire == "anthropic":
            return json.dumps({"type": "error", "error": error}).encode()
        return json.dumps({"error": error}).encode()

    def _openai_events(
        self, body: dict[str, Any], response: Response, usage: FakeUsage, number: int
    ) -> Iterator[bytes]:
        def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            payload = {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": self.model,
                "choices": choices,
                **extra,
            }
            return f"data: {json.dumps(payload)}\n\n".encode()

        def delta(**fields: Any) -> bytes:
            return chunk([{"index": 0, "delta": fields, "finish_reason": None}])

        yield delta(role="assistant", content="")
        for piece in _pieces(str(response.get("reasoning") or "")):
            yield delta(reasoning_content=piece)
        for piece in _pieces(str(response.get("content") or ""), self.pieces):
            yield delta(content=piece)
        calls = list(response.get("tool_calls") or [])
        for k, call in enumerate(calls):
            head = {"index": k, "id": f"call_{number}_{k}", "type": "function"}
            yield delta(tool_calls=[{**head, "function": {"name": call["name"], "arguments": ""}}])
            for piece in _pieces(_arguments_text(call)):
                yield delta(tool_calls=[{"index": k, "function": {"arguments": piece}}])
        finish = "tool_calls" if calls else "stop"
        yield chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
        if (body.get("stream_options") or {}).get("include_usage"):
            report: dict[str, Any] = {
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
            }
            extra: dict[str, Any] = {}
            if self.timings_only:
                extra["timings"] = {
                    "cache_n": usage.cached_tokens,
                    "prompt_n": usage.input_tokens - usage.cached_tokens,
                }
            else:
                report["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
            yield chunk([], usage=report, **extra)
        yield b"data: [DONE]\n\n"

    def _anthropic_events(
        self, response: Response, usage: FakeUsage, number: int, verdict: object = _UNASKED
    ) -> Iterator[bytes]:
        def event(kind: str, **payload: Any) -> bytes:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n".encode()

        uncached = usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens
        message = {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": uncached,
                "cache_read_input_tokens": usage.cached_tokens,
                "cache_creation_input_tokens": usage.cache_write_tokens,
                "output_tokens": 1,
            },
        }
        if verdict is not _UNASKED:
            message["diagnostics"] = verdict
        yield event("message_start", message=message)
        yield event("ping")
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        reasoning = str(response.get("reasoning") or "")
        if reasoning:
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(reasoning)]
            deltas.append({"type": "signature_delta", "signature": "sig"})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        search = response.get("tool_search")
        if search is not None:
            blocks += _tool_search_blocks(search, f"srvtoolu_{number}")
        content = str(response.get("content") or "")
        if content:
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(content)]
            blocks.append(({"type": "text", "text": ""}, deltas))
        calls = list(response.get("tool_calls") or [])
        for k, call in enumerate(calls):
            start = {"type": "tool_use", "id": f"toolu_{number}_{k}", "name": call["name"]}
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(_arguments_text(call))
            ]
            blocks.append(({**start, "input": {}}, deltas))
        for index, (start, deltas) in enumerate(blocks):
            yield event("content_block_start", index=index, content_block=start)
            for d in deltas:
                yield event("content_block_delta", index=index, delta=d)
            yield event("content_block_stop", index=index)
        stop = "tool_use" if calls else "end_turn"
        yield event(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": usage.output_tokens},
        )
        yield event("message_stop")


def responses_events(
    body: Mapping[str, Any], response: Response, usage: FakeUsage, number: int, model: str
) -> Iterator[bytes]:
    """The Responses API event stream answering ``response``: reasoning (encrypted when
    ``include`` asks for it), message and function-call items, then ``response.completed``."""

    def event(kind: str, **payload: Any) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n".encode()

    items: list[dict[str, Any]] = []
    shell = {"id": f"resp_{number}", "object": "response", "model": model, "output": []}
    yield event("response.created", response={**shell, "status": "in_progress"})
    reasoning = str(response.get("reasoning") or "")
    if reasoning:
        item: dict[str, Any] = {"id": f"rs_{number}", "type": "reasoning", "summary": []}
        for piece in _pieces(reasoning):
            yield event("response.reasoning_summary_text.delta", item_id=item["id"], delta=piece)
        item["summary"] = [{"type": "summary_text", "text": reasoning}]
        if "reasoning.encrypted_content" in (body.get("include") or ()):
            item["encrypted_content"] = f"gAAAA-encrypted-{number}-{len(reasoning)}"
        items.append(item)
    content = str(response.get("content") or "")
    if content:
        for piece in _pieces(content):
            yield event("response.output_text.delta", item_id=f"msg_{number}", delta=piece)
        text = {"type": "output_text", "text": content, "annotations": []}
        items.append(
            {
                "id": f"msg_{number}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        )
    for k, call in enumerate(response.get("tool_calls") or ()):
        arguments = _arguments_text(call)
        for piece in _pieces(arguments):
            yield event("response.function_call_arguments.delta", item_id=f"fc_{k}", delta=piece)
        items.append(
            {
                "id": f"fc_{number}_{k}",
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{number}_{k}",
                "name": call["name"],
                "arguments": arguments,
            }
        )
    for index, item in enumerate(items):
        yield event("response.output_item.done", output_index=index, item=item)
    report = {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    done = {**shell, "status": "completed", "output": items, "usage": report}
    yield event("response.completed", response=done)


def _tool_search_blocks(
    search: Mapping[str, Any], block_id: str
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """A server-side BM25 tool search for ``search["query"]`` that found ``search["found"]``
    (tool names): its ``server_tool_use`` block (input streamed) and its result."""
    use = {"type": "server_tool_use", "id": block_id, "name": "tool_search_tool_bm25", "input": {}}
    query = json.dumps({"query": search["query"]})
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(query)]
    references = [{"type": "tool_reference", "tool_name": name} for name in search["found"]]
    result = {
        "type": "tool_search_tool_result",
        "tool_use_id": block_id,
        "content": {"type": "tool_search_tool_search_result", "tool_references": references},
    }
    return [(use, deltas), (result, [])]


def _miss(kind: str, missed: int) -> dict[str, Any]:
    return {"cache_miss_reason": {"type": kind, "cache_missed_input_tokens": missed}}


def _plain(value: Any) -> Any:
    """``value`` without ``cache_control`` anywhere (it steers the cache, it is not prompt)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _blocks(body: Mapping[str, Any]) -> list[Any]:
    """The request's messages as one list of (role, content block), ``cache_control`` aside."""
    return [
        [turn["role"], _plain(block)]
        for turn in body.get("messages") or ()
        for block in (turn["content"] if isinstance(turn["content"], list) else [turn["content"]])
    ]


def _arguments_text(call: Mapping[str, Any]) -> str:
    # Plain json.dumps (spaces, insertion order), so adapters must canonicalize.
    args = call.get("arguments", {})
    return args if isinstance(args, str) else json.dumps(args)


def _pieces(text: str, parts: int = 3) -> list[str]:
    """``text`` cut into up to ``parts`` pieces, so clients must reassemble deltas."""
    if not text:
        return []
    size = max(1, math.ceil(len(text) / parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _refuse(status: int, body: bytes) -> tuple[int, dict[str, str], bytes]:
    return status, {"x-should-retry": "false"}, body


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that timed out and hung up is expected here; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        recorded = RecordedRequest(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self.rfile.read(length),
        )
        status, headers, payload = self.server.owner._handle(recorded)
        if isinstance(payload, list):  # a slow stream: no length, it ends when the socket closes
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            for event in payload:
                self.wfile.write(event)
                self.wfile.flush()
                time.sleep(self.server.owner.event_delay_s)
            return
        self.send_response(status)
        headers.setdefault("content-type", "application/json")
        headers.setdefault("content-length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""
