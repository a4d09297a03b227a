"""What the readers of agents' own session logs (Claude Code transcripts, Codex rollouts)
share: the log's lines parsed one by one, and a step being read back from them."""

from __future__ import annotations

from dataclasses import dataclass, field

from contextengine.errors import TrajectoryError
from contextengine.untrusted import JSONObject, JSONValue, parse_json


def typed_lines(text: str, name: str, kind: str) -> list[JSONObject]:
    """The non-blank lines of ``text`` parsed, each an object with a string ``type``;
    ``TrajectoryError`` names the file ``name`` and the line that is not (``kind``: what
    the file was read as, for the message)."""
    lines: list[JSONObject] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = parse_json(line)
        except ValueError as exc:
            raise TrajectoryError(f"{name}: line {number}: not valid JSON ({exc})") from None
        if not (isinstance(value, dict) and isinstance(value.get("type"), str)):
            raise TrajectoryError(
                f"{name}: line {number}: not a {kind} line (an object with a 'type')"
            )
        lines.append(value)
    return lines


@dataclass
class StepDraft:
    """A step being read: one assistant reply and the results of its calls."""

    model: str
    user: str | None
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[JSONValue] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    is_error: bool = False

    def as_json(self) -> JSONObject:
        """The step in the trajectory format."""
        step: JSONObject = {
            "assistant": "\n\n".join(self.text),
            "reasoning": "\n\n".join(self.reasoning),
            "tool_calls": self.calls,
            "observation": "\n\n".join(self.results),
            "is_error": self.is_error,
        }
        if self.user is not None:
            step["user"] = self.user
        return step

    def holds_anything(self) -> bool:
        """Whether the reply said, thought or called anything (or came with a message)."""
        return bool(self.text or self.calls or self.reasoning or self.user)
