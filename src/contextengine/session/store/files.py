"""The default store: each session is its folder (``session.jsonl``, ``usage.jsonl``,
``archive/``, the memory files), as it always was."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from contextengine.errors import SessionLogError
from contextengine.session.durable import disk_errors, write_replacing
from contextengine.session.entries import Entry
from contextengine.session.layout import SessionLayout
from contextengine.session.listing import iter_entries
from contextengine.session.log import (
    LoadReport,
    LogRecord,
    SessionHeader,
    SessionLog,
    parse_header,
    parse_records,
)
from contextengine.session.store.protocol import Archive


class FileStore:
    """Sessions as folders on a (possibly shared) file system."""

    url = "files"

    def create(self, layout: SessionLayout, header: SessionHeader, durable: bool) -> FileSession:
        """A new session log in ``layout``'s folder (refuses an existing one)."""
        return FileSession(layout, SessionLog.create(layout.log, header, durable), durable)

    def open(self, layout: SessionLayout) -> tuple[FileSession, LoadReport]:
        """The session log in ``layout``'s folder (a torn last line moved aside)."""
        log, report = SessionLog.open(layout.log)
        return FileSession(layout, log, durable=True), report

    def exists(self, layout: SessionLayout) -> bool:
        """Whether the folder holds a session log."""
        return layout.log.is_file()

    def check(self) -> None:
        """Nothing to reach: folders are made as sessions are."""

    def header(self, layout: SessionLayout) -> SessionHeader | None:
        """The log's header line, ``None`` when there is no readable one."""
        try:
            with open(layout.log, "rb") as fh:
                return parse_header(layout.log, fh.readline())
        except (OSError, SessionLogError):
            return None

    def entries(self, layout: SessionLayout) -> Iterator[Entry]:
        """The log's entries (a line being written ends the reading)."""
        return iter_entries(layout.log)

    def usage(self, layout: SessionLayout) -> list[str]:
        """The lines of ``usage.jsonl`` (a last line being written included)."""
        return _lines(layout.usage_log)


class FileSession:
    """One session's files: the log, the archives, the usage log, the memory files."""

    def __init__(self, layout: SessionLayout, log: SessionLog, durable: bool) -> None:
        self._layout = layout
        self._log = log
        self._durable = durable
        self._memory = FolderFiles(layout.directory, durable)

    @property
    def header(self) -> SessionHeader:
        """The log's header."""
        return self._log.header

    @property
    def records(self) -> Sequence[LogRecord]:
        """The log's records."""
        return self._log.records

    def append(self, record: LogRecord, archive: Archive | None = None) -> bool:
        """Append ``record``; an archive file is written whole first (a crash between the
        two leaves an archive nothing cites, rewritten by the next compaction)."""
        if archive is None:
            return self._log.append(record)
        path = self._layout.directory / archive.name

        def write_archive() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_replacing(path, archive.to_bytes(), self._durable)

        return self._log.append(record, before_write=write_archive)

    def read_archive(self, name: str) -> tuple[LogRecord, ...]:
        """The records of the archive file ``name``."""
        path = self._layout.directory / name
        try:
            return parse_records(str(path), path.read_bytes())
        except OSError as exc:
            raise SessionLogError(f"{path}: cannot read ({exc.strerror or exc})") from None

    def append_usage(self, line: str) -> None:
        """Append the line to ``usage.jsonl`` and fsync it."""
        _append_text(self._layout.usage_log, line + "\n")

    def usage_lines(self) -> list[str]:
        """The lines of ``usage.jsonl`` (none before the first call)."""
        return [line for line in _lines(self._layout.usage_log) if line.strip()]

    def save_memory(self, name: str, text: str) -> None:
        """Replace the memory file."""
        self._memory.save_memory(name, text)

    def append_memory(self, name: str, text: str) -> None:
        """Append to the memory file."""
        self._memory.append_memory(name, text)

    def load_memory(self, name: str) -> str | None:
        """The memory file's text, or ``None`` when the folder has none."""
        return self._memory.load_memory(name)

    def close(self) -> None:
        """Close the log's file handle."""
        self._log.close()


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").split("\n")
    except FileNotFoundError:
        return []


def _append_text(path: Path, text: str) -> None:
    with disk_errors(path):
        _append_fsynced(path, text)


def _append_fsynced(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(text.encode("utf-8"))
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


class FolderFiles:
    """Text files in a session folder (the memory files): what people and file tools see."""

    def __init__(self, directory: Path, durable: bool = True) -> None:
        self._directory = directory
        self._durable = durable

    def save_memory(self, name: str, text: str) -> None:
        """Replace the file whole or not at all (left alone when it already says ``text``)."""
        if self.load_memory(name) == text:
            return
        path = self._directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_replacing(path, text.encode("utf-8"), self._durable)

    def append_memory(self, name: str, text: str) -> None:
        """Append to the file and fsync it."""
        self._directory.mkdir(parents=True, exist_ok=True)
        _append_text(self._directory / name, text)

    def load_memory(self, name: str) -> str | None:
        """The file's text, or ``None`` when there is no such file."""
        try:
            return (self._directory / name).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None
