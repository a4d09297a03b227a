"""What the readers of agents' own session logs (Claude Code transcripts, Codex rollouts,
Gemini CLI recordings) share: the log's lines parsed one by one, the text of a message's
content parts, a step being read back from them, and the trajectory the steps make."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from contextengine.errors import TrajectoryError
from contextengine.untrusted import JSONObject, JSONValue, parse_json


def json_lines(text: str, name: str) -> Iterator[tuple[int, JSONValue]]:
    """Each non-blank line of ``text`` parsed, with its number; ``TrajectoryError`` names
    the file ``name`` and the first line that is not JSON."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, parse_json(line)
        except ValueError as exc:
            raise TrajectoryError(f"{name}: line {number}: not valid JSON ({exc})") from None


def part_text(part: JSONValue) -> str | None:
    """A content part's text: a string as it is, a part's ``text``, ``[image]`` for an
    image part, ``None`` for any other part."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None
    if isinstance(text := part.get("text"), str):
        return text
    return "[image]" if str(part.get("type", "")).endswith("image") else None


def part_texts(content: JSONValue) -> list[str]:
    """The texts of ``content``: a string, or a list of content parts (``part_text``)."""
    if isinstance(content, str):
        return [content]
    parts = content if isinstance(content, list) else []
    return [text for part in parts if (text := part_text(part)) is not None]


def typed_lines(text: str, name: str, kind: str) -> list[JSONObject]:
    """The non-blank lines of ``text`` parsed, each an object with a string ``type``;
    ``TrajectoryError`` names the file ``name`` and the line that is not (``kind``: what
    the file was read as, for the message)."""
    lines: list[JSONObject] = []
    for number, value in json_lines(text, name):
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


def trajectory_of(
    name: str,
    kind: str,
    drafts: Sequence[StepDraft],
    *,
    task: str,
    system: str = "",
    usage: Counter[str] | None = None,
) -> JSONObject:
    """The trajectory (format of ``measure.trajectory``) of the steps read from the log
    ``name`` (a ``kind``), the model the most steps were taken with, and the usage the log
    recorded when it recorded any; ``TrajectoryError`` when no step holds anything."""
    steps = [s for s in drafts if s.holds_anything()]
    if not steps:
        raise TrajectoryError(f"{name}: no assistant reply in this {kind}")
    models = Counter(s.model for s in steps if s.model)
    return {
        "source": name,
        "model": models.most_common(1)[0][0] if models else "",
        "task": task,
        "system": system,
        "steps": [s.as_json() for s in steps],
        **({"recorded_usage": dict(usage)} if usage else {}),
    }
