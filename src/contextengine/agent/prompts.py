"""The agent's default system prompt (L1): fixed text, no dynamic values."""

from __future__ import annotations

from collections.abc import Sequence

from contextengine.agent.text_protocol import PROTOCOL_INSTRUCTIONS
from contextengine.canonical import canonical_json
from contextengine.tools.spec import ToolSpec

DEFAULT_SYSTEM_PROMPT = """\
You are a software agent in one workspace folder; paths are relative to it.
- Plan with todo_write first and keep it current; its status ends every request.
- Memory: task_plan.md, findings.md (memory_finding_add), progress.md; reread them when lost.
- Read before you edit; check changes with shell_exec.
- Errors are verbatim: change your approach instead of repeating a call.
- A large output is saved to the file its observation names.
- When done, answer briefly: what you did and how you checked it."""


def text_protocol_prompt(base: str, tools: Sequence[ToolSpec]) -> str:
    """The system prompt for the text ReAct protocol: base text, tools, and the format."""
    listing = "\n".join(
        f"- {t.name}: {t.description}\n  arguments: {canonical_json(t.parameters)}"
        for t in sorted(tools, key=lambda t: t.name)
    )
    return f"{base}\n\nTools:\n{listing}\n\n{PROTOCOL_INSTRUCTIONS}"
