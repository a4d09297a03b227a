"""A session: the append-only record of one agent conversation, on disk and in memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from contextengine.errors import SessionLogError
from contextengine.session.durable import write_replacing
from contextengine.session.entries import Entry, PruneEntry, SummaryEntry
from contextengine.session.layout import SessionLayout, new_session_id
from contextengine.session.log import LoadReport, LogRecord, SessionHeader
from contextengine.session.render import RenderStyle, render_entry
from contextengine.session.store.files import FileStore
from contextengine.session.store.protocol import Archive, SessionStore, StoredSession

RewriteCause = Literal["compaction", "prune"]


class Session:
    """The record of one session. ``append`` is the only mutation; entries are frozen.

    ``live`` is the part of the record that requests show: every record, except those a
    summary (a compaction) archived; the summary stands where they stood, in place of the
    earlier summaries it absorbs (a rolling summary: at most one is in view). A pruning shows the tool results it names as its stubs, in
    their places. Neither rewrites the log.
    """

    def __init__(
        self,
        layout: SessionLayout,
        stored: StoredSession,
        report: LoadReport,
        store: SessionStore | None = None,
    ) -> None:
        self._layout = layout
        self._log = stored
        self._store = store or FileStore()
        self._style = RenderStyle(stored.header.protocol, stored.header.diversity)  # type: ignore[arg-type]
        self.load_report = report
        self._live: list[LogRecord] = []
        self._tracked = 0
        self._epoch = 0
        self._rewrite: RewriteCause | None = None
        self._track_new()

    @classmethod
    def create(
        cls,
        directory: str | Path,
        *,
        session_id: str | None = None,
        style: RenderStyle | None = None,
        durable: bool = True,
        files: Mapping[str, str] | None = None,
        store: SessionStore | None = None,
    ) -> Session:
        """Start a new session in ``directory`` (created if needed, must hold no log yet).

        ``files`` (name -> text) are written into the folder before the log appears, so
        a folder with a log always has them whole: a crash at any point leaves either no
        session or a complete one. ``durable=False`` skips fsync per append (replays and
        benchmarks only). ``store`` keeps the record (default: files in the folder).
        """
        style = style or RenderStyle()
        store = store or FileStore()
        layout = SessionLayout(Path(directory))
        if store.exists(layout):
            raise SessionLogError(f"{layout.directory}: a session already exists here")
        header = SessionHeader(
            session_id=session_id or new_session_id(),
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            protocol=style.protocol,
            diversity=style.diversity,
        )
        layout.artifacts.mkdir(parents=True, exist_ok=True)
        for name, text in (files or {}).items():
            write_replacing(layout.directory / name, text.encode("utf-8"), durable)
        return cls(layout, store.create(layout, header, durable), LoadReport(), store)

    @classmethod
    def open(cls, directory: str | Path, store: SessionStore | None = None) -> Session:
        """Resume the session in ``directory`` exactly as ``store`` recorded it."""
        store = store or FileStore()
        layout = SessionLayout(Path(directory))
        stored, report = store.open(layout)
        return cls(layout, stored, report, store)

    @property
    def id(self) -> str:
        """The session id."""
        return self._log.header.session_id

    @property
    def layout(self) -> SessionLayout:
        """Paths of the session's folder and files."""
        return self._layout

    @property
    def directory(self) -> Path:
        """The session's folder."""
        return self._layout.directory

    @property
    def store(self) -> SessionStore:
        """Where the session is kept."""
        return self._store

    @property
    def stored(self) -> StoredSession:
        """The session's stored data (record, archives, usage lines, memory files)."""
        return self._log

    @property
    def style(self) -> RenderStyle:
        """The session's fixed render settings."""
        return self._style

    @property
    def records(self) -> Sequence[LogRecord]:
        """Every record ever appended, in order (read-only)."""
        return self._log.records

    @property
    def live(self) -> Sequence[LogRecord]:
        """The records requests show (read-only snapshot)."""
        return tuple(self._live)

    @property
    def live_count(self) -> int:
        """How many records are in the live view."""
        return len(self._live)

    def live_since(self, start: int) -> Sequence[LogRecord]:
        """Live records from position ``start`` on (cheap: what was appended since)."""
        return self._live[start:]

    @property
    def epoch(self) -> int:
        """Number of compactions and prunings so far; the live view is append-only within
        an epoch."""
        return self._epoch

    @property
    def rewrite(self) -> RewriteCause | None:
        """What began the current epoch: ``compaction``, ``prune``, or ``None`` (none yet)."""
        return self._rewrite

    def append(self, entry: Entry, archive: Archive | None = None) -> LogRecord:
        """Render ``entry`` once, write it durably, and add it to the live view.

        ``archive``: what a compaction's summary entry archives, stored atomically with it.
        """
        index = len(self._log.records)
        record = LogRecord.make(index, entry, render_entry(entry, index, self.id, self._style))
        self._log.append(record, archive)
        self._track_new()
        return record

    def close(self) -> None:
        """Release the log's file handle or connection."""
        self._log.close()

    def _track_new(self) -> None:
        """Take the records not seen yet (another writer's too) into the live view."""
        records = self._log.records
        while self._tracked < len(records):
            self._track(records[self._tracked])
            self._tracked += 1

    def _track(self, record: LogRecord) -> None:
        entry = record.entry
        if isinstance(entry, PruneEntry):
            self._prune(record, entry)
            return
        if not isinstance(entry, SummaryEntry):
            self._live.append(record)
            return
        kept = [r for r in self._live if not entry.archives(r.index, r.entry)]
        at = next(
            (
                k
                for k, r in enumerate(kept)
                if r.index >= entry.first_index and not isinstance(r.entry, SummaryEntry)
            ),
            len(kept),
        )
        kept.insert(at, record)
        self._live = kept
        self._epoch += 1
        self._rewrite = "compaction"

    def _prune(self, record: LogRecord, entry: PruneEntry) -> None:
        stubs = {
            index: LogRecord(index, stand_in, (message,), (chunk,), record.ts)
            for (index, stand_in), message, chunk in zip(
                entry.stand_ins(), record.messages, record.chunks, strict=True
            )
        }
        self._live = [stubs.get(r.index, r) for r in self._live]
        self._epoch += 1
        self._rewrite = "prune"
