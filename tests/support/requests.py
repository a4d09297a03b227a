"""Helpers to look inside built requests."""

from __future__ import annotations

from contextengine import Request


def live_text(request: Request) -> str:
    """Contents of the live messages (the newest full observations), joined."""
    start = request.segments.persisted
    return "\n".join(
        str(m["content"]) for m in request.messages[start : start + request.segments.live]
    )


def persisted_text(request: Request) -> str:
    """The canonical text of tools + L1 + L2 + history."""
    return "".join(request.chunks[: request.persisted_chunks])
