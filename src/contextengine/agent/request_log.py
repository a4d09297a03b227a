"""The per-session request log: every model request as sent, delta-encoded.

``requests.jsonl`` holds one line per model call, in the order of ``usage.jsonl``. A line
stores the request's chunk layout (``Segments``) and its ``chunks``: a chunk the previous
request also had is written as that chunk's index there (an int), any other as its text.
History is append-only and a compaction or an L2 edit keeps most messages, so a step adds
its new messages, the live observation and the task-status tail; the tools and the system
prompt are written once per process. A torn last line (a crash mid-write) is skipped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from contextengine.context.request import Request, Segments
from contextengine.errors import SessionLogError
from contextengine.session.durable import disk_errors

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
        """Record one request.

        Flushed but not fsynced: a killed process loses nothing (the page cache keeps it),
        and a diagnostic log is not worth a disk sync per model call.
        """
        # Chunks are mostly the same string objects as last time: hashing them is cached.
        known = {chunk: k for k, chunk in enumerate(self._previous)}
        line = {
            "purpose": request.purpose,
            "segments": request.segments.__dict__,
            "chunks": [known.get(chunk, chunk) for chunk in request.chunks],
        }
        with disk_errors(self.path), open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._previous = request.chunks


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
    stored, segments = data["chunks"], data["segments"]
    if not isinstance(stored, list):
        raise ValueError("'chunks' must be a list")
    if not isinstance(segments, dict):
        raise ValueError("'segments' must be an object")
    chunks: list[str] = []
    for item in stored:
        if isinstance(item, str):
            chunks.append(item)
        elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item < len(previous):
            chunks.append(previous[item])
        else:
            raise ValueError(f"chunk reference {item!r} is not in the previous request")
    layout = Segments(**{k: int(v) for k, v in segments.items()})
    if len(chunks) != 1 + sum(layout.__dict__.values()):
        raise ValueError("the chunks do not match the segments")
    return RecordedRequest(str(data["purpose"]), layout, tuple(chunks))
