"""One queued turn, run on a worker: lock the session, resume it from the store, stream events.

The turn is at-least-once (the broker re-delivers it when its worker dies) and made
exactly-once by the store: a PostgreSQL advisory lock per session keeps one worker on it at
a time (the lock goes when a dead worker's connection does), a turn already marked done is
skipped, and a turn a dead worker began continues from the record (``Agent.resume`` closes
the tool calls it left without a result as "interrupted"; none is re-run behind the
user's back) instead of recording the user's message a second time.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextengine.agent.events import AgentEvent, Done, ErrorEvent, RunResult
from contextengine.agent.loop import Agent
from contextengine.errors import ConfigError
from contextengine.providers.base import Provider
from contextengine.session.entries import UserEntry
from contextengine.session.meta import SessionMeta, load_meta
from contextengine.session.store.choice import StoreSettings
from contextengine.session.store.postgres import PostgresStore
from contextengine.workers.tables import TURN_LOCK_PREFIX, add_event, connect

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger(__name__)

ProviderFor = Callable[[SessionMeta], Provider]
Resume = Callable[[Path, Provider], Agent]
"""Resumes a session's agent from its folder with a provider (``Agent.resume`` with the
worker's config)."""

LOAD_TURN = """
SELECT t.session, s.directory, t.accepted_at, t.message, t.done
FROM contextengine_turns t JOIN contextengine_sessions s ON s.id = t.session
WHERE t.id = %s
"""
STOP_REQUESTED = "SELECT stop_requested FROM contextengine_turns WHERE id = %s"


@dataclass(frozen=True)
class QueuedTurn:
    """A turn a replica accepted: its session, the record's length then, the message."""

    id: int
    session: str
    directory: Path
    accepted_at: int
    message: str
    done: bool


def shared_store(config: StoreSettings) -> PostgresStore:
    """The PostgreSQL store turns on workers need (a file store cannot be shared)."""
    if config.store is None or not config.store.lower().startswith(("postgresql:", "postgres:")):
        raise ConfigError(
            f"turns on workers need a postgresql:// store, not {config.store or 'the files'!r}"
        )
    return PostgresStore(config.store)


def run_turn(turn_id: int, config: StoreSettings, provider_for: ProviderFor, resume: Resume) -> str:
    """Run queued turn ``turn_id`` to its ``done`` event: ``done``, ``skipped`` (a worker
    before this one finished it) or ``unknown`` (no such turn). The session's agent is
    ``resume``d with the provider ``provider_for`` its metadata."""
    with connect(shared_store(config)) as conn:
        turn = _load(conn, turn_id)
        if turn is None:
            return "unknown"
        # Held until the connection closes, also when this process dies.
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (TURN_LOCK_PREFIX + turn.session,))
        turn = _load(conn, turn_id)
        if turn is None or turn.done:
            return "skipped"
        _drive(conn, turn, provider_for, resume)
        return "done"


def _load(conn: psycopg.Connection[Any], turn_id: int) -> QueuedTurn | None:
    row = conn.execute(LOAD_TURN, (turn_id,)).fetchone()
    if row is None:
        return None
    session, directory, accepted_at, message, done = row
    return QueuedTurn(turn_id, session, Path(directory), accepted_at, message, done)


def _drive(
    conn: psycopg.Connection[Any], turn: QueuedTurn, provider_for: ProviderFor, resume: Resume
) -> None:
    agent: Agent | None = None
    try:
        provider = provider_for(load_meta(turn.directory))
        agent = resume(turn.directory, provider)
        recorded_at = _recorded_at(agent, turn.accepted_at)
        cancel = _StopFlag(conn, turn.id)
        for event in agent.stream(turn.message, cancel, recorded_at=recorded_at):
            if isinstance(event, Done):
                _finish(conn, turn, event)
                return
            add_event(conn, turn.session, event.type, _data(event))
    except Exception as exc:
        logger.exception("turn %s of session %s failed", turn.id, turn.session)
        text = f"{type(exc).__name__}: {exc}"
        add_event(conn, turn.session, ErrorEvent.type, _data(ErrorEvent("turn_failed", text)))
        _finish(conn, turn, Done(RunResult("", turn.directory, "error", 0, text)))
    finally:
        if agent is not None:
            agent.close()


class _StopFlag(threading.Event):
    """A turn's cancel token that reads the turn's ``stop_requested`` when the agent checks
    it (before each step, in the turn's thread), once per step rather than once per event."""

    def __init__(self, conn: psycopg.Connection[Any], turn_id: int) -> None:
        super().__init__()
        self._conn = conn
        self._turn_id = turn_id

    def is_set(self) -> bool:
        """Whether the turn was asked to stop."""
        if not super().is_set():
            row = self._conn.execute(STOP_REQUESTED, (self._turn_id,)).fetchone()
            if row and row[0]:
                self.set()
        return super().is_set()


def _recorded_at(agent: Agent, accepted_at: int) -> int | None:
    """Where a dead worker already recorded this turn's user entry (``None``: not yet).

    One turn per session runs at a time, so the first user entry after the record's
    length at acceptance is this turn's.
    """
    for record in agent.session.records[accepted_at:]:
        if isinstance(record.entry, UserEntry):
            return record.index
    return None


def _finish(conn: psycopg.Connection[Any], turn: QueuedTurn, done: Done) -> None:
    """The ``done`` event and the turn's end, together: a re-delivery sees both or neither."""
    with conn.transaction():
        add_event(conn, turn.session, Done.type, _data(done))
        conn.execute("UPDATE contextengine_turns SET done = true WHERE id = %s", (turn.id,))


def _data(event: AgentEvent) -> str:
    return json.dumps(event.payload(), default=str)
