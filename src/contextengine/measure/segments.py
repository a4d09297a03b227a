"""A captured request body as the ordered segments a provider's prefix cache sees.

Three wire formats are read: OpenAI Chat Completions (``messages``, ``tools``), OpenAI
Responses (``instructions``, ``input``, ``tools``) and Anthropic Messages (``system``,
``messages``, ``tools``). Each becomes tools, then system, then messages, one segment per
tool, system part and message. A segment's text is its JSON exactly as sent (key order
kept, compact separators): a provider caches bytes, so a reordered key is a change.
Anthropic ``cache_control`` markers are dropped: they steer the cache, the model does not
read them, and they move every step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from contextengine.errors import ContextEngineError

Wire = Literal["openai-chat", "openai-responses", "anthropic"]
SegmentKind = Literal["tool", "system", "message"]
SYSTEM_ROLES = frozenset({"system", "developer"})


class CaptureFormatError(ContextEngineError):
    """A captured line is not a request body of a known wire format."""


@dataclass(frozen=True)
class Segment:
    """One cacheable piece of a request: a tool, a system part or a message.

    ``index`` is the tool's position in ``tools``, or the message's position in
    ``messages`` / ``input`` (None for a system part outside the message list).
    """

    kind: SegmentKind
    index: int | None
    label: str
    text: str
    value: Any


@dataclass(frozen=True)
class RequestShape:
    """A request body read as segments, with what identifies its conversation."""

    wire: Wire
    model: str
    key: str | None
    segments: tuple[Segment, ...]

    @property
    def tools(self) -> tuple[Segment, ...]:
        """The tool segments, in the order sent."""
        return tuple(s for s in self.segments if s.kind == "tool")

    @property
    def first_message(self) -> Segment | None:
        """The first non-system message (the task), if any."""
        return next((s for s in self.segments if s.kind == "message"), None)


def wire_of(body: Mapping[str, Any]) -> Wire:
    """The wire format of a request body, from the fields it carries."""
    if "input" in body or "instructions" in body:
        return "openai-responses"
    if "messages" in body:
        return "anthropic" if "system" in body or _anthropic_blocks(body) else "openai-chat"
    raise CaptureFormatError("no 'messages' or 'input': not a chat, responses or messages body")


def request_shape(body: Any) -> RequestShape:
    """Read a request body of any supported wire format into segments."""
    if not isinstance(body, Mapping):
        raise CaptureFormatError(f"a request body must be a JSON object, not {_kind(body)}")
    wire = wire_of(body)
    segments = _tool_segments(body.get("tools"))
    if wire == "openai-chat":
        segments += _message_segments(body.get("messages"), "messages")
    elif wire == "openai-responses":
        if body.get("instructions"):
            segments.append(_segment("system", None, "instructions", body["instructions"]))
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        segments += _message_segments(items, "input")
    else:
        system = body.get("system")
        if isinstance(system, list):
            segments += [_segment("system", None, f"system[{i}]", b) for i, b in enumerate(system)]
        elif system:
            segments.append(_segment("system", None, "system", system))
        segments += _message_segments(body.get("messages"), "messages")
    return RequestShape(wire, str(body.get("model") or ""), conversation_key(body), tuple(segments))


def conversation_key(body: Mapping[str, Any]) -> str | None:
    """The caller's own conversation id: ``prompt_cache_key``, ``user`` or metadata."""
    metadata = body.get("metadata")
    for value in (
        body.get("prompt_cache_key"),
        body.get("user"),
        metadata.get("user_id") if isinstance(metadata, Mapping) else None,
        metadata.get("session_id") if isinstance(metadata, Mapping) else None,
    ):
        if isinstance(value, str) and value:
            return value
    return None


def segment_text(value: Any) -> str:
    """A value's JSON as sent: key order kept, compact separators, ``cache_control`` dropped."""
    return json.dumps(_without_cache_control(value), ensure_ascii=False, separators=(",", ":"))


def _segment(kind: SegmentKind, index: int | None, label: str, value: Any) -> Segment:
    return Segment(kind, index, label, segment_text(value), value)


def _tool_segments(tools: Any) -> list[Segment]:
    if not isinstance(tools, list):
        return []
    return [_segment("tool", i, tool_name(t) or f"tools[{i}]", t) for i, t in enumerate(tools)]


def tool_name(tool: Any) -> str:
    """A tool definition's name in any of the three formats ('' if it has none)."""
    if not isinstance(tool, Mapping):
        return ""
    function = tool.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        return str(function["name"])
    return str(tool.get("name") or "")


def _message_segments(messages: Any, field: str) -> list[Segment]:
    if messages is None:
        return []
    if not isinstance(messages, list):
        raise CaptureFormatError(f"'{field}' must be a list, not {_kind(messages)}")
    out = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        kind: SegmentKind = "system" if role in SYSTEM_ROLES else "message"
        out.append(_segment(kind, i, f"{field}[{i}]", message))
    return out


def _anthropic_blocks(body: Mapping[str, Any]) -> bool:
    """Whether messages carry Anthropic-only content blocks (tool_use, tool_result...)."""
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, Mapping) and block.get("type") in _ANTHROPIC_BLOCKS:
                return True
    tools = body.get("tools") or ()
    return any(isinstance(t, Mapping) and "input_schema" in t for t in tools)


_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
