"""OpenAI Chat Completions adapter (R1.4, R2.3, R13).

Caching: messages and tools go out exactly as the builder made them, and
``prompt_cache_key`` carries the session id so OpenAI routes a session's requests to the
same cache. On models with explicit cache breakpoints (``gpt-5.6`` and later) the input
messages go as text parts, the builder's breakpoints marked with ``prompt_cache_breakpoint``
and ``prompt_cache_options`` in explicit mode (``providers.breakpoints``). Masking: the tool list never changes; the mask becomes ``tool_choice``
(``auto`` / ``required`` / a named function / ``allowed_tools``).

``stream_chat`` is shared with the OpenAI-compatible adapter: it runs one streamed Chat
Completions call through the official SDK (its own retries off) and maps the chunks back to
reply events. A failed call (``providers.http_errors``) or a 200 reply that is not a complete
chunk stream is retried by ``providers.retry`` when its error is retryable.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import openai

from contextengine.context.request import Request
from contextengine.errors import BrokenReplyError
from contextengine.providers.base import StreamingProvider
from contextengine.providers.breakpoints import (
    PROMPT_CACHE_OPTIONS,
    has_explicit_breakpoints,
    input_breakpoints,
    marked_chat_messages,
)
from contextengine.providers.http_errors import sdk_error
from contextengine.providers.retry import DEFAULT_BACKOFF_S, retried
from contextengine.providers.wire import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    Generation,
    ProviderSettings,
    ToolChoice,
    canonical_arguments,
    chat_messages,
    check_params,
    read_stream,
    require_api_key,
    resolve_tool_choice,
    retention_lifetime_s,
    text_field,
    token_count,
)
from contextengine.types import (
    FinishReason,
    ModelReply,
    ReasoningDelta,
    ReplyDone,
    ReplyEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from contextengine.untrusted import JSONObject

RESERVED_PARAMS = frozenset(
    {"model", "messages", "tools", "tool_choice", "stream", "stream_options", "prompt_cache_key"}
)

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
}


class OpenAIProvider(StreamingProvider):
    """OpenAI's Chat Completions API, streamed.

    ``generation`` becomes ``max_completion_tokens``, ``temperature`` and
    ``reasoning_effort``; ``params`` are extra Chat Completions fields sent with every
    request. The key comes from ``api_key`` or ``OPENAI_API_KEY``; ``base_url`` defaults to
    the SDK's (``OPENAI_BASE_URL`` or OpenAI). ``explicit_cache_breakpoints`` marks the
    builder's breakpoints (``None``: on for the models that take them, ``gpt-5.6`` and later).
    """

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        retry_backoff_s: float = DEFAULT_BACKOFF_S,
        generation: Generation | None = None,
        explicit_cache_breakpoints: bool | None = None,
        **params: Any,
    ) -> None:
        check_params(params, RESERVED_PARAMS, "OpenAIProvider")
        self.model = model
        self.explicit_cache_breakpoints = (
            has_explicit_breakpoints(model)
            if explicit_cache_breakpoints is None
            else explicit_cache_breakpoints
        )
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self._params = {**chat_generation(generation or Generation()), **params}
        self.cache_lifetime_s = retention_lifetime_s(params.get("prompt_cache_retention"))
        self._client = openai.OpenAI(
            api_key=require_api_key(api_key, "OPENAI_API_KEY", "openai"),
            base_url=base_url,
            max_retries=0,  # providers.retry decides
            timeout=timeout,
        )

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Send ``request`` and yield its text as it streams, then the whole reply."""
        body: dict[str, Any] = {"messages": chat_messages(request)}
        choice = resolve_tool_choice(request)
        if choice is not None:
            body["tools"] = request.tools
            body["tool_choice"] = openai_tool_choice(choice)
        if request.mark_breakpoints:
            body["prompt_cache_key"] = request.session_id
            if self.explicit_cache_breakpoints:
                marks = input_breakpoints(request)
                body["messages"] = marked_chat_messages(body["messages"], marks)
                body["prompt_cache_options"] = dict(PROMPT_CACHE_OPTIONS)
        body.update(self._params)
        yield from retried(
            lambda: stream_chat(self._client, self.model, body, where=f"openai {self.model}"),
            self.max_retries,
            self.retry_backoff_s,
        )


def chat_generation(
    generation: Generation, max_tokens_field: str = "max_completion_tokens"
) -> JSONObject:
    """The generation settings as Chat Completions fields (unset ones are left out)."""
    fields: JSONObject = {}
    if generation.max_tokens is not None:
        fields[max_tokens_field] = generation.max_tokens
    if generation.temperature is not None:
        fields["temperature"] = generation.temperature
    if generation.reasoning_effort is not None:
        fields["reasoning_effort"] = generation.reasoning_effort
    return fields


def openai_tool_choice(choice: ToolChoice) -> str | JSONObject:
    """``choice`` in OpenAI's ``tool_choice`` form.

    A subset uses ``allowed_tools`` so the ``tools`` list (and the cached prefix) stays the
    same; a required single tool uses the named-function form.
    """
    if choice.names is None:
        return choice.kind
    if choice.kind == "required" and choice.single is not None:
        return named_function(choice.single)
    return {
        "type": "allowed_tools",
        "allowed_tools": {"mode": choice.kind, "tools": [named_function(n) for n in choice.names]},
    }


