"""Anthropic Messages adapter (R1.4, R2.3, R13).

Translation from the builder's OpenAI-format messages:

* the L1 and L2 system messages become ``system`` text blocks;
* any later system message (a compaction summary) becomes a user text block wrapped in
  ``<system-reminder>`` - the Messages API has no system role inside a conversation on
  most models, and the wrapper tells the model the text is a harness note;
* ``tool`` messages become ``tool_result`` blocks in a user turn, assistant ``tool_calls``
  become ``tool_use`` blocks (ids kept), and consecutive same-role turns are merged;
* each breakpoint message's last block carries ``cache_control``, all 4 of them where they
  save most: tools + system (L1), L2, the end of the previous step's history (the prefix
  the last request wrote, read back directly even when a step adds more than the API's
  20-block lookback) and the end of the persisted history (written for the next step);
  ``cache_ttl="1h"`` asks for the 1-hour cache on every breakpoint;
* an assistant reply's thinking blocks (signature kept) are its provider items and open
  that reply's turn again in every later request while extended thinking is on, as the
  API requires in tool loops.

Tools a request defers (``Request.deferred_tools``, MCP tools over the budget with
``mcp_tool_search = "anthropic"``) are listed with ``defer_loading: true`` after Anthropic's
BM25 tool search tool (``TOOL_SEARCH``): the API leaves them out of the prompt until the
model's search returns them, and the ``tools`` stay the same bytes all session. The search's
``server_tool_use`` and ``tool_search_tool_result`` blocks are the reply's provider items
and go back in its turn, where they keep the found tools loaded.

Masks become ``tool_choice``: auto, ``any`` (a call is required), ``tool`` (exactly one
tool allowed) or ``none``. A subset of several tools cannot be named in ``tool_choice``, so
it is sent as ``any``/``auto`` plus an assistant prefill that opens the reply by naming the
allowed tools (``PREFILL``); the API returns only what follows it. A prefill cannot start a
``tool_use`` block, so it steers rather than binds, and the agent's guard still refuses any
call outside the mask. The prefill sits after every cache breakpoint, so the cached prefix
is untouched. Extended thinking (a ``thinking`` param) allows neither a prefill nor a forced
``tool_choice``: with it a subset is ``auto`` with no prefill, a required call is ``auto``
too, and the guard alone enforces the mask. Newer models reject any prefill with a 400
(Claude Opus 4.6 and later): the first such refusal turns the prefill off for the provider
and the request is sent again without it; ``mask_prefill=False`` never sends one.

Cache diagnostics (on by default against Anthropic's own API): every request carries
``diagnostics.previous_message_id`` - the id of the session's previous main reply (``null``
for the first one and for side calls, which opt in without being compared) - and the beta
header ``CACHE_DIAGNOSIS_BETA``; the reply's ``diagnostics`` (why the prefix could not be
reused, or ``null`` for no divergence) becomes ``Usage.cache_diagnosis``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any, Literal, cast

import anthropic

from contextengine.context.request import Request
from contextengine.errors import BrokenReplyError, ProviderError
from contextengine.prices import DEFAULT_CACHE_LIFETIME_S
from contextengine.providers.anthropic_stream import (
    THINKING_BLOCKS,
    TOOL_SEARCH_BLOCKS,
    Block,
    MessageAccumulator,
)
from contextengine.providers.base import StreamingProvider
from contextengine.providers.breakpoints import cache_breakpoints
from contextengine.providers.http_errors import sdk_error
from contextengine.providers.retry import DEFAULT_BACKOFF_S, retried
from contextengine.providers.wire import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    Generation,
    ProviderSettings,
    ToolChoice,
    arguments_object,
    check_params,
    plain_text,
    read_stream,
    require_api_key,
    resolve_tool_choice,
)
from contextengine.types import Message, ReplyDone, ReplyEvent, ToolDefinition
from contextengine.untrusted import JSONObject

SYSTEM_NOTE = "<system-reminder>\n{text}\n</system-reminder>"
EMPTY_TEXT = "(empty)"
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
CacheTTL = Literal["5m", "1h"]
PREFILL = "(Tools allowed for this step: {names}.)"
CACHE_DIAGNOSIS_BETA = "cache-diagnosis-2026-04-07"
ANTHROPIC_API_HOST = "api.anthropic.com"

TOOL_SEARCH: dict[str, str] = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
"""Anthropic's server-side tool search (natural-language queries, BM25), generally available."""

RESERVED_PARAMS = frozenset(
    {"model", "messages", "system", "tools", "tool_choice", "stream", "max_tokens"}
)


