"""What the loop accepts from a provider: reply text that can be recorded, sent and printed."""

from __future__ import annotations

from dataclasses import replace

from contextengine.types import ModelReply, ToolCall
from contextengine.untrusted import valid_text


def valid_reply(reply: ModelReply) -> ModelReply:
    """``reply`` with lone surrogates in its text, reasoning and calls replaced by U+FFFD."""
    calls = tuple(
        ToolCall(valid_text(c.id), valid_text(c.name), valid_text(c.arguments_json))
        for c in reply.tool_calls
    )
    return replace(
        reply,
        content=valid_text(reply.content),
        reasoning=valid_text(reply.reasoning),
        tool_calls=calls,
    )
