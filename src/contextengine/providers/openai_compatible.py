"""Self-hosted OpenAI-compatible servers: vLLM, SGLang, llama.cpp, Ollama (R1.5, R2.3, R13).

Every request carries the session id twice - header ``x-session-id`` and body field
``user`` - so a session-affinity router (vLLM router ``consistent_hash``, the production
stack's ``--routing-logic session``) pins a session to the replica that holds its prefix.
The ``tools`` list is always sent unchanged; the mask is enforced with what each server
documents:

============  ==============  ===========================  ==============================
server        all tools       one tool (call required)     a subset (call required)
============  ==============  ===========================  ==============================
vllm          auto/required   ``structured_outputs.json``  ``structured_outputs.json``
sglang        auto/required   named ``tool_choice``        ``response_format`` json_schema
llamacpp      auto/required   GBNF ``grammar``             GBNF ``grammar``
ollama        auto/required   ``response_format``          ``response_format`` json_schema
generic       auto/required   named ``tool_choice``        ``required`` + guard
============  ==============  ===========================  ==============================

The subset constraint is the same JSON shape vLLM itself builds for
``tool_choice="required"`` - an array of ``{"name", "parameters"}`` objects - restricted
to the allowed tools; it is sent with ``tool_choice="auto"`` (vLLM overwrites a user
constraint when ``required`` is set) and the adapter turns the array back into tool calls.
llama.cpp refuses a ``grammar`` next to tools unless ``tool_choice`` is ``none``, so there
the array is a GBNF grammar (names bound, parameters any JSON object) with
``tool_choice="none"``; the tools still render into the prompt, so the cached prefix stays.
Ollama reads ``response_format`` json_schema as its ``format`` constraint and has no
``tool_choice``. A subset in ``auto`` mode is left to the guard everywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, Literal, cast, get_args

import openai

from contextengine.canonical import canonical_json
from contextengine.context.request import Request
from contextengine.errors import ConfigError
from contextengine.local.grammar import call_array_grammar
from contextengine.providers.base import StreamingProvider
from contextengine.providers.openai import (
    RESERVED_PARAMS,
    chat_generation,
    named_function,
    stream_chat,
)
from contextengine.providers.retry import DEFAULT_BACKOFF_S, retried
from contextengine.providers.wire import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    Generation,
    ProviderSettings,
    ToolChoice,
    chat_messages,
    check_params,
    resolve_tool_choice,
)
from contextengine.types import ModelReply, ReplyDone, ReplyEvent, ToolCall, ToolDefinition
from contextengine.untrusted import JSONObject, parse_json

Server = Literal["vllm", "sglang", "llamacpp", "ollama", "generic"]
SERVERS: tuple[str, ...] = get_args(Server)
SESSION_HEADER = "x-session-id"

_NAMED_CHOICE = frozenset({"sglang", "generic"})
_CONSTRAINT_FIELDS = frozenset({"structured_outputs", "guided_json", "response_format", "grammar"})


class OpenAICompatibleProvider(StreamingProvider):
    """A self-hosted server behind the OpenAI Chat Completions API, through the ``openai`` SDK.

    ``server`` selects how masks are enforced (see the module docstring);
    ``legacy_guided_json`` sends vLLM's pre-0.12 ``guided_json`` field instead of
    ``structured_outputs``. ``generation`` becomes ``max_tokens``, ``temperature`` and
    ``reasoning_effort``; ``params`` are extra body fields sent with every request
    (``top_k``, ``chat_template_kwargs`` ...).
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str = "EMPTY",
        server: Server = "generic",
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        legacy_guided_json: bool = False,
        retry_backoff_s: float = DEFAULT_BACKOFF_S,
        generation: Generation | None = None,
        **params: Any,
    ) -> None:
        if server not in SERVERS:
            raise ConfigError(f"unknown server {server!r}; known: {', '.join(SERVERS)}")
        check_params(params, RESERVED_PARAMS | {"user"}, "OpenAICompatibleProvider")
        self.model = model
        self.base_url = base_url
        self.server = server
        self.legacy_guided_json = legacy_guided_json
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self._params = {**chat_generation(generation or Generation(), "max_tokens"), **params}
        self._client = openai.OpenAI(  # max_retries=0: providers.retry decides
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout
        )

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Send ``request`` and yield its text as it streams, then the whole reply."""
        body: dict[str, Any] = {"messages": chat_messages(request), "user": request.session_id}
        choice = resolve_tool_choice(request)
        constrained = False
        if choice is not None:
            body["tools"] = request.tools
            fields = self._mask_fields(choice, request.tools)
            constrained = bool(_CONSTRAINT_FIELDS & fields.keys())
            body.update(fields)
        if self.server == "llamacpp":
            body["cache_prompt"] = True
        body.update(self._params)
        events = retried(
            lambda: stream_chat(
                self._client,
                self.model,
                body,
                where=f"{self.server} {self.model}",
                headers={SESSION_HEADER: request.session_id},
                show_text=not constrained,
            ),
            self.max_retries,
            self.retry_backoff_s,
        )
        for event in events:
            if constrained and isinstance(event, ReplyDone):
                event = ReplyDone(calls_from_array(event.reply))
            yield event

    def _mask_fields(self, choice: ToolChoice, tools: Sequence[ToolDefinition]) -> JSONObject:
        """``tool_choice`` plus, for a constrained subset, the server's constraint field."""
        if choice.kind != "required" or (choice.names is None and self.server != "vllm"):
            return {"tool_choice": choice.kind}
        if choice.single is not None and self.server in _NAMED_CHOICE:
            return {"tool_choice": named_function(choice.single)}
        # vLLM 0.32's named and "required" tool_choice constrain the name but not always the
        # arguments; its structured output constrains both (seen on a random-weight model).
        names = choice.names or [t["function"]["name"] for t in tools]
        schema = calls_schema(tools, names)
        if self.server == "vllm":
            if self.legacy_guided_json:
                return {"tool_choice": "auto", "guided_json": schema}
            return {"tool_choice": "auto", "structured_outputs": {"json": schema}}
        if self.server == "llamacpp":
            return {"tool_choice": "none", "grammar": call_array_grammar(names)}
        if self.server in ("sglang", "ollama"):
            return {
                "tool_choice": "auto",
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "tool_calls", "schema": schema},
                },
            }
        return {"tool_choice": "required"}


