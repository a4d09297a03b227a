"""Codex CLI session rollouts read as trajectories, so ``contextengine replay`` measures a
user's own Codex sessions (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

A rollout is one JSON object a line, ``{"timestamp", "type", "payload"}``. Its
``response_item`` lines are the Responses API items Codex sent to the model and got back,
in order: a reply is the output items (reasoning, assistant text, tool calls) between two
input items (a user or developer message, a call's output), and is one step; a call's
output is the observation of the step that made the call. The user messages before the
first reply (Codex's environment context, the project's AGENTS.md, the request) are the
task; the session's base instructions and the developer messages before the first reply
are the system prompt; later messages, and the summary a compaction left
(``compacted``), are the next step's ``user`` message. ``turn_context`` names the model;
``event_msg`` lines repeat what the items hold and are left out, and so are Codex's own
snapshots, but for the token counts Codex took from each model call's usage, summed as the
run's ``recorded_usage``. A rollout does not say whether a call failed: a non-zero exit code in the
output's header (``Exit code: 1``, ``Process exited with code 1``) or metadata, or an
output that opens with an error, marks the step as an error. Codex does not log its
tools' schemas, so the trajectory has none.
"""

from __future__ import annotations

import re
from collections import Counter

from contextengine.measure.recorded_session import (
    StepDraft,
    part_texts,
    trajectory_of,
    typed_lines,
)
from contextengine.untrusted import JSONObject, JSONValue, parse_json

ROLLOUT_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_CALLS = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"}
)
_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "mcp_tool_call_output",
        "tool_search_output",
    }
)
_USAGE_KEYS = (
    ("input_tokens", "input_tokens"),
    ("cached_input_tokens", "cached_tokens"),
    ("output_tokens", "output_tokens"),
)
_CALL_NAMES = {"local_shell_call": "local_shell", "web_search_call": "web_search"}
_EXIT = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)\s*$", re.MULTILINE)
_HEADER_LINES = 6  # an exec output's header (chunk id, wall time, exit code, ...) ends by then
_FAILURE = re.compile(r"^\s*(?:error\b|failed\b|[\w.-]+(?: [\w.-]+){0,3} failed\b)", re.IGNORECASE)


def is_rollout_line(value: object) -> bool:
    """Whether ``value`` (a parsed line) looks like a line of a Codex rollout."""
    return (
        isinstance(value, dict)
        and value.get("type") in ROLLOUT_TYPES
        and isinstance(value.get("payload"), dict)
    )


def rollout_as_trajectory(text: str, name: str) -> JSONObject:
    """The trajectory (format of ``measure.trajectory``) of the Codex rollout ``text``;
    ``TrajectoryError`` names the file and line of a malformed one."""
    reader = _Reader()
    for line in typed_lines(text, name, "Codex rollout"):
        kind, payload = line.get("type"), line.get("payload")
        if isinstance(kind, str) and isinstance(payload, dict):
            reader.read(kind, payload)
    return trajectory_of(
        name,
        "Codex rollout",
        reader.steps,
        task="\n\n".join(reader.task),
        system="\n\n".join(reader.system),
        usage=reader.usage,
    )


