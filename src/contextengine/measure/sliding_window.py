"""The ``sliding_window`` baseline: system + task + the last messages of a plain chat."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextengine.context.request import Request, Segments

WINDOW_MESSAGES = 8


def sliding_window(request: Request, keep: int = WINDOW_MESSAGES) -> Request:
    """``request`` (a plain append-only chat: system, task, the rest) cut to system + task
    + its last ``keep`` messages. A window never starts with a tool result whose call was
    cut away. Only system + task stay put from request to request, so they are the
    persisted part; the window is charged like a live part."""
    messages = request.messages
    start = max(2, len(messages) - keep)
    if start > 2:
        start = window_start(messages, start)
    kept = [0, 1, *range(start, len(messages))]
    head_chars = sum(len(c) for c in request.chunks[:3])
    return Request(
        session_id=request.session_id,
        purpose=request.purpose,
        _tools=tuple(request.tools),
        _messages=tuple(messages[k] for k in kept),
        chunks=(request.chunks[0], *(request.chunks[k + 1] for k in kept)),
        segments=Segments(1, 0, 1, len(kept) - 2, 0, 0),
        persisted_chars=head_chars,
        epoch=request.epoch,
    )


def window_start(messages: Sequence[Mapping[str, Any]], start: int) -> int:
    """The first index from ``start`` on where a kept tail of ``messages`` may begin: not
    a tool result, whose call would be cut away."""
    while start < len(messages) and messages[start].get("role") == "tool":
        start += 1
    return start
