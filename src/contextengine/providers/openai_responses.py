"""OpenAI Responses API adapter, the default for OpenAI models (R1.4, R2.3, R13).

Requests are stateless (``store=false``): the whole input goes every time, and
``include=["reasoning.encrypted_content"]`` makes the API return each reasoning item
encrypted. A reply's output items become its provider items - reasoning items whole,
message and function-call items without the text, name and arguments the record already
holds, every item without its server ``id`` and ``status`` (nothing is stored server-side to
refer to; OpenAI's Codex CLI sends its items back the same way) - and every later request
puts them back in their order, filled from the record, so a reasoning model keeps its
reasoning across tool steps and the input prefix stays byte for byte what it was.

Caching: ``prompt_cache_key`` carries the session id; ``prompt_cache_retention`` is sent when
set. On models with explicit cache breakpoints (``gpt-5.6`` and later) input messages and
tool outputs go as ``input_text`` blocks, the builder's breakpoints marked with
``prompt_cache_breakpoint`` and ``prompt_cache_options`` in explicit mode
(``providers.breakpoints``). Masking: the tool list never changes; the mask becomes ``tool_choice`` (``auto`` /
``required`` / a named function / ``allowed_tools``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, cast

import openai

from contextengine.context.request import Request
from contextengine.errors import ProviderError
from contextengine.providers.base import StreamingProvider
from contextengine.providers.breakpoints import (
    PROMPT_CACHE_OPTIONS,
    has_explicit_breakpoints,
    input_breakpoints,
    text_blocks,
)
from contextengine.providers.http_errors import sdk_error
from contextengine.providers.retry import DEFAULT_BACKOFF_S, BrokenReplyError, retried
from contextengine.providers.wire import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    Generation,
    ProviderSettings,
    ToolChoice,
    canonical_arguments,
    check_params,
    one_line,
    plain_text,
    read_stream,
    require_api_key,
    resolve_tool_choice,
    retention_lifetime_s,
    text_field,
    token_count,
)
from contextengine.types import (
    AssistantMessage,
    FinishReason,
    Message,
    ModelReply,
    ReasoningDelta,
    ReplyDone,
    ReplyEvent,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
    WireToolCall,
)
from contextengine.untrusted import JSONObject

CacheRetention = Literal["in_memory", "24h"]

RESERVED_PARAMS = frozenset(
    {
        "model",
        "input",
        "tools",
        "tool_choice",
        "stream",
        "store",
        "include",
        "prompt_cache_key",
        "prompt_cache_retention",
    }
)
ENCRYPTED_REASONING = "reasoning.encrypted_content"

# Fields of an output item that the record holds already; the rest is kept to send back.
_RECORDED: dict[str, frozenset[str]] = {
    "message": frozenset({"content"}),
    "function_call": frozenset({"call_id", "name", "arguments"}),
}
_SERVER_FIELDS = frozenset({"id", "status"})
# Provider items of the Anthropic adapter, which a resumed session may carry.
_FOREIGN = frozenset({"thinking", "redacted_thinking"})
_REASONING_DELTAS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)

Item = JSONObject
"""One Responses input or output item (its shape is the API's)."""


class OpenAIResponsesProvider(StreamingProvider):
    """OpenAI's Responses API, streamed and stateless.

    ``generation`` becomes ``max_output_tokens``, ``temperature`` and ``reasoning.effort``;
    ``prompt_cache_retention`` (``in_memory`` / ``24h``) is sent when given;
    ``encrypted_reasoning=False`` stops asking for encrypted reasoning (for models that
    refuse it). ``explicit_cache_breakpoints`` marks the builder's breakpoints (``None``: on
    for the models that take them, ``gpt-5.6`` and later). ``params`` are extra Responses
    fields sent with every request. The key comes from ``api_key`` or ``OPENAI_API_KEY``.
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
        prompt_cache_retention: CacheRetention | None = None,
        encrypted_reasoning: bool = True,
        explicit_cache_breakpoints: bool | None = None,
        **params: Any,
    ) -> None:
        check_params(params, RESERVED_PARAMS, "OpenAIResponsesProvider")
        self.model = model
        self.explicit_cache_breakpoints = (
            has_explicit_breakpoints(model)
            if explicit_cache_breakpoints is None
            else explicit_cache_breakpoints
        )
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self.prompt_cache_retention = prompt_cache_retention
        self.cache_lifetime_s = retention_lifetime_s(prompt_cache_retention)
        self.encrypted_reasoning = encrypted_reasoning
        self._params = {**responses_generation(generation or Generation()), **params}
        self._client = openai.OpenAI(
            api_key=require_api_key(api_key, "OPENAI_API_KEY", "openai"),
            base_url=base_url,
            max_retries=0,  # providers.retry decides
            timeout=timeout,
        )

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Send ``request`` and yield its text as it streams, then the whole reply."""
        explicit = request.mark_breakpoints and self.explicit_cache_breakpoints
        marks = input_breakpoints(request) if explicit else None
        body: dict[str, Any] = {"input": responses_input(request.messages, marks), "store": False}
        if self.encrypted_reasoning:
            body["include"] = [ENCRYPTED_REASONING]
        choice = resolve_tool_choice(request)
        if choice is not None:
            body["tools"] = [responses_tool(t) for t in request.tools]
            body["tool_choice"] = responses_tool_choice(choice)
        if request.mark_breakpoints:
            body["prompt_cache_key"] = request.session_id
        if explicit:
            body["prompt_cache_options"] = dict(PROMPT_CACHE_OPTIONS)
        if self.prompt_cache_retention is not None:
            body["prompt_cache_retention"] = self.prompt_cache_retention
        body.update(self._params)
        yield from retried(lambda: self._attempt(body), self.max_retries, self.retry_backoff_s)

    def _attempt(self, body: Mapping[str, Any]) -> Iterator[ReplyEvent]:
        where = f"openai {self.model}"
        started = time.monotonic()
        acc = _ResponseAccumulator()
        fields = {k: v for k, v in body.items() if k != "input"}
        try:
            stream = self._client.responses.create(
                model=self.model, input=body["input"], stream=True, extra_body=fields
            )
        except openai.OpenAIError as exc:
            raise sdk_error(exc, where, openai) from exc
        reply = yield from read_stream(
            stream, acc.add, lambda: acc.reply(self.model, time.monotonic() - started), where
        )
        if acc.failure is not None:
            raise ProviderError(f"{where}: the response failed: {acc.failure}")
        if reply is None:
            raise BrokenReplyError(f"{where}: the reply stream ended before response.completed")
        yield ReplyDone(reply)


def responses_generation(generation: Generation) -> JSONObject:
    """The generation settings as Responses fields (unset ones are left out)."""
    fields: JSONObject = {}
    if generation.max_tokens is not None:
        fields["max_output_tokens"] = generation.max_tokens
    if generation.temperature is not None:
        fields["temperature"] = generation.temperature
    if generation.reasoning_effort is not None:
        fields["reasoning"] = {"effort": generation.reasoning_effort}
    return fields


def responses_input(messages: Sequence[Message], marks: frozenset[int] | None = None) -> list[Item]:
    """The builder's chat messages as Responses input items, provider items put back.

    With ``marks`` (a model with explicit cache breakpoints) every input message and tool
    output is ``input_text`` blocks, those at ``marks`` ending in a breakpoint.
    """
    items: list[Item] = []
    for i, message in enumerate(messages):
        text: Any = plain_text(message.get("content"))
        if marks is not None and message["role"] != "assistant":
            text = text_blocks(text, "input_text", i in marks)
        if message["role"] == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": text,
                }
            )
        elif message["role"] == "assistant":
            items.extend(_assistant_items(message))
        else:
            items.append({"role": message["role"], "content": text})
    return items


