"""The text ReAct protocol (R7.7) for models without native tool calling.

The model writes ``Thought: …`` then either ``Action: tool_name[{json}]`` or
``Action: Finish[answer]``. Parsing tolerates what real models produce: code fences,
``tool_name({json})`` / ``tool_name {json}``, LangChain's ``Action:`` + ``Action Input:``
lines, and ``Final Answer:``. A reply that parses to nothing is reported, not guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextengine.canonical import canonical_json
from contextengine.untrusted import parse_json_prefix

FINISH_NAMES = {"finish", "final_answer", "final"}

_ACTION = re.compile(
    r"^[ \t]*\**Action\**[ \t]*:[ \t]*\**[ \t]*`?(?P<name>[A-Za-z_][\w.-]*)`?[ \t]*(?P<rest>.*)$",
    re.M,
)
_ACTION_INPUT = re.compile(r"^[ \t]*\**Action Input\**[ \t]*:\s*(?P<rest>.*)$", re.M | re.S)
_FINAL_ANSWER = re.compile(r"^[ \t]*\**Final Answer\**[ \t]*:\s*(?P<answer>.*)$", re.M | re.S)
_FENCE = re.compile(r"^```[\w-]*\s*\n?|\n?```\s*$")

PROTOCOL_INSTRUCTIONS = """\
Answer in this format, one action per reply:

Thought: what you know and what you will do next
Action: tool_name[{"argument": "value"}]

The arguments are one JSON object. You will then see the tool's output as an Observation.
When the task is done, reply with:

Thought: why the task is done
Action: Finish[your final answer to the user]"""


@dataclass(frozen=True)
class ParsedAction:
    """A tool call parsed from text (``arguments_json`` canonical, or raw when invalid)."""

    name: str
    arguments_json: str


@dataclass(frozen=True)
class ParsedReply:
    """What a text reply means: a tool call, a final answer, or nothing usable."""

    action: ParsedAction | None = None
    final_answer: str | None = None
    problem: str | None = None


def parse_text_reply(text: str) -> ParsedReply:
    """Parse one reply of the text protocol."""
    match = _ACTION.search(text)
    if match is None:
        final = _FINAL_ANSWER.search(text)
        if final:
            return ParsedReply(final_answer=final.group("answer").strip())
        return ParsedReply(
            problem="no 'Action:' line found; reply with 'Action: tool[{json}]' or 'Action: Finish[answer]'"
        )
    name = match.group("name")
    rest = text[match.start("rest") :]
    if name.lower() in FINISH_NAMES:
        return ParsedReply(
            final_answer=_bracketed(rest) if rest.lstrip().startswith("[") else rest.strip()
        )
    if not match.group("rest").strip().strip("`"):
        following = _ACTION_INPUT.search(text, match.end())
        rest = following.group("rest") if following else ""
    raw = _strip_fences(_bracketed(rest) if rest.lstrip().startswith(("[", "(")) else rest.strip())
    return ParsedReply(action=ParsedAction(name, _arguments_json(raw)))


def _arguments_json(raw: str) -> str:
    """Canonical JSON of the first JSON object in ``raw``; the raw text when there is none."""
    if not raw:
        return "{}"
    start = raw.find("{")
    if start != 0:
        return raw
    try:
        value, _end = parse_json_prefix(raw)
        return canonical_json(value) if isinstance(value, dict) else raw
    except ValueError:
        return raw


def _bracketed(text: str) -> str:
    """Content between the first opening bracket and its matching closer (JSON-aware)."""
    text = text.lstrip()
    opener = text[0]
    closer = {"[": "]", "(": ")"}[opener]
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            escaped = ch == "\\" and not escaped
            if ch == '"' and not escaped:
                in_string = False
            elif ch != "\\":
                escaped = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth == 0 and ch == closer:
                return text[1:i].strip()
    return text[1:].rstrip(closer).strip()


def _strip_fences(text: str) -> str:
    return _FENCE.sub("", text.strip()).strip()
