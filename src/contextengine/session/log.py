"""The append-only session log: one JSON object per line, fsynced on every append (R1.2, R8.6).

Line 1 is a header naming the format and the version the log was created with; every later
line is one record: ``{"v": 2, "i": index, "entry": {...}, "messages": [...]}``, ``v`` being
the version it was written with (a log created by an older version goes on with newer
records). Nothing here edits or deletes a line. The header appears whole or not at all. A torn last line (a crash mid-write) is reported, moved aside to
``session.jsonl.torn`` and skipped on load; a bad line anywhere else is an error naming the
file and the line.

Appends hold an exclusive ``flock`` on the file and first read what other writers appended
meanwhile, so two processes appending to one log keep it ordered: re-appending an index with
the same entry is a no-op, with a different entry an ``AppendConflictError``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from contextengine.canonical import canonical_json
from contextengine.errors import AppendConflictError, SessionLogError
from contextengine.session.durable import create_exclusive, disk_errors
from contextengine.session.entries import (
    ENTRY_ADAPTER,
    ENTRY_FORMAT_VERSION,
    READABLE_FORMAT_VERSIONS,
    Entry,
)
from contextengine.types import Message

LOG_FORMAT = "contextengine-session"

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionHeader:
    """First line of a log: identity of the session and its fixed render settings."""

    session_id: str
    created: str
    protocol: str = "native"
    diversity: bool = True
    version: int = ENTRY_FORMAT_VERSION

    def to_json(self) -> str:
        """The header line (without newline)."""
        return canonical_json({"format": LOG_FORMAT, **self.__dict__})


@dataclass(frozen=True)
class LogRecord:
    """One appended entry with its frozen rendering and that rendering's canonical text."""

    index: int
    entry: Entry
    messages: tuple[Message, ...]
    chunks: tuple[str, ...]
    ts: str = ""

    @classmethod
    def make(
        cls, index: int, entry: Entry, messages: Sequence[Message], ts: str | None = None
    ) -> LogRecord:
        """Build a record, computing the canonical text of each rendered message once.

        ``ts`` (when it was appended) is metadata of the log line, never rendered.
        """
        msgs = tuple(messages)
        when = datetime.now(UTC).isoformat(timespec="seconds") if ts is None else ts
        return cls(index, entry, msgs, tuple(canonical_json(m) for m in msgs), when)

    def to_json(self) -> str:
        """The log line for this record (without newline)."""
        line: dict[str, object] = {
            "v": ENTRY_FORMAT_VERSION,
            "i": self.index,
            "entry": self.entry.model_dump(mode="json"),
            "messages": list(self.messages),
        }
        if self.ts:
            line["ts"] = self.ts
        return canonical_json(line)

    def same_as(self, other: LogRecord) -> bool:
        """Whether ``other`` records the same entry, rendered the same, at the same index
        (when it was appended does not count)."""
        return (
            self.index == other.index
            and self.chunks == other.chunks
            and self.entry.model_dump(mode="json") == other.entry.model_dump(mode="json")
        )


@dataclass(frozen=True)
class LoadReport:
    """What loading found besides the records: a torn tail, if any."""

    torn_line: int | None = None
    torn_bytes: int = 0
    saved_to: Path | None = None

    @property
    def clean(self) -> bool:
        """True when the log loaded with nothing skipped."""
        return self.torn_line is None