def _assistant_items(message: AssistantMessage) -> list[Item]:
    """One assistant message as the output items it came from, in their order."""
    text = plain_text(message.get("content"))
    calls = list(message.get("tool_calls") or ())
    items: list[Item] = []
    text_sent = False
    for kept in message.get("provider_items") or ():
        kind = kept.get("type")
        if kind == "message" and not text_sent:
            items.append({**kept, "content": [_output_text(text)]})
            text_sent = True
        elif kind == "function_call" and calls:
            items.append({**kept, **_call_fields(calls.pop(0))})
        elif kind not in _RECORDED and kind not in _FOREIGN:
            items.append(dict(kept))
    if text.strip() and not text_sent:
        items.append({"role": "assistant", "content": text})
    items.extend({"type": "function_call", **_call_fields(call)} for call in calls)
    return items


def _output_text(text: str) -> Item:
    return {"type": "output_text", "text": text, "annotations": []}


def _call_fields(call: WireToolCall) -> Item:
    function = call["function"]
    return {
        "call_id": call["id"],
        "name": function["name"],
        "arguments": function.get("arguments") or "",
    }


def responses_tool(tool: ToolDefinition) -> Item:
    """An OpenAI chat function tool as a Responses function tool."""
    function = tool["function"]
    return {
        "type": "function",
        "name": function["name"],
        "description": function.get("description", ""),
        "parameters": function.get("parameters") or {"type": "object", "properties": {}},
        "strict": False,
    }


