"""Small types that cross module boundaries: tool calls, chat messages, usage, model replies,
turns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

from contextengine.untrusted import JSONObject, parse_json


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model made it.

    ``arguments_json`` is kept as text: canonical JSON when the model's arguments parsed,
    otherwise the model's raw text, so a broken call is recorded exactly as it was made.
    """

    id: str
    name: str
    arguments_json: str

    def arguments(self) -> JSONObject:
        """Parse the arguments; raises ``ValueError`` when they are not a strict JSON object."""
        value = parse_json(self.arguments_json or "{}")
        if not isinstance(value, dict):
            raise ValueError("tool call arguments must be a JSON object")
        return value

    def arguments_or_empty(self) -> JSONObject:
        """The arguments, or ``{}`` when they are not a JSON object."""
        try:
            return self.arguments()
        except ValueError:
            return {}


NO_DIVERGENCE = "none"
PENDING = "pending"


@dataclass(frozen=True)
class CacheDiagnosis:
    """The provider's own comparison of a request with the session's previous one
    (Anthropic's cache diagnostics).

    ``reason`` is the provider's ``cache_miss_reason`` type (``model_changed``,
    ``system_changed``, ``tools_changed``, ``messages_changed``,
    ``previous_message_not_found``, ``unavailable``), ``"none"`` when it found no divergence
    and ``"pending"`` when its comparison had not finished; ``missed_input_tokens`` is its
    estimate of the input tokens past the divergence (0 when it gives none).
    """

    reason: str
    missed_input_tokens: int = 0

    @classmethod
    def from_wire(cls, diagnostics: object) -> CacheDiagnosis | None:
        """Anthropic's response ``diagnostics`` (``null`` = no divergence); ``None`` when it
        is neither null nor an object."""
        if diagnostics is None:
            return cls(NO_DIVERGENCE)
        if not isinstance(diagnostics, Mapping):
            return None
        reason = diagnostics.get("cache_miss_reason")
        if not isinstance(reason, Mapping):
            return cls(PENDING)
        kind = reason.get("type")
        return cls(
            kind if isinstance(kind, str) and kind else "unknown",
            _count(reason.get("cache_missed_input_tokens")),
        )


class FunctionCall(TypedDict):
    """The function part of a wire tool call: its name and its arguments as JSON text."""

    name: str
    arguments: str


