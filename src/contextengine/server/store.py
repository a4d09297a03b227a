"""The server's sessions: found on disk, one agent each, one turn at a time.

Sessions are discovered from the session root on every lookup, so a session made before
a restart (or by the CLI) is listed and resumed like any other.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from contextengine.agent.loop import META_FILE, Agent
from contextengine.config import Config
from contextengine.providers.base import Provider
from contextengine.server.errors import ApiError
from contextengine.server.history import read_header, session_title
from contextengine.session.layout import DEFAULT_ROOT_NAME, SessionLayout

ProviderFactory = Callable[[], Provider]


@dataclass(frozen=True)
class SessionInfo:
    """What the session picker shows about a session."""

    id: str
    created: str
    model: str
    title: str
    busy: bool


class SessionStore:
    """The sessions of one workspace, their loaded agents, and which one is mid-turn."""

    def __init__(self, workspace: Path, provider_factory: ProviderFactory, config: Config) -> None:
        self.workspace = Path(workspace).resolve()
        self.config = config
        self.root = Path(config.root) if config.root else self.workspace / DEFAULT_ROOT_NAME
        self._provider_factory = provider_factory
        self._agents: dict[str, Agent] = {}
        self._busy: set[str] = set()
        self._lock = threading.Lock()

    def create(self) -> SessionInfo:
        """Start a new session in the workspace."""
        agent = Agent(self._provider_factory(), self.workspace, self.config)
        with self._lock:
            self._agents[agent.session.id] = agent
        return self.info(agent.session.id)

    def sessions(self) -> list[SessionInfo]:
        """Every session of the workspace on disk, newest first."""
        found = [self._describe(sid, directory) for sid, directory in self._scan().items()]
        return sorted(found, key=lambda s: (s.created, s.id), reverse=True)

    def info(self, session_id: str) -> SessionInfo:
        """One session's description."""
        return self._describe(session_id, self.directory(session_id))

    def directory(self, session_id: str) -> Path:
        """The session's folder, or a 404 naming the session."""
        with self._lock:
            agent = self._agents.get(session_id)
        if agent is not None:
            return agent.session_dir
        directory = self._scan().get(session_id)
        if directory is None:
            raise ApiError(404, f"no session {session_id!r} in workspace {self.workspace}")
        return directory

    def claim(self, session_id: str) -> None:
        """Mark the session mid-turn, or a 409 when a turn is already running."""
        with self._lock:
            if session_id in self._busy:
                raise ApiError(
                    409,
                    f"session {session_id!r} is already running a turn; "
                    "wait for its 'done' event before sending another message",
                )
            self._busy.add(session_id)

    def release(self, session_id: str) -> None:
        """The session's turn is over (calling it twice is harmless)."""
        with self._lock:
            self._busy.discard(session_id)

    def agent(self, session_id: str) -> Agent:
        """The session's agent, resumed from disk on first use."""
        with self._lock:
            agent = self._agents.get(session_id)
        if agent is not None:
            return agent
        agent = Agent.resume(self.directory(session_id), self._provider_factory(), self.config)
        with self._lock:
            return self._agents.setdefault(session_id, agent)

    def _scan(self) -> dict[str, Path]:
        base = self.root / self.config.org / self.config.team
        found: dict[str, Path] = {}
        for meta_path in base.glob(f"*/*/{META_FILE}"):
            if not SessionLayout(meta_path.parent).log.is_file():
                continue  # a creation that was killed before its log appeared
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(meta, dict) and meta.get("workspace") == str(self.workspace):
                found[meta_path.parent.name] = meta_path.parent
        return found

    def _describe(self, session_id: str, directory: Path) -> SessionInfo:
        log = SessionLayout(directory).log
        try:
            meta = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        with self._lock:
            busy = session_id in self._busy
        return SessionInfo(
            id=session_id,
            created=str(read_header(log).get("created", "")),
            model=str(meta.get("model", "")) if isinstance(meta, dict) else "",
            title=session_title(log),
            busy=busy,
        )
