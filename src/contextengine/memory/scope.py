"""Where a session sits in the session tree, and the shared files under its root.

A session folder is ``<root>/<org>/<team>/<workspace>/<session>/`` (R8.1). Lessons and
long-term memory live in one SQLite file at ``<root>/memory.sqlite3`` and are scoped by
org and team, so tenants of one root never see each other's memory.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from contextengine.errors import SessionLogError

MEMORY_DB = "memory.sqlite3"
PREFERENCES_FILE = "preferences.md"
BUSY_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SessionScope:
    """The root, org, team, workspace name and id of one session."""

    root: Path
    org: str
    team: str
    workspace: str
    session: str

    @classmethod
    def of(cls, session_dir: Path) -> SessionScope:
        """The scope of a session folder laid out as ``<root>/<org>/<team>/<ws>/<session>``."""
        d = session_dir.resolve()
        if len(d.parents) < 4:
            # a folder copied out of its session tree has no root to keep shared memory in
            raise SessionLogError(
                f"{d}: not inside a session tree (<root>/<org>/<team>/<workspace>/<session>); "
                "copy the whole session root, not the session folder alone"
            )
        return cls(d.parents[3], d.parents[2].name, d.parents[1].name, d.parent.name, d.name)

    @property
    def database(self) -> Path:
        """The lessons and long-term memory database shared by every session of the root."""
        return self.root / MEMORY_DB

    def private_to(self, workspace: Path) -> tuple[Path, ...]:
        """What the tools working in ``workspace`` must never reach: the whole session tree
        (every session, the long-term memory), or, when its root is the workspace itself,
        this org's sessions and the memory database."""
        if self.root.resolve() == workspace.resolve():
            return (self.root / self.org, self.database)
        return (self.root,)

    @property
    def preferences(self) -> Path:
        """The user preferences file of the org and team (optional, written by people)."""
        return self.root / self.org / self.team / PREFERENCES_FILE


@contextlib.contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A short-lived connection that commits on success (safe across threads)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    try:
        with conn:
            yield conn
    finally:
        conn.close()
