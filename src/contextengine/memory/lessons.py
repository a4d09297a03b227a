"""Lessons from errors (R5.5, seed 001 ``recordError`` / ``resolveError``).

A lesson is an error (class, tool, action, message) and, once it is resolved, what fixed
it. Lessons live in the root's SQLite database; resolved ones from other sessions of the
same org and team are what later sessions get injected (R9.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from contextengine.memory.scope import SessionScope, connect

MESSAGE_CHARS = 1200
RESOLUTION_CHARS = 1200
RECENT_FALLBACK = 3
_SCHEMA = """
CREATE TABLE IF NOT EXISTS lessons (
    id INTEGER PRIMARY KEY,
    org TEXT NOT NULL,
    team TEXT NOT NULL,
    workspace TEXT NOT NULL,
    session TEXT NOT NULL,
    error_class TEXT NOT NULL,
    tool TEXT NOT NULL,
    action TEXT NOT NULL,
    message TEXT NOT NULL,
    record_index INTEGER,
    resolution TEXT,
    created TEXT NOT NULL,
    resolved TEXT
);
CREATE INDEX IF NOT EXISTS lessons_scope ON lessons (org, team, resolved);
"""
_COLUMNS = "id, session, error_class, tool, action, message, record_index, resolution"


@dataclass(frozen=True)
class Lesson:
    """One recorded error and, when resolved, its resolution."""

    id: int
    session: str
    error_class: str
    tool: str
    action: str
    message: str
    record_index: int | None
    resolution: str | None


def hint_words(text: str) -> list[str]:
    """Distinct lower-case words of three or more characters, in order."""
    return list(dict.fromkeys(w for w in re.findall(r"\w{3,}", text.casefold())))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class LessonStore:
    """The lessons of one session's org and team, written as this session."""

    def __init__(self, scope: SessionScope) -> None:
        self.scope = scope
        with connect(scope.database) as conn:
            conn.executescript(_SCHEMA)

    def record_error(
        self,
        error_class: str,
        message: str,
        *,
        tool: str = "",
        action: str = "",
        record_index: int | None = None,
    ) -> int:
        """Store an unresolved lesson; returns its id."""
        s = self.scope
        with connect(s.database) as conn:
            cursor = conn.execute(
                "INSERT INTO lessons (org, team, workspace, session, error_class, tool, action,"
                " message, record_index, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    s.org,
                    s.team,
                    s.workspace,
                    s.session,
                    error_class,
                    tool,
                    action,
                    message[-MESSAGE_CHARS:],
                    record_index,
                    _now(),
                ),
            )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def resolve_error(self, lesson_id: int, resolution: str) -> None:
        """Mark lesson ``lesson_id`` resolved with what fixed it."""
        with connect(self.scope.database) as conn:
            conn.execute(
                "UPDATE lessons SET resolution = ?, resolved = ? WHERE id = ?",
                (resolution[:RESOLUTION_CHARS], _now(), lesson_id),
            )

    def open_lessons(self) -> list[Lesson]:
        """This session's unresolved lessons, oldest first."""
        with connect(self.scope.database) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM lessons WHERE org = ? AND team = ? AND session = ?"
                " AND resolved IS NULL ORDER BY id",
                (self.scope.org, self.scope.team, self.scope.session),
            ).fetchall()
        return [Lesson(*row) for row in rows]

    def relevant(self, hint: str, limit: int = 5) -> list[Lesson]:
        """Resolved lessons of other sessions, best match with ``hint`` first.

        A lesson matches by the hint words it contains; when none matches, the most
        recent few are returned, since a past mistake is worth a line even off-topic.
        """
        with connect(self.scope.database) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM lessons WHERE org = ? AND team = ? AND session != ?"
                " AND resolved IS NOT NULL ORDER BY resolved DESC, id DESC LIMIT 500",
                (self.scope.org, self.scope.team, self.scope.session),
            ).fetchall()
        lessons, seen = [], set()
        for lesson in (Lesson(*row) for row in rows):
            if (lesson.error_class, lesson.message) not in seen:
                seen.add((lesson.error_class, lesson.message))
                lessons.append(lesson)
        words = hint_words(hint)

        def score(x: Lesson) -> int:
            text = f"{x.error_class} {x.tool} {x.action} {x.message} {x.resolution}".casefold()
            return sum(1 for w in words if w in text)

        scores = {x.id: score(x) for x in lessons}
        matched = sorted((x for x in lessons if scores[x.id]), key=lambda x: -scores[x.id])
        return matched[:limit] or lessons[:RECENT_FALLBACK]
