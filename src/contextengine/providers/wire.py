"""Mapping helpers shared by the provider adapters; no SDK is imported here.

A request's mask becomes one provider-neutral ``ToolChoice`` that each adapter spells in
its own wire format; tool-call arguments are normalized the same way everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from contextengine.canonical import canonical_json
from contextengine.context.request import Request
from contextengine.errors import BrokenReplyError, ConfigError, MissingAPIKeyError, ProviderError
from contextengine.prices import DEFAULT_CACHE_LIFETIME_S
from contextengine.text import one_line as single_line
from contextengine.types import Message, ReasoningEffort, ReplyEvent
from contextengine.untrusted import JSONObject, parse_json, valid_text

T = TypeVar("T")

ChoiceKind = Literal["none", "auto", "required"]

DEFAULT_TIMEOUT_S = 120.0
"""Seconds an HTTP call may wait for the next bytes (a streamed generation may run longer)."""

DEFAULT_MAX_RETRIES = 2
"""Retries after a transient failure (connection, timeout, 408/409/429/5xx, broken stream)."""


@dataclass(frozen=True)
class Generation:
    """Generation settings every adapter sends in its own shape; ``None`` leaves the
    API's default (Anthropic, which requires ``max_tokens``, then uses 4096)."""

    max_tokens: int | None = None
    temperature: float | None = None
    reasoning_effort: ReasoningEffort | None = None


@dataclass(frozen=True)
class ProviderSettings:
    """What a provider is made from (``make_provider``'s arguments, defaults filled in);
    each provider's ``from_settings`` reads the fields it uses."""

    name: str
    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    context_window: int | None = None
    generation: Generation = Generation()
    prompt_cache_retention: str | None = None
    cache_ttl: str = "5m"

    @property
    def http(self) -> dict[str, Any]:
        """The HTTP adapters' ``timeout`` and ``max_retries`` arguments."""
        return {"timeout": self.timeout_s, "max_retries": self.max_retries}


@dataclass(frozen=True)
class ToolChoice:
    """What the model may do now: ``kind``, restricted to ``names`` (``None`` = every tool).

    ``names`` is never empty and never the whole tool list: a mask allowing every tool
    resolves to ``names=None``, one allowing none resolves to ``kind="none"``.
    """

    kind: ChoiceKind
    names: tuple[str, ...] | None = None

    @property
    def single(self) -> str | None:
        """The one allowed tool when exactly one is allowed, else ``None``."""
        return self.names[0] if self.names is not None and len(self.names) == 1 else None


def resolve_tool_choice(request: Request) -> ToolChoice | None:
    """The request's mask as a ``ToolChoice``; ``None`` when the request has no tools."""
    tool_names = request.tool_names
    if not tool_names:
        return None
    mask = request.mask
    if mask is None or mask.is_open:
        return ToolChoice("auto")
    allowed = mask.allowed_names(tool_names)
    must_call = mask.mode != "auto"
    if not allowed:
        if must_call:
            raise ProviderError(
                f"tool mask {mask.allow} (mode {mask.mode!r}) requires a tool call "
                f"but allows none of the request's tools {list(tool_names)}"
            )
        return ToolChoice("none")
    names = None if len(allowed) == len(tool_names) else allowed
    return ToolChoice("required" if must_call else "auto", names)


def chat_messages(request: Request) -> list[Message]:
    """The request's messages for a Chat Completions body, without provider items.

    Only a session that another adapter answered before has such items; they mean
    nothing to a chat server, which may reject the unknown key.
    """
    return [_without_provider_items(m) for m in request.messages]


def _without_provider_items(message: Message) -> Message:
    if message["role"] != "assistant" or "provider_items" not in message:
        return message
    plain = message.copy()
    del plain["provider_items"]
    return plain


def canonical_arguments(raw: str) -> str:
    """Tool-call arguments as recorded: canonical JSON when ``raw`` parses strictly, else ``raw``."""
    try:
        return canonical_json(parse_json(raw))
    except ValueError:
        return raw


def arguments_object(arguments_json: str) -> JSONObject:
    """Arguments as the JSON object a wire format needs (Anthropic ``tool_use.input``).

    Empty arguments are ``{}``; anything that is not a JSON object is kept verbatim under
    ``invalid_arguments`` so the model still sees what it sent.
    """
    if not arguments_json.strip():
        return {}
    try:
        value = parse_json(arguments_json)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"invalid_arguments": arguments_json}


def require_api_key(api_key: str | None, env_var: str, provider: str) -> str:
    """The explicit key, else the environment's; a clear error when neither is set."""
    key = api_key or os.environ.get(env_var)
    if not key:
        raise MissingAPIKeyError(
            f"{provider}: no API key; pass api_key=... or set the {env_var} environment variable"
        )
    return key


def check_params(params: Mapping[str, Any], reserved: frozenset[str], owner: str) -> None:
    """Refuse extra request fields that the adapter itself sets."""
    clash = sorted(set(params) & reserved)
    if clash:
        raise ConfigError(f"{owner}: {clash} are set by the adapter and cannot be passed as params")


def plain_text(content: Any) -> str:
    """Message content as text (a list of OpenAI text parts is joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))


def one_line(text: object) -> str:
    """``text`` on a single line, for error messages built from server replies."""
    return valid_text(single_line(str(text)))


def read_stream(
    stream: Any,
    add: Callable[[Any], Iterable[ReplyEvent]],
    finish: Callable[[], T],
    where: str,
) -> Generator[ReplyEvent, None, T]:
    """Yield what ``add`` makes of each event of an SDK ``stream``, then return
    ``finish()``; anything failing on the way (the SDK, its HTTP library, a field) is a
    ``BrokenReplyError``: the call was answered, the reply is broken."""
    try:
        with stream:
            for event in stream:
                yield from add(event)
        return finish()
    except Exception as exc:
        raise BrokenReplyError(f"{where}: broken reply stream: {brief_error(exc)}") from exc


def brief_error(exc: BaseException, limit: int = 200) -> str:
    """``exc`` as ``Type: message`` on one line, cut to ``limit`` characters."""
    text = one_line(f"{type(exc).__name__}: {exc}")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_field(value: Any) -> str:
    """A streamed string field; anything else breaks the reply."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def token_count(value: Any) -> int:
    """A token count: ``None`` is 0; anything but a non-negative integer breaks the reply."""
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"expected a token count, got {value!r:.40}")
    return value


def retention_lifetime_s(retention: object) -> float:
    """How long OpenAI keeps an idle prompt cache under ``prompt_cache_retention``: a day
    with ``24h``, else its default few minutes."""
    return 86_400.0 if retention == "24h" else DEFAULT_CACHE_LIFETIME_S