class WireToolCall(TypedDict):
    """A tool call inside an assistant message (OpenAI chat form)."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class SystemMessage(TypedDict):
    """System text: the prompt, project rules, a compaction summary."""

    role: Literal["system"]
    content: str


class UserMessage(TypedDict):
    """User text, and every framed note the engine shows the model as the user."""

    role: Literal["user"]
    content: str


class AssistantMessage(TypedDict):
    """A model reply. ``provider_items`` (only when there are some) are the opaque items
    the answering provider must get back with it (``ModelReply.provider_items``)."""

    role: Literal["assistant"]
    content: str
    tool_calls: NotRequired[list[WireToolCall]]
    provider_items: NotRequired[list[JSONObject]]


class ToolMessage(TypedDict):
    """One tool result, answering the call ``tool_call_id``."""

    role: Literal["tool"]
    tool_call_id: str
    content: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage
"""A chat message in the provider-neutral form (OpenAI chat's), as the builder puts it in a
request and every adapter translates it; ``role`` tells the four apart."""


class FunctionSpec(TypedDict):
    """A function tool's name, description and JSON Schema of its arguments."""

    name: str
    description: str
    parameters: JSONObject


class ToolDefinition(TypedDict):
    """A tool as a request lists it (OpenAI function-tool form)."""

    type: Literal["function"]
    function: FunctionSpec


@dataclass(frozen=True)
class Usage:
    """Token accounting of one model call, normalized across providers.

    ``input_tokens`` is the whole prompt, cached part included (OpenAI's convention);
    ``cached_tokens`` were read from the prefix cache, ``cache_write_tokens`` written to it.
    ``cache_diagnosis`` is the provider's own verdict on the prefix, when it gave one.
    """

    input_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    cache_diagnosis: CacheDiagnosis | None = None

    @property
    def uncached_tokens(self) -> int:
        """Prompt tokens that were neither read from nor written to the cache."""
        return max(0, self.input_tokens - self.cached_tokens - self.cache_write_tokens)

    def token_counts(self) -> dict[str, int]:
        """The four token counts, JSON-ready (what capture files and profiles record)."""
        return {
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "output_tokens": self.output_tokens,
        }

    @classmethod
    def from_wire(cls, usage: object, latency_s: float = 0.0, model: str = "") -> Usage | None:
        """Usage in any provider's wire form (Chat Completions, Responses, Anthropic Messages)
        or already normalized; ``None`` when ``usage`` is none of them. Anthropic's
        ``input_tokens`` leaves out the cached and cache-written parts, so they are added; a
        ``diagnostics`` key beside Anthropic's counters is its response's cache diagnostics
        (present only when the request was compared with a previous one)."""
        if not isinstance(usage, Mapping):
            return None
        if "prompt_tokens" in usage:  # Chat Completions
            details = usage.get("prompt_tokens_details")
            cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
            prompt, output = (
                _count(usage.get("prompt_tokens")),
                _count(usage.get("completion_tokens")),
            )
            return cls(prompt, cached, 0, output, latency_s, model)
        if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
            read = _count(usage.get("cache_read_input_tokens"))
            written = _count(usage.get("cache_creation_input_tokens"))
            total = _count(usage.get("input_tokens")) + read + written
            diagnosis = (
                CacheDiagnosis.from_wire(usage["diagnostics"]) if "diagnostics" in usage else None
            )
            output = _count(usage.get("output_tokens"))
            return cls(total, read, written, output, latency_s, model, diagnosis)
        if "input_tokens" not in usage:
            return None
        details = usage.get("input_tokens_details")
        cached = (
            _count(details.get("cached_tokens"))
            if isinstance(details, Mapping)
            else _count(usage.get("cached_tokens"))
        )
        return cls(
            _count(usage.get("input_tokens")),
            cached,
            _count(usage.get("cache_write_tokens")),
            _count(usage.get("output_tokens")),
            latency_s,
            model,
        )


def _count(value: object) -> int:
    """A wire token count: a positive integer, else 0 (usage from outside is never trusted)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


FinishReason = Literal["stop", "tool_calls", "length", "error", "other"]

HistoryMode = Literal["compressed", "full", "round_scratchpad"]
"""How tool results enter history (the ``history_mode`` setting)."""

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""Reasoning effort levels; each API accepts its own subset (OpenAI none..xhigh, Anthropic
low..max) and names a level it refuses in its error."""


@dataclass(frozen=True)
class ModelReply:
    """What a provider returns for one request.

    ``provider_items`` are the provider's own opaque items that must go back to it, in
    order and byte for byte, with this reply in later requests (OpenAI encrypted reasoning
    items, Anthropic signed thinking blocks), in that provider's wire shape. ``ends_turn``:
    the provider already knows the reply is the turn's final answer (a replay's recorded
    one), whatever the text protocol would make of its text.
    """

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason = "stop"
    provider_items: tuple[JSONObject, ...] = ()
    ends_turn: bool = False


@dataclass(frozen=True)
class TextDelta:
    """A piece of the reply's visible text, as it streams."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's separate reasoning text, as it streams."""

    text: str


@dataclass(frozen=True)
class ReplyDone:
    """The end of a streamed reply, with the whole reply."""

    reply: ModelReply


ReplyEvent = TextDelta | ReasoningDelta | ReplyDone


@dataclass(frozen=True)
class TurnInfo:
    """A queued or running turn: its first event id, the history index it starts at (the
    log's length when it was accepted), its message."""

    first_event_id: int
    entry_index: int
    message: str
