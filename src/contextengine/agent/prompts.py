"""The agent's default system prompt (L1): fixed text, no dynamic values."""

from __future__ import annotations

from collections.abc import Sequence

from contextengine.agent.text_protocol import PROTOCOL_INSTRUCTIONS
from contextengine.canonical import canonical_json
from contextengine.tools.spec import ToolSpec

DEFAULT_SYSTEM_PROMPT = """\
You are a careful software agent working in one workspace folder; paths are relative to it.
- Plan with todo_write first and keep the plan current; it is shown at the end of every request.
- Your memory files are task_plan.md, findings.md (add to it with memory_finding_add) and \
progress.md (kept for you); read them when you lose track.
- Read before you edit; make small changes and check them with shell_exec.
- Errors are shown verbatim: read them and change your approach instead of repeating a call.
- Large outputs are saved to files: the observation names the file to read.
- When done, answer with a short summary of what you did and how you checked it."""


def text_protocol_prompt(base: str, tools: Sequence[ToolSpec]) -> str:
    """The system prompt for the text ReAct protocol: base text, tools, and the format."""
    listing = "\n".join(
        f"- {t.name}: {t.description}\n  arguments: {canonical_json(t.parameters)}"
        for t in sorted(tools, key=lambda t: t.name)
    )
    return f"{base}\n\nTools:\n{listing}\n\n{PROTOCOL_INSTRUCTIONS}"
