"""Gemini CLI chat recordings read as trajectories, so ``contextengine replay`` measures a
user's own Gemini CLI sessions (``~/.gemini/tmp/<project hash>/chats/session-*.json``).

A recording is one JSON object, ``sessionId``, ``projectHash`` and ``messages``; newer
versions write it as JSON Lines instead: that object's fields on the first line, then one
message a line, a message written again under the same ``id`` once its tool calls finished
(in its first place, with the last copy's content), ``$set`` lines that update the fields
and ``$rewindTo`` lines that drop a message and every later one. Each ``gemini``
message is one reply and one step: its text, its thoughts (``subject: description``) and
its ``toolCalls``, whose ``result`` parts (a ``functionResponse``'s output or error) are the
observation; a call whose ``status`` is ``error``, or whose response is an error, marks the
step as an error. The first ``user`` message is the task and later ones the next step's user
message; ``info``, ``warning`` and ``error`` messages are the CLI's notices to the user, not
sent to the model, and are left out. Gemini CLI does not record its system prompt or its
tools' schemas, so the trajectory has neither; the replies' ``tokens`` (the API's counts, prompt
and tools included) are summed as ``recorded_usage``.
"""

from __future__ import annotations

from collections import Counter

from contextengine.canonical import canonical_json
from contextengine.errors import TrajectoryError
from contextengine.measure.recorded_session import (
    StepDraft,
    json_lines,
    part_texts,
    trajectory_of,
)
from contextengine.untrusted import JSONObject, JSONValue

_SESSION_KEYS = ("sessionId", "projectHash")
_TOKENS = ("input", "cached", "output", "thoughts")


def is_gemini_recording(value: object) -> bool:
    """Whether ``value`` (a parsed file, or the first line of one) is a Gemini CLI chat
    recording's head: its session id and project hash, and no trajectory ``steps``."""
    return (
        isinstance(value, dict)
        and all(isinstance(value.get(key), str) for key in _SESSION_KEYS)
        and "steps" not in value
        and "type" not in value
    )


def recording_lines_as_trajectory(text: str, name: str) -> JSONObject:
    """The trajectory of a recording written as JSON Lines, read as Gemini CLI reads it back:
    a message written again keeps its first place and takes the last copy's content, a
    ``$rewindTo`` drops that message and every later one, a ``$set`` of ``messages`` starts
    them over, and the head line may hold messages too."""
    messages: dict[str, JSONObject] = {}
    for number, value in json_lines(text, name):
        if not isinstance(value, dict):
            raise TrajectoryError(f"{name}: line {number}: not a Gemini CLI recording line")
        _apply(messages, value)
    return recording_as_trajectory({"messages": list(messages.values())}, name)


def _apply(messages: dict[str, JSONObject], record: JSONObject) -> None:
    """Apply one line of a JSON Lines recording to ``messages`` (by id, in order)."""
    rewind, update = record.get("$rewindTo"), record.get("$set")
    if isinstance(rewind, str):
        ids = list(messages)
        for gone in ids[ids.index(rewind) :] if rewind in messages else ids:
            del messages[gone]
    elif isinstance(record.get("id"), str):
        messages[str(record["id"])] = record
    else:
        listed = update.get("messages") if isinstance(update, dict) else record.get("messages")
        if isinstance(update, dict) and isinstance(listed, list):
            messages.clear()
        for message in listed if isinstance(listed, list) else []:
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                messages[str(message["id"])] = message


def recording_as_trajectory(data: JSONObject, name: str) -> JSONObject:
    """The trajectory (format of ``measure.trajectory``) of the recording ``data``."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise TrajectoryError(f"{name}: messages: expected a list (a Gemini CLI recording)")
    task: str | None = None
    pending: list[str] = []
    steps: list[StepDraft] = []
    usage: Counter[str] = Counter()
    for message in messages:
        if not isinstance(message, dict):
            continue
        kind, text = message.get("type"), _text(message.get("content"))
        if kind == "user" and text.strip():
            if task is None:
                task = text
            else:
                pending.append(text)
        elif kind == "gemini":
            _add_usage(usage, message.get("tokens"))
            step = _step(message, text, "\n\n".join(pending) if pending else None)
            if step.holds_anything():
                steps.append(step)
                pending = []
    return trajectory_of(name, "Gemini CLI recording", steps, task=task or "", usage=usage)


def _add_usage(usage: Counter[str], tokens: JSONValue) -> None:
    """Add a reply's token counts (``input`` holds the ``cached`` part; ``thoughts`` are
    output) to ``usage``."""
    if not isinstance(tokens, dict):
        return
    counts = {key: value if isinstance(value := tokens.get(key), int) else 0 for key in _TOKENS}
    usage["requests"] += 1
    usage["input_tokens"] += counts["input"]
    usage["cached_tokens"] += min(counts["cached"], counts["input"])
    usage["output_tokens"] += counts["output"] + counts["thoughts"]


def _step(message: JSONObject, text: str, user: str | None) -> StepDraft:
    """One ``gemini`` message as a step: its text, thoughts, calls and their results."""
    step = StepDraft(str(message.get("model") or ""), user)
    if text.strip():
        step.text.append(text)
    thoughts = message.get("thoughts")
    for thought in thoughts if isinstance(thoughts, list) else []:
        if isinstance(thought, dict):
            said = ": ".join(
                str(thought[key]) for key in ("subject", "description") if thought.get(key)
            )
            if said:
                step.reasoning.append(said)
    calls = message.get("toolCalls")
    for k, call in enumerate(calls if isinstance(calls, list) else []):
        if not (isinstance(call, dict) and isinstance(call.get("name"), str)):
            continue
        arguments = call.get("args")
        step.calls.append(
            {
                "id": str(call.get("id") or f"call_{k}"),
                "name": call["name"],
                "arguments": arguments if isinstance(arguments, dict) else {},
            }
        )
        output, failed = _result(call.get("result"))
        step.results.append(output)
        step.is_error = step.is_error or failed or call.get("status") == "error"
    return step


def _result(result: JSONValue) -> tuple[str, bool]:
    """A call's result parts as the model read them, and whether they hold an error."""
    parts = result if isinstance(result, list) else [result]
    texts: list[str] = []
    failed = False
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            reply = part.get("functionResponse")
            response = reply.get("response") if isinstance(reply, dict) else None
            if isinstance(response, dict):
                failed = failed or "error" in response
                said = response.get("output", response.get("error", response))
                texts.append(said if isinstance(said, str) else _text(said))
            else:
                texts.append(_text(part))
    return "\n".join(texts), failed


def _text(content: JSONValue) -> str:
    """A message's content as text: a string, or its parts' texts."""
    if isinstance(content, str | list):
        return "\n".join(part_texts(content))
    if isinstance(content, dict) and isinstance(text := content.get("text"), str):
        return text
    return "" if content is None else canonical_json(content)
