"""Where a session lives on disk: ``<root>/<org>/<team>/<workspace>/<session>/`` (R8.1)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from contextengine.errors import ConfigError

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

DEFAULT_ROOT_NAME = ".contextengine/sessions"


def new_session_id() -> str:
    """A unique session id of 12 hex digits (48 random bits: unique in a store shared by
    millions of sessions).

    Every artifact path a ref or stub names holds it, and every later request reads those
    paths: a dated id (``YYYYmmdd-HHMMSS-<8 hex>``) cost 5 tokens more on each. Listings
    sort by the session's creation time instead.
    """
    return secrets.token_hex(6)


def safe_name(value: str, what: str) -> str:
    """Check that ``value`` is one plain path component (no separators, no ``..``)."""
    if not _SAFE.match(value) or value in {".", ".."}:
        raise ConfigError(f"{what} {value!r} must be a plain name (letters, digits, . _ -)")
    return value


@dataclass(frozen=True)
class SessionLayout:
    """The folder of one session and the files the engine keeps in it."""

    directory: Path

    @classmethod
    def under(
        cls, root: Path, org: str, team: str, workspace: str, session_id: str
    ) -> SessionLayout:
        """The layout for a session under ``root``; every component must be a plain name."""
        parts = [
            safe_name(org, "org"),
            safe_name(team, "team"),
            safe_name(workspace, "workspace name"),
            safe_name(session_id, "session id"),
        ]
        return cls(root.joinpath(*parts))

    def sibling(self, session_id: str) -> SessionLayout:
        """The layout of another session of the same workspace (a sub-agent's parent)."""
        return SessionLayout(self.directory.parent / safe_name(session_id, "session id"))

    @property
    def log(self) -> Path:
        """The append-only session log."""
        return self.directory / "session.jsonl"

    @property
    def usage_log(self) -> Path:
        """The per-call usage log (R1.6)."""
        return self.directory / "usage.jsonl"

    @property
    def requests(self) -> Path:
        """Every model request as sent, delta-encoded (``record_requests``)."""
        return self.directory / "requests.jsonl"

    @property
    def events(self) -> Path:
        """The server's numbered record of the session's streamed events (SSE resume)."""
        return self.directory / "events.jsonl"

    @property
    def artifacts(self) -> Path:
        """Externalized observations and other outputs."""
        return self.directory / "artifacts"

    @property
    def archive(self) -> Path:
        """Entries removed from the live view by compaction, kept verbatim."""
        return self.directory / "archive"
