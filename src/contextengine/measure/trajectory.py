"""Recorded agent runs (``bench/TRAJECTORY_FORMAT.md``, or an agent's own session log: a
Claude Code transcript, ``measure.claude_code``; a Codex rollout, ``measure.codex``; a
Gemini CLI chat recording, ``measure.gemini_cli``), loaded and checked.

A trajectory is a task, a system prompt, the tools the run declared, and its steps: each
an assistant turn (text and tool calls) and the observation that followed. Unknown keys
are ignored; ``null`` counts as absent. A run has at least one step; JSON nested deeper than
100 levels, ``NaN`` and ``Infinity`` are refused. A malformed file raises ``TrajectoryError`` with
one line naming the file and the field (``steps[3].tool_calls[0].name``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from contextengine.agent.text_protocol import parse_text_reply
from contextengine.canonical import canonical_json
from contextengine.errors import ConfigError, TrajectoryError
from contextengine.measure.claude_code import is_transcript_line, transcript_as_trajectory
from contextengine.measure.codex import is_rollout_line, rollout_as_trajectory
from contextengine.measure.gemini_cli import (
    is_gemini_recording,
    recording_as_trajectory,
    recording_lines_as_trajectory,
)
from contextengine.toolkit.spec import ToolSpec
from contextengine.untrusted import JSONObject, parse_json


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


class RecordedCall(_Model):
    """One recorded tool call: a tool name and its arguments (an object, or raw text)."""

    name: StrictStr = Field(min_length=1)
    id: Any = None
    # Any, not JsonValue: pydantic puts a union member's name in error locations, and only
    # "dict[str,any]" is left out of the field path below
    arguments: dict[str, Any] | StrictStr = Field(default_factory=dict)

    @property
    def arguments_json(self) -> str:
        """Canonical JSON of object arguments; raw text as recorded otherwise."""
        return self.arguments if isinstance(self.arguments, str) else canonical_json(self.arguments)

    @property
    def argument_values(self) -> JSONObject:
        """The arguments as an object (empty when they were recorded as text)."""
        return self.arguments if isinstance(self.arguments, dict) else {}


class RecordedStep(_Model):
    """One assistant turn and the observation that followed it."""

    assistant: StrictStr = ""
    tool_calls: tuple[RecordedCall, ...] = ()
    observation: StrictStr = ""
    is_error: StrictBool = False
    user: StrictStr | None = None
    reasoning: StrictStr = ""


class RecordedUsage(_Model):
    """The tokens the recorded agent itself was billed for, summed over its model calls, as
    its session log says (system prompt and tool schemas included, which the log may lack):
    ``input_tokens`` all of a request's input, ``cached_tokens`` and ``cache_write_tokens``
    the parts of it read from and written to the prompt cache."""

    requests: int = Field(ge=0)
    input_tokens: int = Field(ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)

    @property
    def uncached_tokens(self) -> int:
        """Input neither read from nor written to the cache."""
        return max(0, self.input_tokens - self.cached_tokens - self.cache_write_tokens)


class Trajectory(_Model):
    """A recorded run: what the model was given and every step it took."""

    source: StrictStr = ""
    license: StrictStr = ""
    model: StrictStr = ""
    task: StrictStr
    system: StrictStr = ""
    tools: tuple[dict[str, JsonValue], ...] = ()
    steps: tuple[RecordedStep, ...] = Field(min_length=1)
    recorded_usage: RecordedUsage | None = None

    @field_validator("tools")
    @classmethod
    def _tools_have_names(
        cls, tools: tuple[dict[str, JsonValue], ...]
    ) -> tuple[dict[str, JsonValue], ...]:
        seen: set[str] = set()
        for k, tool in enumerate(tools):
            try:
                name = ToolSpec.coerce(tool).name
            except ConfigError:
                raise ValueError(f"tools[{k}]: a tool needs a 'name'") from None
            if name in seen:
                raise ValueError(f"tools[{k}]: duplicate tool name {name!r}")
            seen.add(name)
        return tools

    @cached_property
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """The declared tools, sorted by name."""
        return tuple(sorted((ToolSpec.coerce(t) for t in self.tools), key=lambda t: t.name))

    @cached_property
    def digest(self) -> str:
        """A short stable hash of the content (names the replay session)."""
        return hashlib.sha256(canonical_json(self.model_dump()).encode()).hexdigest()[:12]

    @property
    def native_calls(self) -> bool:
        """Whether the run used native tool calling, not text: it declared tools, its calls
        have ids, or a step's calls are not written in its text (a recording whose converter
        kept neither schemas nor ids; a text-protocol request shows only the text)."""
        return (
            bool(self.tools)
            or any(c.id for s in self.steps for c in s.tool_calls)
            or any(s.tool_calls and written_action(s.assistant) is None for s in self.steps)
        )


_SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell)[ \t]*\n(.*?)\n?```", re.S)


def written_action(text: str) -> tuple[str, str] | None:
    """``(name, arguments_json)`` of the action a text-protocol reply writes out: an
    ``Action:`` line, else a shell code block (a ``bash`` call); ``None`` when it has none."""
    parsed = parse_text_reply(text).action
    if parsed is not None:
        return parsed.name, parsed.arguments_json
    block = _SHELL_BLOCK.search(text)
    if block is not None:
        return "bash", canonical_json({"command": block.group(1)})
    return None


def load_trajectory(path: str | Path) -> Trajectory:
    """Read and check a trajectory file; ``TrajectoryError`` names the file and field."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TrajectoryError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise TrajectoryError(f"{path}: not UTF-8 text") from None
    if not text.strip():
        raise TrajectoryError(f"{path}: empty file (no trajectory in it)")
    first, _, rest = text.strip().partition("\n")
    try:
        head: Any = parse_json(first)
    except ValueError:
        head = _UNREAD
    if (reader := _session_log_reader(head, several_lines=bool(rest))) is not None:
        return parse_trajectory(reader(text, str(path)), str(path))
    data = head if not rest and head is not _UNREAD else _whole_document(text, path)
    if is_gemini_recording(data):
        data = recording_as_trajectory(data, str(path))
    return parse_trajectory(data, str(path))


