"""Claude Code session transcripts read as trajectories, so ``contextengine replay`` measures
a user's own sessions (``~/.claude/projects/<project>/<session>.jsonl``).

A transcript is one JSON object a line. ``user`` and ``assistant`` lines carry an Anthropic
Messages ``message``; Claude Code writes a reply one content block a line, every line with the
reply's ``message.id``: those lines are one step (its text, thinking and tool calls). A
``tool_result`` block of a later user line is the observation of the step whose ``tool_use``
it answers (``is_error`` as Claude Code flagged it). The first human text is the task; later
human text (a new request, a compaction summary) is the next step's ``user`` message. Lines of
other types (summaries, file snapshots, progress, queue operations, system notes) and replies
of the ``<synthetic>`` model are left out, and so are a main session's sub-agent lines
(``isSidechain``); a sub-agent's own transcript, all sidechain, is read as it is. Claude Code
does not log its system prompt or its tools' schemas, so the trajectory has neither; each
reply's usage (the API's, prompt and tools included) is summed as ``recorded_usage``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from contextengine.measure.recorded_session import (
    StepDraft,
    part_text,
    part_texts,
    trajectory_of,
    typed_lines,
)
from contextengine.untrusted import JSONObject, JSONValue

SYNTHETIC_MODEL = "<synthetic>"
_USAGE_KEYS = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
)
_ID_KEYS = ("sessionId", "uuid", "leafUuid", "messageId")


def is_transcript_line(value: Any) -> bool:
    """Whether ``value`` (a parsed line) looks like a line of a Claude Code transcript."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and "steps" not in value
        and any(key in value for key in _ID_KEYS)
    )


def transcript_as_trajectory(text: str, name: str) -> JSONObject:
    """The trajectory (format of ``measure.trajectory``) of the Claude Code transcript
    ``text``; ``TrajectoryError`` names the file and line of a malformed one."""
    entries = _entries(text, name)
    sidechain = not any(not e.get("isSidechain") for e in entries)
    reader = _Reader()
    for entry in entries:
        if bool(entry.get("isSidechain")) == sidechain:
            reader.read(entry)
    usage = _recorded_usage(reader.usage_of_reply.values())
    return trajectory_of(
        name, "Claude Code transcript", reader.steps, task=reader.task or "", usage=usage
    )


def _recorded_usage(usages: Iterable[JSONValue]) -> Counter[str]:
    """The usage of the replies, from each reply's Anthropic usage (``input_tokens`` is the
    uncached part there)."""
    total: Counter[str] = Counter()
    for usage in usages:
        if not isinstance(usage, dict):
            continue
        parts = {key: usage.get(key) for key in _USAGE_KEYS}
        counts = {key: value if isinstance(value, int) else 0 for key, value in parts.items()}
        total["requests"] += 1
        total["input_tokens"] += sum(counts[key] for key in _USAGE_KEYS[:3])
        total["cached_tokens"] += counts["cache_read_input_tokens"]
        total["cache_write_tokens"] += counts["cache_creation_input_tokens"]
        total["output_tokens"] += counts["output_tokens"]
    return total


def _entries(text: str, name: str) -> list[JSONObject]:
    """The user and assistant lines of the transcript, parsed."""
    return [
        entry
        for entry in typed_lines(text, name, "Claude Code transcript")
        if entry["type"] in ("user", "assistant") and isinstance(entry.get("message"), dict)
    ]


class _Reader:
    """Turns transcript lines, in order, into steps and the task."""

    def __init__(self) -> None:
        self.task: str | None = None
        self.steps: list[StepDraft] = []
        self._pending_user: list[str] = []
        self._reply_id: object = None
        self._step_of_call: dict[str, StepDraft] = {}
        self.usage_of_reply: dict[str, JSONValue] = {}  # the last line's, of each reply

    def read(self, entry: JSONObject) -> None:
        """Take one user or assistant line."""
        message = entry["message"]
        if not isinstance(message, dict):
            return
        content = message.get("content")
        blocks: list[JSONObject] = (
            [{"type": "text", "text": content}]
            if isinstance(content, str)
            else [b for b in content if isinstance(b, dict)]
            if isinstance(content, list)
            else []
        )
        if entry["type"] == "assistant":
            self._reply(message, blocks)
        else:
            self._user(blocks, meta=bool(entry.get("isMeta")))

    def _reply(self, message: JSONObject, blocks: list[JSONObject]) -> None:
        """Start a step for a new reply id, or add the line's blocks to the current one."""
        model = str(message.get("model") or "")
        if model == SYNTHETIC_MODEL:
            return
        reply_id = message.get("id")
        if isinstance(message.get("usage"), dict) and reply_id is not None:
            self.usage_of_reply[str(reply_id)] = message["usage"]
        if reply_id is None or reply_id != self._reply_id or not self.steps:
            user = "\n\n".join(self._pending_user) if self._pending_user else None
            self._pending_user = []
            self.steps.append(StepDraft(model, user))
            self._reply_id = reply_id
        step = self.steps[-1]
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and str(block.get("text", "")).strip():
                step.text.append(str(block["text"]))
            elif kind == "thinking" and block.get("thinking"):
                step.reasoning.append(str(block["thinking"]))
            elif kind == "tool_use" and isinstance(block.get("name"), str):
                call_id = str(block.get("id") or f"call_{len(self._step_of_call)}")
                arguments = block.get("input")
                step.calls.append(
                    {
                        "id": call_id,
                        "name": block["name"],
                        "arguments": arguments if isinstance(arguments, dict) else {},
                    }
                )
                self._step_of_call[call_id] = step

    def _user(self, blocks: list[JSONObject], *, meta: bool) -> None:
        """Attach tool results to their calls' steps; keep human text as the task or for
        the next step."""
        human: list[str] = []
        for block in blocks:
            if block.get("type") == "tool_result":
                step = self._step_of_call.get(str(block.get("tool_use_id")))
                if step is not None:
                    step.results.append(_text(block.get("content")))
                    step.is_error = step.is_error or block.get("is_error") is True
            elif (text := part_text(block)) is not None:
                human.append(text)
        if not human:
            return
        said = "\n".join(human)
        if self.task is None and not meta:
            self.task = said
        else:
            self._pending_user.append(said)
        self._reply_id = None


def _text(content: JSONValue) -> str:
    """A tool result's content as text (a string, or text and image blocks)."""
    if isinstance(content, str | list):
        return "\n".join(part_texts(content))
    return "" if content is None else str(content)
