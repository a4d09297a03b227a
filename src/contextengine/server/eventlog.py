"""The numbered record of a session's streamed events: ``events.jsonl`` in the session folder.

Every event the server streams is appended here first, with the next id of the session
(1, 2, 3 ... across turns and restarts), so a client that lost its stream can continue
right after the last id it saw (``Last-Event-ID``). A line torn by a crash is cut off when
the log is opened again; no id is ever given twice.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO

_ID = re.compile(rb'^\{"id": (\d+),')
_HEAD = re.compile(rb'^\{"id": (\d+), "event": ("(?:[^"\\]|\\.)*"), "data": ')
_TAIL_WINDOW = 4096


@dataclass(frozen=True)
class StoredEvent:
    """One recorded event: its id, its SSE event name and its JSON payload text."""

    id: int
    event: str
    data: str


class EventLog:
    """Append-only, id-numbered events of one session (one writer: the server's loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last_id = _repair_and_find_last_id(path)
        self._file: IO[bytes] | None = None

    def append(self, event: str, data: str) -> StoredEvent:
        """Record one event under the next id; it is readable as soon as this returns."""
        if self._file is None:
            self._file = open(self.path, "ab")  # noqa: SIM115 (held open across appends)
        stored = StoredEvent(self.last_id + 1, event, data)
        line = f'{{"id": {stored.id}, "event": {json.dumps(event)}, "data": {data}}}\n'
        self._file.write(line.encode("utf-8"))
        self._file.flush()
        self.last_id = stored.id
        return stored

    def read_after(self, after: int, offset: int = 0) -> tuple[list[StoredEvent], int]:
        """Events with an id above ``after`` from byte ``offset`` on, and where reading ended."""
        found: list[StoredEvent] = []
        if not self.path.exists():
            return found, offset
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # being written right now: read again from here next time
                offset += len(line)
                head = _HEAD.match(line)
                if head is None or int(head.group(1)) <= after:
                    continue
                data = line[head.end() : -2].decode("utf-8")  # the payload text as written
                found.append(StoredEvent(int(head.group(1)), json.loads(head.group(2)), data))
        return found, offset

    def close(self) -> None:
        """Release the file handle (a later ``append`` opens it again)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def _repair_and_find_last_id(path: Path) -> int:
    """Cut a torn last line off ``path`` and return the id of its last event (0 if none)."""
    if not path.exists():
        return 0
    with open(path, "r+b") as fh:
        size = fh.seek(0, 2)
        window = _TAIL_WINDOW
        while True:
            start = max(0, size - window)
            fh.seek(start)
            chunk = fh.read(size - start)
            end = chunk.rfind(b"\n")
            if end == -1 and start > 0:
                window *= 4
                continue
            if start + end + 1 < size:
                fh.truncate(start + end + 1)
                size = start + end + 1
                chunk = chunk[: end + 1]
            lines = chunk.split(b"\n")[:-1]
            if start > 0:
                lines = lines[1:]  # the first piece may be the end of an earlier line
            if lines:
                head = _ID.match(lines[-1])
                return int(head.group(1)) if head else 0
            if start == 0:
                return 0
            window *= 4