class _Reader:
    """Turns rollout lines, in order, into steps, the task and the system prompt."""

    def __init__(self) -> None:
        self.system: list[str] = []
        self.task: list[str] = []
        self.steps: list[StepDraft] = []
        self._model = ""
        self._pending: list[str] = []
        self._input_since_reply = True
        self._step_of_call: dict[str, StepDraft] = {}
        self._last_total: JSONValue = None
        self.usage: Counter[str] = Counter()

    def read(self, kind: str, payload: JSONObject) -> None:
        """Take one line's ``type`` and ``payload``."""
        model, message = payload.get("model"), payload.get("message")
        if kind in ("session_meta", "turn_context") and isinstance(model, str):
            self._model = model
        if kind == "session_meta":
            self._session_meta(payload)
        elif kind == "compacted" and isinstance(message, str):
            self._said(message, before_any_reply=self.task)
        elif kind == "response_item":
            self._item(payload)
        elif kind == "event_msg" and payload.get("type") == "token_count":
            self._token_count(payload.get("info"))

    def _token_count(self, info: JSONValue) -> None:
        """Add a model call's usage; Codex repeats the last count between calls, unchanged."""
        if not isinstance(info, dict) or info.get("total_token_usage") == self._last_total:
            return
        self._last_total = info.get("total_token_usage")
        call = info.get("last_token_usage")
        if isinstance(call, dict):
            self.usage["requests"] += 1
            for key, name in _USAGE_KEYS:
                value = call.get(key)
                self.usage[name] += value if isinstance(value, int) else 0

    def _session_meta(self, payload: JSONObject) -> None:
        base = payload.get("base_instructions")
        text = base.get("text") if isinstance(base, dict) else payload.get("instructions")
        if isinstance(text, str) and text.strip():
            self.system.append(text)

    def _item(self, item: JSONObject) -> None:
        kind = item.get("type")
        if kind == "message":
            self._message(item)
        elif kind == "reasoning":
            texts = part_texts(item.get("summary")) + part_texts(item.get("content"))
            if texts:
                self._reply().reasoning.append("\n\n".join(texts))
        elif kind in _CALLS:
            self._call(str(kind), item)
        elif kind in _OUTPUTS:
            self._output(item)

    def _message(self, item: JSONObject) -> None:
        role = item.get("role")
        text = "\n".join(part_texts(item.get("content")))
        if role == "assistant":
            if text.strip():
                self._reply().text.append(text)
        elif role in ("user", "developer", "system") and text.strip():
            self._said(text, before_any_reply=self.task if role == "user" else self.system)

    def _said(self, text: str, *, before_any_reply: list[str]) -> None:
        """A message to the model: part of the task or system prompt before the first
        reply, else the next step's user message."""
        (before_any_reply if not self.steps else self._pending).append(text)
        self._input_since_reply = True

    def _reply(self) -> StepDraft:
        """The step an output item belongs to: a new one after any input item."""
        if self._input_since_reply or not self.steps:
            user = "\n\n".join(self._pending) if self._pending else None
            self._pending = []
            self.steps.append(StepDraft(self._model, user))
            self._input_since_reply = False
        return self.steps[-1]

    def _call(self, kind: str, item: JSONObject) -> None:
        step = self._reply()
        call_id = str(item.get("call_id") or item.get("id") or f"call_{len(self._step_of_call)}")
        step.calls.append(
            {
                "id": call_id,
                "name": str(item.get("name") or _CALL_NAMES.get(kind, kind)),
                "arguments": _arguments(item),
            }
        )
        self._step_of_call[call_id] = step

    def _output(self, item: JSONObject) -> None:
        self._input_since_reply = True
        step = self._step_of_call.get(str(item.get("call_id")))
        if step is None:
            return
        output = item.get("output")
        text = _output_text(output)
        step.results.append(text)
        step.is_error = step.is_error or _failed(output, text)


def _arguments(item: JSONObject) -> JSONValue:
    """A call's arguments: a function call's JSON object (its raw text when it is not
    one), a custom tool's free-form input, a shell or search call's action."""
    if isinstance(item.get("input"), str):
        return item["input"]
    raw = item.get("arguments")
    if isinstance(raw, str):
        try:
            value = parse_json(raw)
        except ValueError:
            return raw
        return value if isinstance(value, dict) else raw
    if isinstance(raw, dict):
        return raw
    action = item.get("action")
    return action if isinstance(action, dict) else {}


def _output_text(output: JSONValue) -> str:
    """A call's output as the model read it: a string as is, content parts joined, an
    MCP result's content."""
    if isinstance(output, dict):
        output = output.get("content", output.get("output"))
    return "\n".join(part_texts(output))


def _failed(output: object, text: str) -> bool:
    """Whether a call's output says it failed: a non-zero exit code in its header or
    metadata, an MCP result flagged as an error, or an opening error line."""
    if isinstance(output, dict) and (
        output.get("isError") is True or output.get("success") is False
    ):
        return True
    header = "\n".join(text.splitlines()[:_HEADER_LINES])
    if exit_code := _EXIT.search(header):
        return exit_code.group(1) != "0"
    if text.startswith("{"):
        try:
            value = parse_json(text)
        except ValueError:
            value = None
        metadata = value.get("metadata") if isinstance(value, dict) else None
        if isinstance(metadata, dict) and isinstance(metadata.get("exit_code"), int):
            return bool(metadata["exit_code"] != 0)
    return bool(_FAILURE.match(text))