def calls_schema(tools: Sequence[ToolDefinition], names: Sequence[str]) -> JSONObject:
    """JSON schema of a non-empty array of ``{"name", "parameters"}`` calls to ``names``."""
    parameters = {t["function"]["name"]: t["function"].get("parameters") for t in tools}
    return {
        "type": "array",
        "minItems": 1,
        "items": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "enum": [name]},
                        "parameters": parameters[name] or {"type": "object", "properties": {}},
                    },
                    "required": ["name", "parameters"],
                }
                for name in names
            ]
        },
    }


def calls_from_array(reply: ModelReply) -> ModelReply:
    """Turn a constrained reply's JSON call array into tool calls.

    A server whose tool parser already extracted the calls, or content that is not such an
    array, leaves the reply unchanged (the guard then sees what the model produced).
    """
    if reply.tool_calls:
        return reply
    try:
        items = parse_json(reply.content)
    except ValueError:
        return reply
    if not isinstance(items, list) or not items:
        return reply
    calls = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return reply
        try:
            arguments = canonical_json(item.get("parameters", {}))
        except ValueError:
            return reply
        calls.append(
            ToolCall(
                id=f"call_{uuid.uuid4().hex[:24]}",
                name=item["name"],
                arguments_json=arguments,
            )
        )
    return replace(reply, content="", tool_calls=tuple(calls), finish_reason="tool_calls")


def from_settings(settings: ProviderSettings) -> OpenAICompatibleProvider:
    """A self-hosted server's provider of ``make_provider`` (the registry row gives the
    server's usual URL); ``openai-compatible`` is the generic one."""
    if settings.base_url is None:
        raise ConfigError(f"provider {settings.name!r} needs a base URL (--base-url)")
    server = cast(Server, settings.name if settings.name in SERVERS else "generic")
    return OpenAICompatibleProvider(
        settings.model,
        settings.base_url,
        api_key=settings.api_key or "EMPTY",
        server=server,
        generation=settings.generation,
        **settings.http,
    )