class AnthropicProvider(StreamingProvider):
    """Anthropic's Messages API, streamed.

    ``generation`` becomes ``max_tokens``, ``temperature`` and ``output_config.effort``;
    ``params`` are extra Messages fields sent with every request (``top_p``, ``thinking``
    ...); ``cache_ttl`` is the lifetime of every cache breakpoint (``5m`` or ``1h``);
    ``mask_prefill`` sends the assistant prefill that names a masked subset of tools (see
    the module docstring); ``cache_diagnostics`` asks for the API's cache diagnostics
    (``None``: only when talking to Anthropic's own API, the one that offers them). The key
    comes from ``api_key`` or ``ANTHROPIC_API_KEY``. A failed
    call (429, 5xx, 529 overloaded, a timeout) or a 200 reply cut before ``message_stop`` is
    retried ``max_retries`` times by ``providers.retry``. It defers the tools a request
    names in ``deferred_tools`` behind Anthropic's own tool search (``defers_tools``).
    """

    defers_tools = True

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        retry_backoff_s: float = DEFAULT_BACKOFF_S,
        mask_prefill: bool = True,
        generation: Generation | None = None,
        cache_ttl: CacheTTL = "5m",
        cache_diagnostics: bool | None = None,
        **params: Any,
    ) -> None:
        check_params(params, RESERVED_PARAMS, "AnthropicProvider")
        generation = generation or Generation()
        self.model = model
        self.mask_prefill = mask_prefill
        self.max_tokens = generation.max_tokens or max_tokens
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self.cache_control = cache_control(cache_ttl)
        self.cache_lifetime_s = 3_600.0 if cache_ttl == "1h" else DEFAULT_CACHE_LIFETIME_S
        self._params = {**anthropic_generation(generation), **params}
        self._client = anthropic.Anthropic(
            api_key=require_api_key(api_key, "ANTHROPIC_API_KEY", "anthropic"),
            base_url=base_url,
            max_retries=0,  # providers.retry decides
            timeout=timeout,
        )
        self.cache_diagnostics = (
            self._client.base_url.host == ANTHROPIC_API_HOST
            if cache_diagnostics is None
            else cache_diagnostics
        )
        # The id of each session's latest main reply: the next main request is compared with it.
        self._previous_reply: dict[str, str] = {}

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Send ``request`` and yield its text as it streams, then the whole reply."""
        thinking = _thinking_on(self._params)
        marks = self.cache_control
        extra = self._diagnostics(request)
        body = anthropic_body(request, thinking=thinking, prefill=self.mask_prefill, marks=marks)
        body.update(extra)
        try:
            yield from retried(
                lambda: self._attempt(body, request), self.max_retries, self.retry_backoff_s
            )
        except ProviderError as exc:
            if not _refused_prefill(exc, body):
                raise
            self.mask_prefill = False  # the model takes no prefill: stop sending one
            body = anthropic_body(request, thinking=thinking, prefill=False, marks=marks)
            body.update(extra)
            yield from retried(
                lambda: self._attempt(body, request), self.max_retries, self.retry_backoff_s
            )

    def _diagnostics(self, request: Request) -> dict[str, Any]:
        """The ``diagnostics`` field of ``request``'s body, when diagnostics are on."""
        if not self.cache_diagnostics:
            return {}
        previous = self._previous_reply.get(request.session_id)
        return {"diagnostics": {"previous_message_id": previous if _main(request) else None}}

    def _attempt(self, body: dict[str, Any], request: Request) -> Iterator[ReplyEvent]:
        where = f"anthropic {self.model}"
        started = time.monotonic()
        diagnostics = body.get("diagnostics")
        compared = diagnostics is not None and diagnostics["previous_message_id"] is not None
        acc = MessageAccumulator(compared=compared)
        headers = {"anthropic-beta": CACHE_DIAGNOSIS_BETA} if diagnostics is not None else {}
        try:
            # Extra params go in the raw body: the SDK's typed signature lags the API.
            stream = self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                stream=True,
                extra_body=self._params,
                extra_headers=headers,
                **body,
            )
        except anthropic.AnthropicError as exc:
            raise sdk_error(exc, where, anthropic) from exc
        reply = yield from read_stream(
            stream, acc.add, lambda: acc.reply(self.model, time.monotonic() - started), where
        )
        if not acc.stopped:
            raise BrokenReplyError(f"{where}: the reply stream ended before message_stop")
        if diagnostics is not None and _main(request) and acc.message_id:
            self._previous_reply[request.session_id] = acc.message_id
        yield ReplyDone(reply)


def anthropic_generation(generation: Generation) -> JSONObject:
    """Temperature and reasoning effort as Messages fields (``max_tokens`` is a parameter)."""
    fields: JSONObject = {}
    if generation.temperature is not None:
        fields["temperature"] = generation.temperature
    if generation.reasoning_effort is not None:
        fields["output_config"] = {"effort": generation.reasoning_effort}
    return fields


def cache_control(ttl: CacheTTL) -> dict[str, str]:
    """The ``cache_control`` of a breakpoint; the default 5 minutes is left unsaid."""
    if ttl not in ("5m", "1h"):
        raise ValueError(f"cache_ttl must be '5m' or '1h', not {ttl!r}")
    return dict(EPHEMERAL) if ttl == "5m" else {**EPHEMERAL, "ttl": ttl}


