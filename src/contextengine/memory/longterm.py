"""Long-term memory (R9.1): an FTS5 index over past sessions' findings, summaries and answers.

Each session's documents are re-indexed when one of its turns ends (its findings
sections, its compaction summaries, and each user request with its final answer), so
a later session of the same org and team can search them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from contextengine.memory.lessons import hint_words
from contextengine.memory.scope import SessionScope, connect
from contextengine.memory.status import objective_of
from contextengine.memory.templates import split_sections
from contextengine.session.entries import AssistantEntry, SummaryEntry, UserEntry
from contextengine.session.log import LogRecord

DocKind = Literal["finding", "summary", "answer"]
MAX_QUERY_WORDS = 24
_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    title, body,
    org UNINDEXED, team UNINDEXED, workspace UNINDEXED, session UNINDEXED,
    kind UNINDEXED, created UNINDEXED
);
"""


@dataclass(frozen=True)
class MemoryDoc:
    """One searchable piece of a session: a finding, a summary, or a request and answer."""

    kind: DocKind
    title: str
    body: str


@dataclass(frozen=True)
class MemoryHit:
    """A document found for a hint, with the session it came from."""

    session: str
    kind: DocKind
    title: str
    body: str


def session_documents(records: Sequence[LogRecord], findings_text: str) -> list[MemoryDoc]:
    """The documents of a session: findings sections, summaries, and answered requests."""
    docs = [MemoryDoc("finding", t, b) for t, b in split_sections(findings_text) if t or b]
    request: str | None = None
    for record in records:
        entry = record.entry
        if isinstance(entry, SummaryEntry):
            docs.append(MemoryDoc("summary", "Archived session summary", entry.text))
        elif isinstance(entry, UserEntry):
            request = objective_of(entry.text)
        elif isinstance(entry, AssistantEntry) and entry.is_final and request and entry.text:
            docs.append(MemoryDoc("answer", request, entry.text))
            request = None
    return docs


class LongTermMemory:
    """The FTS5 index of one root, read and written in one session's scope."""

    def __init__(self, scope: SessionScope) -> None:
        self.scope = scope
        with connect(scope.database) as conn:
            conn.executescript(_SCHEMA)

    def index_session(self, docs: Sequence[MemoryDoc]) -> None:
        """Replace this session's documents in the index with ``docs``."""
        s = self.scope
        created = datetime.now(UTC).isoformat(timespec="seconds")
        with connect(s.database) as conn:
            conn.execute(
                "DELETE FROM memory_fts WHERE org = ? AND team = ? AND session = ?",
                (s.org, s.team, s.session),
            )
            conn.executemany(
                "INSERT INTO memory_fts (title, body, org, team, workspace, session, kind,"
                " created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (d.title, d.body, s.org, s.team, s.workspace, s.session, d.kind, created)
                    for d in docs
                ],
            )

    def search(self, hint: str, limit: int = 3) -> list[MemoryHit]:
        """Documents of other sessions that best match ``hint`` (BM25), best first."""
        words = hint_words(hint)[:MAX_QUERY_WORDS]
        if not words:
            return []
        query = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        s = self.scope
        with connect(s.database) as conn:
            rows = conn.execute(
                "SELECT session, kind, title, body FROM memory_fts WHERE memory_fts MATCH ?"
                " AND org = ? AND team = ? AND session != ? ORDER BY bm25(memory_fts) LIMIT ?",
                (query, s.org, s.team, s.session, limit),
            ).fetchall()
        return [MemoryHit(*row) for row in rows]