_UNREAD = object()  # a first line that is not JSON on its own


def _whole_document(text: str, path: Path) -> Any:
    """``text`` parsed as one JSON document; ``TrajectoryError`` says where it is not."""
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise TrajectoryError(
            f"{path}: not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
        ) from None
    except ValueError as exc:
        raise TrajectoryError(f"{path}: not valid JSON ({exc})") from None


def _session_log_reader(
    head: object, *, several_lines: bool
) -> Callable[[str, str], JSONObject] | None:
    """The reader of a file whose first line, parsed, is ``head`` when the file is an
    agent's own session log in JSON Lines, of one line or more: a Claude Code transcript, a
    Codex rollout or (several lines) a Gemini CLI recording; a recording on one line is a
    whole recording, and a trajectory, even on one line, is none of these."""
    if is_transcript_line(head):
        return transcript_as_trajectory
    if is_rollout_line(head):
        return rollout_as_trajectory
    if several_lines and is_gemini_recording(head):
        return recording_lines_as_trajectory
    return None


def parse_trajectory(data: Any, name: str = "<trajectory>") -> Trajectory:
    """Check parsed JSON ``data`` against the trajectory format."""
    if not isinstance(data, dict):
        raise TrajectoryError(f"{name}: expected a JSON object at the top level")
    try:
        canonical_json(data)
    except (TypeError, ValueError) as exc:
        raise TrajectoryError(f"{name}: {str(exc).removeprefix('canonical_json: ')}") from None
    try:
        return Trajectory.model_validate(data)
    except ValidationError as exc:
        raise TrajectoryError(f"{name}: {_describe(exc)}") from None


_EXPECTED = {
    "string_type": "expected a string",
    "string_too_short": "expected a non-empty string",
    "bool_type": "expected true or false",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "tuple_type": "expected a list",
    "list_type": "expected a list",
    "missing": "required field is missing",
    "too_short": "expected at least one item",
}


def _describe(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    message = str(err["msg"]).removeprefix("Value error, ")
    if message.startswith("tools["):
        return message
    # a union member's type name ("str", "dict[str,any]") is part of pydantic's location
    path = [p for p in err["loc"] if p not in ("str", "dict[str,any]")]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return f"{where or '(top level)'}: {_EXPECTED.get(err['type'], message)}"
