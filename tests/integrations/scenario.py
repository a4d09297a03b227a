"""The scenario every framework integration runs, and what its logged bodies must show.

The model keeps a todo list, reads a 20,000-char log (over the externalization threshold),
calls ``echo`` with keys out of order, reads the saved log's first lines back through the
mirror's ``file_read`` tool at the path its ``compressed_ref`` names, then answers. Checked
on the bodies the fake server logged: each request extends the previous one (only a
task-status tail, which is never stored, would go, and an old result may be pruned into a
stub), the log is externalized and recoverable
byte for byte, tool arguments are canonical, no tail repeats the todo list the model has
just written (the periodic recital is ``test_mirror``'s), and every request carries the
session key.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from typing_extensions import TypedDict

from contextengine.compress.externalize import CompressedRef
from contextengine.integrations.mirror import ContextMirror
from support.chat_server import Reply

BIG_LOG = "".join(f"line {n}: worker_{n % 7} processed batch_{n} ok\n" for n in range(500))
TODOS = '{"todos": [{"content": "Read the log", "status": "in_progress"}, {"content": "Report", "status": "pending"}]}'


def _ref_in(body: dict[str, Any]) -> CompressedRef:
    """The ``compressed_ref`` a request shows for the log (its tool message's first line)."""
    (content,) = [
        str(m["content"])
        for m in body["messages"]
        if m.get("role") == "tool" and "compressed_ref" in str(m["content"])
    ]
    return CompressedRef.from_json(content.split("\n", 1)[0])


def _read_back(body: dict[str, Any]) -> Reply:
    arguments = {"path": _ref_in(body).path, "start_line": 1, "end_line": 2}
    return Reply("Reading the saved log.", "file_read", json.dumps(arguments))


SCRIPT = (
    Reply("Planning.", "todo", TODOS),
    Reply("Reading the log.", "read_log"),
    Reply("Echoing.", "echo", '{"text": "hi", "count": 2}'),
    _read_back,
    Reply("All done."),
)
FINAL = "All done."
TAIL = "## Task status"
STUB = "[pruned: "


class TodoItem(TypedDict):
    """One todo: its text and status."""

    content: str
    status: str


def todo(todos: list[TodoItem]) -> str:
    """Replace the todo list."""
    return f"{len(todos)} todos"


def read_log() -> str:
    """Read the worker log."""
    return BIG_LOG


def echo(text: str, count: int) -> str:
    """Repeat text count times."""
    return text * count


def _persisted(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without the trailing task-status tail."""
    out = list(messages)
    while out and str(out[-1].get("content") or "").startswith(TAIL):
        out.pop()
    return out


def same_or_pruned(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """A message a request showed, as the next shows it: the same, or with a text pruned
    into a stub (a deliberate rewrite, when the cache pays for it), in the same place."""
    if after == before:
        return True
    place = ("role", "tool_call_id")
    pruned = STUB in json.dumps(after) and STUB not in json.dumps(before)
    return pruned and all(after.get(k) == before.get(k) for k in place)


def check_bodies(bodies: Sequence[dict[str, Any]], mirror: ContextMirror) -> None:
    """Assert what every integration must show on the wire (see the module docstring)."""
    assert len(bodies) == len(SCRIPT)
    assert all(body.get("prompt_cache_key") == mirror.session_key for body in bodies)
    for before, after in itertools.pairwise(bodies):
        kept = _persisted(before["messages"])
        assert len(after["messages"]) > len(kept)
        assert all(map(same_or_pruned, kept, after["messages"]))
    assert not any(str(b["messages"][-1]["content"]).startswith(TAIL) for b in bodies[1:])
    assert BIG_LOG not in "\n".join(str(m.get("content")) for m in bodies[-1]["messages"])
    ref = _ref_in(bodies[2])
    assert ref.original_length == len(BIG_LOG)
    read_back = _persisted(bodies[-1]["messages"])[-1]
    assert read_back["role"] == "tool"
    assert read_back["content"] == "".join(BIG_LOG.splitlines(True)[:2])
    assert mirror.file_read(str(ref.path)) == BIG_LOG
    assert mirror.externalizer.recover(ref) == BIG_LOG
    (call,) = [m for m in bodies[3]["messages"] if m.get("role") == "assistant"][-1]["tool_calls"]
    keys = list(json.loads(call["function"]["arguments"]))
    assert keys == sorted(keys) == ["count", "text"]
