"""The server's sessions: found on disk, one agent and one event channel each.

Sessions are discovered from the session root on every lookup, so a session made before
a restart (or by the CLI) is listed and resumed like any other. A session can be searched
for, renamed (a title file) and deleted (moved to the trash, ``session.manage``). Loaded agents and channels
not used for ``Config.server_idle_s`` are closed and dropped (``evict_idle``), so memory
stays bounded however many sessions are opened.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from contextengine.agent.loop import Agent
from contextengine.providers.base import Provider
from contextengine.server.channel import SessionChannel
from contextengine.server.errors import ApiError
from contextengine.server.eventlog import EventLog
from contextengine.session.entries import UserEntry
from contextengine.session.folders import sessions_root, workspace_sessions
from contextengine.session.layout import SessionLayout
from contextengine.session.listing import session_title
from contextengine.session.manage import custom_title, set_title, trash_session
from contextengine.session.meta import SessionMeta, read_meta
from contextengine.session.store.choice import StoreSettings, open_store
from contextengine.types import TurnInfo

ProviderFactory = Callable[[], Provider]

# The session list may lag sessions made outside the server (the CLI) by this long; a
# session looked up by id is always searched on disk afresh.
SCAN_MAX_AGE_S = 1.0


@dataclass(frozen=True)
class SessionInfo:
    """What the session picker shows about a session (``parent``: the session that
    delegated it, for a sub-agent's)."""

    id: str
    created: str
    model: str
    title: str
    busy: bool
    turn: TurnInfo | None
    parent: str | None = None
    question: str | None = None


@dataclass(frozen=True)
class StoreStatus:
    """What the server holds in memory now: loaded agents, open channels, running turns."""

    agents: int
    channels: int
    turns: int


class ServerSettings(StoreSettings, Protocol):
    """Where the server's sessions are kept and how long an unused agent stays loaded
    (``Config`` has these settings)."""

    @property
    def server_idle_s(self) -> float:
        """Seconds an unused session agent stays loaded."""
        ...


NewAgent = Callable[[Provider, Path], Agent]
"""A new session's agent in a workspace (``Agent`` with the server's config)."""
ResumeAgent = Callable[[Path, Provider], Agent]
"""A stored session's agent, from its folder (``Agent.resume`` with the server's config)."""


class SessionStore:
    """The sessions of one workspace, their loaded agents and their event channels."""

    def __init__(
        self,
        workspace: Path,
        provider_factory: ProviderFactory,
        config: ServerSettings,
        new_agent: NewAgent,
        resume_agent: ResumeAgent,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.config = config
        self._new_agent = new_agent
        self._resume_agent = resume_agent
        self.kept_in = open_store(config)
        self._provider_factory = provider_factory
        self._agents: dict[str, Agent] = {}
        self._used: dict[str, float] = {}
        self._channels: dict[str, SessionChannel] = {}
        self._metas: dict[Path, SessionMeta] = {}
        self._titles: dict[Path, tuple[str, str]] = {}
        self._scanned: tuple[float, dict[str, Path]] = (float("-inf"), {})
        self._lock = threading.Lock()

    def status(self) -> StoreStatus:
        """How much the server holds in memory now."""
        with self._lock:
            turns = sum(1 for c in self._channels.values() if c.turn is not None)
            return StoreStatus(len(self._agents), len(self._channels), turns)

    def create(self) -> SessionInfo:
        """Start a new session in the workspace."""
        agent = self._new_agent(self._provider_factory(), self.workspace)
        with self._lock:
            self._agents[agent.session.id] = agent
            self._used[agent.session.id] = time.monotonic()
        return self.info(agent.session.id)

    def sessions(self, search: str | None = None) -> list[SessionInfo]:
        """The workspace's sessions on disk, newest first; with ``search``, only those whose
        id, title or user messages hold it (ignoring case)."""
        with self._lock:
            loaded = {sid: agent.session_dir for sid, agent in self._agents.items()}
        on_disk = {**self._scan(max_age=SCAN_MAX_AGE_S), **loaded}
        found = [self._describe(sid, directory) for sid, directory in on_disk.items()]
        if search and search.strip():
            needle = search.strip().casefold()
            found = [s for s in found if self._matches(s, on_disk[s.id], needle)]
        return sorted(found, key=lambda s: (s.created, s.id), reverse=True)

    def _matches(self, info: SessionInfo, directory: Path, needle: str) -> bool:
        if needle in info.id.casefold() or needle in info.title.casefold():
            return True
        entries = self.kept_in.entries(SessionLayout(directory))
        return any(isinstance(e, UserEntry) and needle in e.text.casefold() for e in entries)

    def rename(self, session_id: str, title: str) -> SessionInfo:
        """Give the session ``title`` (an empty one brings back its first message)."""
        set_title(self.directory(session_id), title)
        return self.info(session_id)

    def delete(self, session_id: str) -> Path:
        """Move the session to the trash (not while a turn runs); where it went."""
        directory = self.directory(session_id)
        with self._lock:
            channel = self._channels.get(session_id)
            if channel is not None and channel.turn is not None:
                raise ApiError(409, f"session {session_id!r} is running a turn; stop it first")
            self._channels.pop(session_id, None)
            agent = self._agents.pop(session_id, None)
            self._used.pop(session_id, None)
            self._metas.pop(directory, None)
            self._titles.pop(directory, None)
            self._scanned = (float("-inf"), {})
        if channel is not None:
            channel.close()
        if agent is not None:
            agent.close()
        root = sessions_root(self.workspace, self.config).parent.parent
        return trash_session(directory, root)

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

    def channel(self, session_id: str) -> SessionChannel:
        """The session's event channel, opened on first use."""
        with self._lock:
            channel = self._channels.get(session_id)
        if channel is None:
            log = EventLog(SessionLayout(self.directory(session_id)).events)
            with self._lock:
                channel = self._channels.setdefault(session_id, SessionChannel(session_id, log))
        channel.last_used = time.monotonic()
        return channel

    def agent(self, session_id: str) -> Agent:
        """The session's agent, resumed from disk on first use."""
        with self._lock:
            agent = self._agents.get(session_id)
            self._used[session_id] = time.monotonic()
        if agent is None:
            loaded = self._resume_agent(self.directory(session_id), self._provider_factory())
            with self._lock:
                agent = self._agents.setdefault(session_id, loaded)
            if agent is not loaded:
                loaded.close()
        return agent

    def evict_idle(self) -> None:
        """Close and drop agents and channels unused for ``server_idle_s`` and not mid-turn."""
        oldest = time.monotonic() - self.config.server_idle_s
        with self._lock:
            for sid, channel in list(self._channels.items()):
                if channel.idle and channel.last_used < oldest:
                    del self._channels[sid]
                    channel.close()
            for sid, agent in list(self._agents.items()):
                if sid not in self._channels and self._used.get(sid, 0.0) < oldest:
                    del self._agents[sid]
                    self._used.pop(sid, None)
                    agent.close()

    def _scan(self, max_age: float = 0.0) -> dict[str, Path]:
        """The workspace's sessions on disk (a listing at most ``max_age`` seconds old)."""
        with self._lock:
            scanned_at, found = self._scanned
        if time.monotonic() - scanned_at <= max_age:
            return found
        found = workspace_sessions(self.workspace, self.config, self._meta)
        with self._lock:
            self._scanned = (time.monotonic(), found)
        return found

    def _meta(self, directory: Path) -> SessionMeta | None:
        # session.json is written once, when the session is made: read it once.
        with self._lock:
            meta = self._metas.get(directory)
        if meta is None:
            meta = read_meta(directory)
            if meta is None:
                return None
            with self._lock:
                self._metas[directory] = meta
        return meta

    def _describe(self, session_id: str, directory: Path) -> SessionInfo:
        with self._lock:
            titled = self._titles.get(directory)
            channel = self._channels.get(session_id)
        if titled is None:
            layout = SessionLayout(directory)
            header = self.kept_in.header(layout)
            created = header.created if header is not None else ""
            titled = (created, session_title(self.kept_in.entries(layout)))
            if titled[1]:  # the first user message never changes once it is there
                with self._lock:
                    self._titles[directory] = titled
        turn = channel.turn if channel is not None else None
        meta = self._meta(directory)
        return SessionInfo(
            id=session_id,
            created=titled[0],
            model=meta.provider.model if meta else "",
            title=custom_title(directory) or titled[1],
            busy=turn is not None,
            turn=turn,
            parent=meta.parent if meta else None,
            question=channel.question if channel is not None else None,
        )