def anthropic_body(
    request: Request,
    *,
    thinking: bool = False,
    prefill: bool = True,
    marks: Mapping[str, str] = EPHEMERAL,
) -> dict[str, Any]:
    """``system``, ``messages``, ``tools`` and ``tool_choice`` for ``request``.

    ``thinking``: extended thinking is on (no forced choice, no prefill, thinking blocks
    sent back); ``prefill``: name a masked subset in an assistant prefill; ``marks``: the
    ``cache_control`` of every breakpoint.
    """
    messages = request.messages
    layers = request.segments.l1 + request.segments.l2
    n_system = 0
    while n_system < min(layers, len(messages)) and messages[n_system]["role"] == "system":
        n_system += 1
    marked = set(cache_breakpoints(request))
    system: list[Block] = []
    for i in range(n_system):
        block = _text(messages[i].get("content"))
        if i in marked:
            block["cache_control"] = dict(marks)
        system.append(block)
    turns: list[dict[str, Any]] = []
    for i in range(n_system, len(messages)):
        role, blocks = _blocks(messages[i], thinking=thinking)
        if i in marked:
            blocks[-1]["cache_control"] = dict(marks)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    body: dict[str, Any] = {"messages": turns}
    if system:
        body["system"] = system
    choice = resolve_tool_choice(request)
    if choice is not None:
        body["tools"] = anthropic_tools(request)
        body["tool_choice"] = anthropic_tool_choice(choice, thinking=thinking)
        names = choice.names
        subset = names is not None and len(names) > 1 and choice.kind != "none"
        if subset and prefill and not thinking and turns and turns[-1]["role"] == "user":
            text = PREFILL.format(names=", ".join(names or ()))
            turns.append({"role": "assistant", "content": [_text(text)]})
    return body


def anthropic_tools(request: Request) -> list[Block]:
    """The request's tools; its deferred ones with ``defer_loading`` after ``TOOL_SEARCH``."""
    deferred = request.deferred_tools
    tools = [_tool(t, t["function"]["name"] in deferred) for t in request.tools]
    return [*tools, dict(TOOL_SEARCH)] if deferred else tools


def anthropic_tool_choice(choice: ToolChoice, *, thinking: bool = False) -> dict[str, str]:
    """``choice`` as Anthropic's ``tool_choice``; extended thinking allows only auto/none."""
    if choice.kind == "required" and not thinking:
        single = choice.single
        return {"type": "tool", "name": single} if single else {"type": "any"}
    return {"type": "auto" if choice.kind == "required" else choice.kind}


def _refused_prefill(exc: ProviderError, body: Mapping[str, Any]) -> bool:
    """Whether ``exc`` is the API's 400 refusing the prefill that ``body`` ends with."""
    return (
        body["messages"][-1]["role"] == "assistant"
        and exc.status == 400
        and "prefill" in str(exc).lower()
    )


def _main(request: Request) -> bool:
    """Whether ``request`` is a main call (the prefix monitor's reference; side calls are not)."""
    return request.purpose == "main"


def _thinking_on(params: Mapping[str, Any]) -> bool:
    """Whether the extra params switch extended thinking on."""
    thinking = params.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")


def _blocks(message: Message, *, thinking: bool = False) -> tuple[str, list[Block]]:
    content = message.get("content")
    if message["role"] == "system":
        return "user", [_text(SYSTEM_NOTE.format(text=plain_text(content)))]
    if message["role"] == "tool":
        result: Block = {"type": "tool_result", "tool_use_id": message["tool_call_id"]}
        if plain_text(content):
            result["content"] = plain_text(content)
        return "user", [result]
    if message["role"] == "assistant":
        # Thinking goes back only while thinking is on; a tool search always does.
        kept = THINKING_BLOCKS | TOOL_SEARCH_BLOCKS if thinking else TOOL_SEARCH_BLOCKS
        items = message.get("provider_items") or ()
        blocks = [dict(item) for item in items if item.get("type") in kept]
        if plain_text(content).strip():
            blocks.append(_text(content))
        for call in message.get("tool_calls") or ():
            function = call["function"]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": function["name"],
                    "input": arguments_object(function.get("arguments") or ""),
                }
            )
        return "assistant", blocks or [_text(EMPTY_TEXT)]
    return "user", [_text(content)]


def _text(content: Any) -> Block:
    text = plain_text(content)
    # The API rejects empty and whitespace-only text blocks.
    return {"type": "text", "text": text if text.strip() else EMPTY_TEXT}


def _tool(tool: ToolDefinition, deferred: bool = False) -> Block:
    function = tool["function"]
    block: Block = {
        "name": function["name"],
        "description": function.get("description", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if deferred:
        block["defer_loading"] = True
    return block


def from_settings(settings: ProviderSettings) -> AnthropicProvider:
    """The ``anthropic`` provider of ``make_provider``."""
    return AnthropicProvider(
        settings.model,
        api_key=settings.api_key,
        base_url=settings.base_url,
        generation=settings.generation,
        cache_ttl=cast(CacheTTL, settings.cache_ttl),  # the adapter refuses a bad one
        **settings.http,
    )
