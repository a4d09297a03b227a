"""The agent's default system prompt (L1): fixed text, no dynamic values."""

from __future__ import annotations

from collections.abc import Sequence

from contextengine.agent.text_protocol import PROTOCOL_INSTRUCTIONS
from contextengine.canonical import canonical_json
from contextengine.tools.spec import ToolSpec

DEFAULT_SYSTEM_PROMPT = """\
You work in one workspace folder; paths are relative to it.
- Plan with todo_write first; its status ends each request.
- Reread task_plan.md, findings.md, progress.md when lost.
- Read before you edit; test changes; after an error, change approach.
- A large output is saved to the file its observation names.
- End with a brief report: what you did and how you checked it."""


def text_protocol_prompt(base: str, tools: Sequence[ToolSpec]) -> str:
    """The system prompt for the text ReAct protocol: base text, tools, and the format."""
    listing = "\n".join(
        f"- {t.name}: {t.description}\n  arguments: {canonical_json(t.parameters)}"
        for t in sorted(tools, key=lambda t: t.name)
    )
    return f"{base}\n\nTools:\n{listing}\n\n{PROTOCOL_INSTRUCTIONS}"
