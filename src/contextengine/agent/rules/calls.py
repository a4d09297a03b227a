"""How the progress log and lessons show a tool call: its action, arguments and error."""

from __future__ import annotations

from contextengine.canonical import canonical_json
from contextengine.text import clip, one_line
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.classify import error_tail
from contextengine.toolkit.traits import ToolTraits
from contextengine.types import ToolCall
from contextengine.untrusted import JSONObject

ARGUMENTS_CHARS = 300
RESULT_CHARS = 200
ERROR_LINES = 20
ERROR_CHARS = 2000


def error_class_of(outcome: ToolOutcome, error_class: str | None) -> str:
    """The class a failed call counts under: the classified one, else the tool's code."""
    return error_class or (outcome.error.code if outcome.error else "error")


def action_of(traits: ToolTraits, arguments: JSONObject) -> str:
    """What a call acts on: its declared action argument (whitespace folded), else its
    path or pattern."""
    if traits.action_key:
        return " ".join(str(arguments.get(traits.action_key, "")).split())
    target = arguments.get("path") or arguments.get("pattern")
    return str(target) if target else ""


def describe(call: ToolCall, traits: ToolTraits, arguments: JSONObject) -> str:
    """The progress line of a call: its action argument, else its arguments as JSON."""
    key = traits.action_key
    if key and isinstance(value := arguments.get(key), str):
        return f"**{key.capitalize()}**: `{clip(one_line(value), ARGUMENTS_CHARS)}`"
    shown = canonical_json(arguments) if arguments else call.arguments_json
    return f"**Arguments**: `{clip(shown, ARGUMENTS_CHARS)}`"


def error_text(outcome: ToolOutcome) -> str:
    """A failure's message: its last lines, capped from the front."""
    text = outcome.error.message if outcome.error else outcome.text
    return error_tail(text, ERROR_LINES, chars=ERROR_CHARS)
