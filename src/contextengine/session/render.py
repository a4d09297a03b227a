"""Entry -> chat messages: the single place an entry becomes text for a model.

An entry is rendered once, when it is appended; the messages are stored with it in the
log and reused byte for byte on every later request. Messages use the OpenAI chat format
as the provider-neutral form; adapters translate it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contextengine.canonical import canonical_copy
from contextengine.session.diversity import (
    OBSERVATION_TEMPLATES,
    TEXT_OBSERVATION_TEMPLATES,
    label_fits,
    template_index,
)
from contextengine.session.entries import (
    AssistantEntry,
    Entry,
    ErrorEntry,
    NoteEntry,
    PruneEntry,
    ReminderEntry,
    SummaryEntry,
    ToolResultEntry,
    ToolStartEntry,
    UserEntry,
)
from contextengine.types import AssistantMessage, Message

Protocol = Literal["native", "text"]


@dataclass(frozen=True)
class RenderStyle:
    """How a session renders its entries; fixed for the session's lifetime."""

    protocol: Protocol = "native"
    diversity: bool = True


def render_entry(
    entry: Entry, index: int, session_id: str, style: RenderStyle
) -> tuple[Message, ...]:
    """Render one entry to zero or more chat messages (canonical key order)."""
    return tuple(canonical_copy(m) for m in _render(entry, index, session_id, style))


def render_observation(tool: str, content: str, template: int, protocol: Protocol) -> str:
    """Wrap an observation's content in template number ``template``."""
    templates = TEXT_OBSERVATION_TEMPLATES if protocol == "text" else OBSERVATION_TEMPLATES
    return templates[template % len(templates)].format(tool=tool, content=content)


def _render(entry: Entry, index: int, session_id: str, style: RenderStyle) -> list[Message]:
    match entry:
        case UserEntry(text=text):
            return [{"role": "user", "content": text}]
        case AssistantEntry():
            return [_render_assistant(entry, style)]
        case ToolResultEntry():
            return [render_tool_result(entry, index, session_id, style)]
        case ToolStartEntry():
            return []
        case ErrorEntry(error_class=cls, message=message):
            return [{"role": "user", "content": f'<error class="{cls}">\n{message}\n</error>'}]
        case SummaryEntry(text=text, archive=archive):
            return [
                {
                    "role": "system",
                    "content": f"{text}\n\n(Archived steps are kept verbatim in `{archive}`.)",
                }
            ]
        case NoteEntry(source=source, text=text):
            return [{"role": "user", "content": f'<context source="{source}">\n{text}\n</context>'}]
        case ReminderEntry(text=text):
            return [{"role": "user", "content": f"<system-reminder>\n{text}\n</system-reminder>"}]
        case PruneEntry():
            return [
                message
                for index, stand_in in entry.stand_ins()
                for message in _render(stand_in, index, session_id, style)
            ]
    raise TypeError(f"cannot render entry of kind {entry.kind!r}")


def _render_assistant(entry: AssistantEntry, style: RenderStyle) -> AssistantMessage:
    message: AssistantMessage = {"role": "assistant", "content": entry.text}
    if entry.tool_calls and style.protocol == "native":
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in entry.tool_calls
        ]
    if entry.provider_items:
        message["provider_items"] = list(entry.provider_items)
    return message


def render_tool_result(
    entry: ToolResultEntry,
    index: int,
    session_id: str,
    style: RenderStyle,
    content: str | None = None,
) -> Message:
    """Render a tool result with its frozen template; ``content`` overrides the stored
    compressed content (the scratchpad shows the full observation in the same frame)."""
    templates = TEXT_OBSERVATION_TEMPLATES if style.protocol == "text" else OBSERVATION_TEMPLATES
    template = template_index(session_id, index, len(templates), style.diversity)
    if not label_fits(templates, template, entry.tool_name, len(entry.content)):
        template = 0
    body = entry.content if content is None else content
    content = render_observation(entry.tool_name, body, template, style.protocol)
    message: Message = (
        {"role": "user", "content": content}
        if style.protocol == "text"
        else {"role": "tool", "tool_call_id": entry.call_id, "content": content}
    )
    return canonical_copy(message)
