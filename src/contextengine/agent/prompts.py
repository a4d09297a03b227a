"""The agent's default system prompt (L1): fixed text for a session, no dynamic values."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from contextengine.agent.text_protocol import PROTOCOL_INSTRUCTIONS
from contextengine.canonical import canonical_json
from contextengine.memory.status import MEMORY_NAMES
from contextengine.toolkit.spec import ToolSpec

_PLAN_TOOL = "todo_write"


def default_system_prompt(
    tool_names: Collection[str], *, recitation: bool, working_memory: bool
) -> str:
    """The agent's default system prompt, saying only what holds for the session's tools
    and components (``recitation``, ``working_memory``: those flags in force): a line about a tool the session lacks would send the model looking
    for it, and every line is paid on every request (a saved large output needs none: its
    observation says where it is and how to read it)."""
    lines = ["Paths are relative to the workspace."]
    if _PLAN_TOOL in tool_names:
        ends = "; its status ends each request." if recitation else "."
        lines.append(f"- Plan with {_PLAN_TOOL} first{ends}")
    if working_memory:
        # the task status names the files and their folder when it is recited
        files = "the memory files" if recitation else MEMORY_NAMES.rstrip(".")
        lines.append(f"- Reread {files} when lost.")
    lines.append("- Read before editing; test changes; after an error, change approach.")
    lines.append("- End with a brief report: what you did, how you checked it.")
    return "\n".join(lines)


def text_protocol_prompt(base: str, tools: Sequence[ToolSpec]) -> str:
    """The system prompt for the text ReAct protocol: base text, tools, and the format."""
    listing = "\n".join(
        f"- {t.name}: {t.description}\n  arguments: {canonical_json(t.parameters)}"
        for t in sorted(tools, key=lambda t: t.name)
    )
    return f"{base}\n\nTools:\n{listing}\n\n{PROTOCOL_INSTRUCTIONS}"