def responses_tool_choice(choice: ToolChoice) -> str | Item:
    """``choice`` as the Responses ``tool_choice``: a subset is ``allowed_tools``."""
    if choice.names is None:
        return choice.kind
    if choice.kind == "required" and choice.single is not None:
        return {"type": "function", "name": choice.single}
    return {
        "type": "allowed_tools",
        "mode": choice.kind,
        "tools": [{"type": "function", "name": name} for name in choice.names],
    }


def kept_item(item: Mapping[str, Any]) -> Item:
    """An output item as a provider item: without server ids and the fields the record holds."""
    dropped = _SERVER_FIELDS | _RECORDED.get(str(item.get("type")), frozenset())
    return {k: v for k, v in item.items() if k not in dropped}


class _ResponseAccumulator:
    """Collects streamed Responses events; the final response is authoritative."""

    def __init__(self) -> None:
        self.response: Any = None
        self.failure: str | None = None

    def add(self, event: Any) -> Sequence[ReplyEvent]:
        kind = event.type
        if kind == "response.output_text.delta":
            return (TextDelta(text_field(event.delta)),)
        if kind in _REASONING_DELTAS:
            return (ReasoningDelta(text_field(event.delta)),)
        if kind in ("response.completed", "response.incomplete"):
            self.response = event.response
        elif kind == "response.failed":
            error = getattr(event.response, "error", None)
            self.failure = one_line(getattr(error, "message", None) or "no reason given")
        elif kind == "error":
            self.failure = one_line(getattr(event, "message", None) or "no reason given")
        return ()

    def reply(self, model: str, latency_s: float) -> ModelReply | None:
        response = self.response
        if response is None:
            return None
        items = [item.to_dict() for item in response.output or ()]
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[ToolCall] = []
        for item in items:
            kind = item.get("type")
            if kind == "message":
                text.extend(
                    text_field(part.get("text"))
                    for part in item.get("content") or ()
                    if part.get("type") == "output_text"
                )
            elif kind == "reasoning":
                parts = [*(item.get("summary") or ()), *(item.get("content") or ())]
                reasoning.extend(text_field(part.get("text")) for part in parts)
            elif kind == "function_call":
                calls.append(
                    ToolCall(
                        text_field(item.get("call_id")),
                        text_field(item.get("name")),
                        canonical_arguments(text_field(item.get("arguments") or "")),
                    )
                )
        return ModelReply(
            content="".join(text),
            tool_calls=tuple(calls),
            reasoning="\n\n".join(reasoning),
            usage=_usage(response.usage, model, latency_s),
            finish_reason=_finish(response, bool(calls)),
            provider_items=tuple(kept_item(item) for item in items),
        )


def _finish(response: Any, has_calls: bool) -> FinishReason:
    if response.status == "incomplete":
        details = getattr(response, "incomplete_details", None)
        return "length" if getattr(details, "reason", None) == "max_output_tokens" else "other"
    return "tool_calls" if has_calls else "stop"


def _usage(usage: Any, model: str, latency_s: float) -> Usage:
    if usage is None:
        return Usage(latency_s=latency_s, model=model)
    details = getattr(usage, "input_tokens_details", None)
    return Usage(
        input_tokens=token_count(usage.input_tokens),
        cached_tokens=token_count(getattr(details, "cached_tokens", None)),
        cache_write_tokens=token_count(getattr(details, "cache_write_tokens", None)),
        output_tokens=token_count(usage.output_tokens),
        latency_s=latency_s,
        model=model,
    )


def from_settings(settings: ProviderSettings) -> OpenAIResponsesProvider:
    """The ``openai`` provider (the Responses API) of ``make_provider``."""
    retention = cast(CacheRetention | None, settings.prompt_cache_retention)
    return OpenAIResponsesProvider(
        settings.model,
        api_key=settings.api_key,
        base_url=settings.base_url,
        generation=settings.generation,
        prompt_cache_retention=retention,
        **settings.http,
    )