def named_function(name: str) -> JSONObject:
    """The ``{"type": "function", "function": {"name": ...}}`` reference to one tool."""
    return {"type": "function", "function": {"name": name}}


def stream_chat(
    client: openai.OpenAI,
    model: str,
    body: Mapping[str, Any],
    *,
    where: str,
    headers: Mapping[str, str] | None = None,
    show_text: bool = True,
) -> Iterator[ReplyEvent]:
    """Run one streamed Chat Completions call and map it back to reply events.

    ``body`` is the JSON body without ``model`` and ``stream``; ``show_text=False`` keeps
    content deltas out of the event stream (the content is still in the final reply). A
    failed request is a ``ProviderError`` (``providers.http_errors``); a 200 reply that is
    not a complete chunk stream ending in a ``finish_reason`` is a ``BrokenReplyError``.
    """
    started = time.monotonic()
    fields = {k: v for k, v in body.items() if k != "messages"}
    fields["stream_options"] = {"include_usage": True}
    acc = _ChatAccumulator()
    try:
        stream = client.chat.completions.create(
            model=model,
            messages=body["messages"],
            stream=True,
            extra_body=fields,
            extra_headers=dict(headers or {}),
        )
    except openai.OpenAIError as exc:
        raise sdk_error(exc, where, openai) from exc

    def shown(chunk: Any) -> Iterator[ReplyEvent]:
        return (e for e in acc.add(chunk) if show_text or not isinstance(e, TextDelta))

    reply = yield from read_stream(
        stream, shown, lambda: acc.reply(model, time.monotonic() - started), where
    )
    if acc.finish is None:
        raise BrokenReplyError(f"{where}: the reply stream ended before its finish_reason")
    yield ReplyDone(reply)


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _ChatAccumulator:
    """Collects streamed chunks into one reply."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, _CallParts] = {}
        self.finish: str | None = None
        self.usage: Any = None
        self.timings: Any = None

    def add(self, chunk: Any) -> list[ReplyEvent]:
        if chunk.usage is not None:
            self.usage = chunk.usage
        timings = getattr(chunk, "timings", None)
        if timings:
            self.timings = timings
        events: list[ReplyEvent] = []
        for choice in chunk.choices or ():
            if getattr(choice, "index", 0) != 0:
                continue
            if choice.finish_reason:
                self.finish = str(choice.finish_reason)
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            # Self-hosted servers stream reasoning under one of these two names.
            reasoning = getattr(delta, "reasoning_content", None) or getattr(
                delta, "reasoning", None
            )
            if isinstance(reasoning, str) and reasoning:
                self.reasoning.append(reasoning)
                events.append(ReasoningDelta(reasoning))
            content = getattr(delta, "content", None)
            if content:
                self.text.append(text_field(content))
                events.append(TextDelta(content))
            for part in getattr(delta, "tool_calls", None) or ():
                self._add_call_part(part)
        return events

    def _add_call_part(self, part: Any) -> None:
        # A server that omits the index sends each call whole, in one chunk.
        index = part.index if part.index is not None else len(self.calls)
        call = self.calls.setdefault(index, _CallParts())
        if part.id and not call.id:
            call.id = text_field(part.id)
        if part.function is not None:
            call.name += text_field(part.function.name or "")
            if part.function.arguments:
                call.arguments.append(text_field(part.function.arguments))

    def reply(self, model: str, latency_s: float) -> ModelReply:
        calls = tuple(
            ToolCall(
                id=c.id or f"call_{uuid.uuid4().hex[:24]}",
                name=c.name,
                arguments_json=canonical_arguments("".join(c.arguments)),
            )
            for _, c in sorted(self.calls.items())
        )
        finish = _FINISH.get(self.finish or "stop", "other")
        if calls and finish == "stop":
            finish = "tool_calls"
        return ModelReply(
            content="".join(self.text),
            tool_calls=calls,
            reasoning="".join(self.reasoning),
            usage=self._usage(model, latency_s),
            finish_reason=finish,
        )

    def _usage(self, model: str, latency_s: float) -> Usage:
        usage = self.usage
        if usage is None:
            return Usage(latency_s=latency_s, model=model)
        details = usage.prompt_tokens_details
        cached = token_count(details.cached_tokens) if details is not None else 0
        if not cached and isinstance(self.timings, Mapping):
            # llama.cpp builds without prompt_tokens_details report the hit in timings.
            cached = token_count(self.timings.get("cache_n"))
        return Usage(
            input_tokens=token_count(usage.prompt_tokens),
            cached_tokens=cached,
            output_tokens=token_count(usage.completion_tokens),
            latency_s=latency_s,
            model=model,
        )


def from_settings(settings: ProviderSettings) -> OpenAIProvider:
    """The ``openai-chat`` provider (Chat Completions) of ``make_provider``."""
    retention = settings.prompt_cache_retention
    params: dict[str, Any] = {"prompt_cache_retention": retention} if retention else {}
    return OpenAIProvider(
        settings.model,
        api_key=settings.api_key,
        base_url=settings.base_url,
        generation=settings.generation,
        **settings.http,
        **params,
    )
