"""Anthropic's Messages stream, event by event, into our reply events and one reply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextengine.providers.wire import (
    arguments_object,
    canonical_arguments,
    text_field,
    token_count,
)
from contextengine.types import (
    FinishReason,
    ModelReply,
    ReasoningDelta,
    ReplyEvent,
    TextDelta,
    ToolCall,
    Usage,
)

THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
TOOL_SEARCH_BLOCKS = frozenset({"server_tool_use", "tool_search_tool_result"})
"""A server-side tool search and its result: the API needs them back in later requests,
where the tools they reference stay loaded."""
Block = dict[str, Any]
_STOP: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


@dataclass
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    data: str = ""
    whole: Block = field(default_factory=dict)  # a block that arrives complete at its start

    def provider_item(self) -> Block:
        """This thinking or tool-search block as the API needs it back."""
        if self.kind == "server_tool_use" and self.parts:
            return {**self.whole, "input": arguments_object("".join(self.parts))}
        if self.kind in TOOL_SEARCH_BLOCKS:
            return self.whole
        if self.kind == "redacted_thinking":
            return {"type": "redacted_thinking", "data": self.data}
        return {
            "type": "thinking",
            "thinking": "".join(self.parts),
            "signature": "".join(self.signature),
        }


class MessageAccumulator:
    """Collects streamed Messages events into one reply.

    ``compared``: the request named a previous message for cache diagnostics, so the
    ``diagnostics`` that ``message_start`` carries (``null`` = no divergence) is its
    verdict; a server that sends no such field gives none.
    """

    def __init__(self, compared: bool = False) -> None:
        self.compared = compared
        self.message_id = ""
        self.blocks: dict[int, _Block] = {}
        self.stop: str | None = None
        self.stopped = False
        # Anthropic's counters, zero until the stream reports them; the cache ones mark the
        # form for ``Usage.from_wire`` even when a stream leaves them out.
        self.usage: dict[str, object] = {
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }

    def add(self, event: Any) -> Sequence[ReplyEvent]:
        kind = event.type
        if kind == "message_start":
            message = event.message
            self.message_id = text_field(getattr(message, "id", None) or "")
            if self.compared and "diagnostics" in message.model_fields_set:
                self.usage["diagnostics"] = _diagnostics(message.diagnostics)
            self._usage(message.usage)
        elif kind == "message_delta":
            self.stop = text_field(event.delta.stop_reason or self.stop or "")
            self._usage(event.usage)
        elif kind == "content_block_start":
            block = event.content_block
            self.blocks[event.index] = _Block(
                text_field(block.type),
                text_field(getattr(block, "id", None) or ""),
                text_field(getattr(block, "name", None) or ""),
                data=text_field(getattr(block, "data", None) or ""),
                whole=_whole(block) if block.type in TOOL_SEARCH_BLOCKS else {},
            )
        elif kind == "content_block_delta":
            return self._delta(self.blocks[event.index], event.delta)
        elif kind == "message_stop":
            self.stopped = True
        return ()

    def _delta(self, block: _Block, delta: Any) -> Sequence[ReplyEvent]:
        if delta.type == "text_delta":
            block.parts.append(text_field(delta.text))
            return (TextDelta(delta.text),)
        if delta.type == "thinking_delta":
            block.parts.append(text_field(delta.thinking))
            return (ReasoningDelta(delta.thinking),)
        if delta.type == "signature_delta":
            block.signature.append(text_field(delta.signature))
        if delta.type == "input_json_delta":
            block.parts.append(text_field(delta.partial_json))
        return ()

    def _usage(self, usage: Any) -> None:
        # message_delta repeats the counters cumulatively; the latest non-null value wins.
        for name in (
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "output_tokens",
        ):
            value = getattr(usage, name, None)
            if value is not None:
                self.usage[name] = token_count(value)

    def reply(self, model: str, latency_s: float) -> ModelReply:
        """The whole reply, usage (and cache diagnostics) normalized."""
        ordered = [b for _, b in sorted(self.blocks.items())]
        calls = tuple(
            ToolCall(b.id, b.name, canonical_arguments("".join(b.parts) or "{}"))
            for b in ordered
            if b.kind == "tool_use"
        )
        return ModelReply(
            content="".join("".join(b.parts) for b in ordered if b.kind == "text"),
            tool_calls=calls,
            reasoning="".join("".join(b.parts) for b in ordered if b.kind == "thinking"),
            usage=Usage.from_wire(self.usage, latency_s, model)
            or Usage(latency_s=latency_s, model=model),
            finish_reason=_STOP.get(self.stop or "end_turn", "other"),
            provider_items=tuple(
                b.provider_item() for b in ordered if b.kind in THINKING_BLOCKS | TOOL_SEARCH_BLOCKS
            ),
        )


def _whole(block: Any) -> Block:
    """A complete block of the stream as plain JSON data (the SDK parses it into a model)."""
    data: Block = block.model_dump(mode="json", exclude_none=True)
    return data


def _diagnostics(diagnostics: Any) -> dict[str, Any] | None:
    """The SDK's ``diagnostics`` back in its wire form, for ``Usage.from_wire``; read field by
    field so a reason type newer than the SDK comes through as sent."""
    if diagnostics is None:
        return None
    reason = getattr(diagnostics, "cache_miss_reason", None)
    if reason is None:
        return {"cache_miss_reason": None}
    return {
        "cache_miss_reason": {
            "type": getattr(reason, "type", None),
            "cache_missed_input_tokens": getattr(reason, "cache_missed_input_tokens", None),
        }
    }