class SessionLog:
    """An append-only JSONL file. ``append`` is the only way to add; nothing removes."""

    def __init__(
        self,
        path: Path,
        header: SessionHeader,
        records: list[LogRecord],
        durable: bool = True,
        size: int = 0,
    ) -> None:
        self._path = path
        self._durable = durable
        self._header = header
        self._records = records
        self._size = size  # bytes of the file read into ``records`` so far
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        """The log file."""
        return self._path

    @property
    def header(self) -> SessionHeader:
        """The log's header."""
        return self._header

    @property
    def records(self) -> Sequence[LogRecord]:
        """All records in append order (a read-only view)."""
        return RecordView(self._records)

    @classmethod
    def create(cls, path: Path, header: SessionHeader, durable: bool = True) -> SessionLog:
        """Create a new log with its header line; refuses to overwrite an existing log.

        The log appears with its complete header or not at all (a kill mid-creation leaves
        no log, so the session can be created again). ``durable=False`` skips the fsyncs:
        for simulations such as replay, where a crash loses nothing of value.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        line = (header.to_json() + "\n").encode("utf-8")
        try:
            create_exclusive(path, line, durable)
        except FileExistsError:
            raise SessionLogError(f"{path}: a session log already exists here") from None
        return cls(path, header, [], durable, len(line))

    @classmethod
    def open(cls, path: Path) -> tuple[SessionLog, LoadReport]:
        """Load an existing log exactly; a torn last line is reported and moved aside.

        It reads under the appenders' lock, so a line another process is writing is never
        mistaken for a torn one, and the log knows exactly how much of the file it has read.
        """
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            raise SessionLogError(f"{path}: no session log here") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            header, records, report = cls._read(path, path.read_bytes())
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)  # closing drops the lock
        return cls(path, header, records, size=size), report

    @staticmethod
    def _read(path: Path, data: bytes) -> tuple[SessionHeader, list[LogRecord], LoadReport]:
        """The header and records of a log's ``data``, a torn last line moved aside."""
        lines = data.split(b"\n")
        # A complete log ends with "\n", so the last piece is empty; anything there is
        # a last line whose newline never reached the disk.
        tail = lines.pop()
        if not lines:
            raise SessionLogError(f"{path}:1: bad header (the file holds no complete line)")
        header = parse_header(path, lines[0])
        offsets = _line_offsets(lines)
        records: list[LogRecord] = []
        report = LoadReport()
        body = [(n, raw) for n, raw in enumerate(lines[1:], start=2)]
        if tail:
            body.append((len(lines) + 1, tail))
        for n, raw in body:
            try:
                records.append(_parse_record(path, n, raw, expected_index=len(records)))
            except SessionLogError:
                if n != body[-1][0]:
                    raise
                start = offsets[n - 1] if n <= len(lines) else len(data) - len(tail)
                report = _move_torn(path, data, start, n)
                break
        else:
            if tail:
                _append_bytes(path, b"\n")
        return header, records, report

    def append(self, record: LogRecord, before_write: Callable[[], None] | None = None) -> bool:
        """Write one record and fsync it before returning; ``False`` when the log already
        held that same record (an idempotent re-append).

        ``before_write`` runs under the lock once the append is known to go ahead (the
        compaction archive is written there, before the record that cites it).
        """
        fd = self._open_fd()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            self._catch_up(fd)
            if record.index < len(self._records):
                return _repeat(self._path, self._records[record.index], record)
            if record.index != len(self._records):
                raise SessionLogError(
                    f"{self._path}: append of index {record.index}, expected {len(self._records)}"
                )
            if before_write is not None:
                before_write()
            self._write_line(fd, record.to_json())
            self._records.append(record)
            return True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the file handle (appending again reopens it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _open_fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDWR | os.O_APPEND)
        return self._fd

    def _catch_up(self, fd: int) -> None:
        """Read the records other writers appended since this log last looked."""
        size = os.fstat(fd).st_size
        if size <= self._size:
            return
        data = os.pread(fd, size - self._size, self._size)
        for raw in data.split(b"\n")[:-1]:
            line_no = len(self._records) + 2
            self._records.append(_parse_record(self._path, line_no, raw, len(self._records)))
        self._size += len(data) - len(data.split(b"\n")[-1])

    def _write_line(self, fd: int, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        with disk_errors(self._path):
            view = memoryview(data)
            while view:  # a short write (the disk filling up) is continued, or raises
                view = view[os.write(fd, view) :]
            if self._durable:
                os.fsync(fd)
        self._size += len(data)

    def __del__(self) -> None:
        self.close()


class RecordView(Sequence[LogRecord]):
    """A live, read-only view of a record list."""

    __slots__ = ("_items",)

    def __init__(self, items: list[LogRecord]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        item = self._items[i]
        return tuple(item) if isinstance(i, slice) else item

    def __iter__(self) -> Iterator[LogRecord]:
        return iter(self._items)


def _repeat(path: Path, held: LogRecord, record: LogRecord) -> bool:
    if not held.same_as(record):
        raise AppendConflictError(
            f"{path}: index {record.index} already holds a different entry"
            f" ({held.entry.kind}, not {record.entry.kind})"
        )
    return False


def _line_offsets(lines: list[bytes]) -> list[int]:
    offsets, pos = [], 0
    for raw in lines:
        offsets.append(pos)
        pos += len(raw) + 1
    return offsets


def parse_header(path: Path, raw: bytes) -> SessionHeader:
    """The header line of a log (``path`` names it in errors)."""
    try:
        obj = json.loads(raw)
        if obj.get("format") != LOG_FORMAT:
            raise ValueError("not a contextengine session log")
        version = obj.get("version")
        if version not in READABLE_FORMAT_VERSIONS:
            raise ValueError(f"format version {version} is not supported")
        fields = {k: obj[k] for k in ("session_id", "created", "protocol", "diversity", "version")}
        return SessionHeader(**fields)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SessionLogError(f"{path}:1: bad header ({exc})") from None


def parse_records(where: str, data: bytes) -> tuple[LogRecord, ...]:
    """Record lines as a log writes them (an archive), any indices; ``where`` names them in
    errors."""
    return tuple(
        _parse_record(Path(where), n, raw, None)
        for n, raw in enumerate(data.split(b"\n"), start=1)
        if raw.strip()
    )


def _parse_record(path: Path, line_no: int, raw: bytes, expected_index: int | None) -> LogRecord:
    try:
        obj = json.loads(raw)
        if obj.get("v") not in READABLE_FORMAT_VERSIONS:
            raise ValueError(f"record version {obj.get('v')!r} is not supported")
        if expected_index is None and isinstance(obj.get("i"), int):
            expected_index = obj["i"]
        if obj.get("i") != expected_index:
            raise ValueError(f"index {obj.get('i')!r}, expected {expected_index}")
        entry = ENTRY_ADAPTER.validate_python(obj["entry"])
        messages = obj["messages"]
        if not isinstance(messages, list):
            raise ValueError("'messages' is not a list")
        ts = obj.get("ts", "")
        if not isinstance(ts, str):
            raise ValueError("'ts' is not a string")
        return LogRecord.make(obj["i"], entry, messages, ts)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise SessionLogError(
            f"{path}:{line_no}: bad entry field {where!r}: {err['msg']}"
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SessionLogError(f"{path}:{line_no}: corrupt line ({exc})") from None


def _append_bytes(path: Path, data: bytes) -> None:
    with disk_errors(path), open(path, "ab") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _move_torn(path: Path, data: bytes, start: int, line_no: int) -> LoadReport:
    """Keep the torn bytes in a side file, then cut them off so appends stay clean."""
    torn = data[start:]
    side = path.with_name(path.name + ".torn")
    _append_bytes(side, torn.rstrip(b"\n") + b"\n")
    with open(path, "r+b") as fh:
        fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())
    logger.warning(
        "%s:%d: torn last line (%d bytes, a crash mid-write) skipped; kept in %s",
        path,
        line_no,
        len(torn),
        side,
    )
    return LoadReport(torn_line=line_no, torn_bytes=len(torn), saved_to=side)
