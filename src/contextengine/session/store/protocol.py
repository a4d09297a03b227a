"""The session store protocol: what every place that keeps sessions must do, and promise.

A ``SessionStore`` creates and opens sessions; a ``StoredSession`` is one session's data:
the append-only record, the compaction archives, the usage lines and the three memory
files. Both stores give the same guarantees, checked by the same tests
(``tests/session/store``):

- the record is ordered and gapless, keyed by (session, index); re-appending an index
  with the same entry is a no-op, with a different entry an ``AppendConflictError``;
- an archive and the summary record citing it land together (the record never appears
  without its archive);
- usage lines keep their order; memory files read back as last written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from contextengine.session.entries import Entry
from contextengine.session.layout import SessionLayout
from contextengine.session.log import LoadReport, LogRecord, SessionHeader

ARCHIVE_FOLDER = "archive"


@dataclass(frozen=True)
class Archive:
    """Records leaving the live view at a compaction, kept verbatim under ``name``.

    ``name`` is relative to the session folder (``archive/compaction-0001.jsonl``), the
    name the summary entry cites.
    """

    name: str
    records: tuple[LogRecord, ...]

    def to_bytes(self) -> bytes:
        """The archive as a JSONL file: one record line each, as the log wrote them."""
        return "".join(r.to_json() + "\n" for r in self.records).encode("utf-8")


def archive_name(number: int) -> str:
    """The name of a session's ``number``-th compaction archive."""
    return f"{ARCHIVE_FOLDER}/compaction-{number:04d}.jsonl"


class StoredSession(Protocol):
    """One session's stored data: record, archives, usage lines, memory files."""

    @property
    def header(self) -> SessionHeader:
        """The session's identity and fixed render settings."""
        ...

    @property
    def records(self) -> Sequence[LogRecord]:
        """Every record appended so far (by any writer, as of the last append), in order."""
        ...

    def append(self, record: LogRecord, archive: Archive | None = None) -> bool:
        """Store ``record`` (and the archive it cites, atomically with it); ``False`` when
        that same record was already there."""
        ...

    def read_archive(self, name: str) -> tuple[LogRecord, ...]:
        """The records a compaction archived under ``name``."""
        ...

    def append_usage(self, line: str) -> None:
        """Keep one usage line (a JSON object) after the others."""
        ...

    def usage_lines(self) -> list[str]:
        """The usage lines in the order they were kept."""
        ...

    def save_memory(self, name: str, text: str) -> None:
        """Keep ``text`` as memory file ``name``'s content."""
        ...

    def append_memory(self, name: str, text: str) -> None:
        """Add ``text`` at the end of memory file ``name``."""
        ...

    def load_memory(self, name: str) -> str | None:
        """Memory file ``name``'s content, or ``None`` when it was never kept."""
        ...

    def close(self) -> None:
        """Release what the session holds open (a file handle, a connection)."""
        ...


class SessionStore(Protocol):
    """A place that keeps sessions: ``files`` or ``postgresql``."""

    @property
    def url(self) -> str:
        """The store as the ``store`` setting names it (for messages)."""
        ...

    def create(self, layout: SessionLayout, header: SessionHeader, durable: bool) -> StoredSession:
        """A new, empty session at ``layout``; an error when one is already there."""
        ...

    def open(self, layout: SessionLayout) -> tuple[StoredSession, LoadReport]:
        """The session at ``layout`` exactly as recorded."""
        ...

    def exists(self, layout: SessionLayout) -> bool:
        """Whether a session has been created at ``layout``."""
        ...

    def check(self) -> None:
        """Raise ``StoreError`` (naming the store) when it cannot be used now."""
        ...

    def header(self, layout: SessionLayout) -> SessionHeader | None:
        """The header of the session at ``layout``, ``None`` when there is none (listings)."""
        ...

    def entries(self, layout: SessionLayout) -> Iterator[Entry]:
        """The entries recorded so far, read-only, while a turn may be appending."""
        ...

    def usage(self, layout: SessionLayout) -> list[str]:
        """The usage lines of the session at ``layout`` (none when there are none)."""
        ...
