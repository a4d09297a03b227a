"""The per-session request log: every model request as sent, delta-encoded.

``requests.jsonl`` holds one line per model call, in the order of ``usage.jsonl``. A line
stores the request's chunk layout (``Segments``) and only the chunks that differ from the
previous request's: ``shared`` leading chunks are taken from the line before, ``new``
follow. History is append-only, so a step adds its new messages, the live observation
and the task-status tail; the tools and the system prompt are written once per process.
A torn last line (a crash mid-write) is skipped when reading.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from contextengine.context.request import Request, Segments
from contextengine.errors import SessionLogError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as sent: its purpose, layout and chunks (chunk 0 tools, k+1 message k)."""

    purpose: str
    segments: Segments
    chunks: tuple[str, ...]

    def text(self) -> str:
        """The request's canonical text (what the prefix monitor compares)."""
        return "".join(self.chunks)


class RequestLog:
    """Appends each request to ``requests.jsonl``, sharing leading chunks with the last one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._previous: tuple[str, ...] = ()

    def append(self, request: Request) -> None:
        """Record one request (flushed and synced, like the usage log)."""
        chunks = request.chunks
        shared = 0
        limit = min(len(chunks), len(self._previous))
        while shared < limit and chunks[shared] == self._previous[shared]:
            shared += 1
        line = {
            "purpose": request.purpose,
            "segments": request.segments.__dict__,
            "shared": shared,
            "new": list(chunks[shared:]),
        }
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._previous = chunks


def read_requests(path: Path) -> Iterator[RecordedRequest]:
    """The recorded requests, rebuilt in order; a bad line other than the last is an error."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionLogError(f"{path}: cannot read ({exc})") from None
    previous: tuple[str, ...] = ()
    last = len(lines) - 1
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            request = _rebuild(json.loads(line), previous)
        except (ValueError, TypeError, KeyError) as exc:
            if n >= last - 1 and not any(x.strip() for x in lines[n + 1 :]):
                logger.warning("%s:%d: torn last request skipped (%s)", path, n + 1, exc)
                return
            raise SessionLogError(f"{path}:{n + 1}: bad request record ({exc})") from None
        previous = request.chunks
        yield request


def _rebuild(data: dict[str, object], previous: tuple[str, ...]) -> RecordedRequest:
    shared, new, segments = data["shared"], data["new"], data["segments"]
    if not isinstance(shared, int) or not 0 <= shared <= len(previous):
        raise ValueError(f"'shared' must be 0..{len(previous)}")
    if not isinstance(new, list) or not all(isinstance(c, str) for c in new):
        raise ValueError("'new' must be a list of strings")
    if not isinstance(segments, dict):
        raise ValueError("'segments' must be an object")
    layout = Segments(**{k: int(v) for k, v in segments.items()})
    chunks = previous[:shared] + tuple(new)
    if len(chunks) != 1 + sum(layout.__dict__.values()):
        raise ValueError("the chunks do not match the segments")
    return RecordedRequest(str(data["purpose"]), layout, chunks)
