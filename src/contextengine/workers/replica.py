"""A server replica's side of turns on workers: accept a message, follow a session's events.

A replica holds no ``Agent``: a message becomes a turn row and a broker message, and the
events a worker records are read back from PostgreSQL. One thread per replica ``LISTEN``s
to the events channel and wakes the streams of the notified session; each stream then reads
the rows after the last id it sent, so a missed notification delays an event (at most
``POLL_S``) but never loses or repeats one.

Queries go through a connection pool that checks each connection before lending it, so a
PostgreSQL restart costs the requests made while the server is down (a ``StoreError``, 503)
and nothing after: the next request gets a new connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextengine.errors import ContextEngineError, StoreError
from contextengine.types import TurnInfo
from contextengine.workers.engine import WorkerSettings, celery_app, enqueue
from contextengine.workers.tables import EVENTS_CHANNEL, connect
from contextengine.workers.turns import shared_store

if TYPE_CHECKING:
    import psycopg

POLL_S = 1.0  # a stream re-reads this often even without a notification
POOL_SIZE = 8  # connections a replica's requests share
DONE = "done"

ACCEPT = """
INSERT INTO contextengine_turns (session, accepted_at, message, first_event)
SELECT %(session)s, COALESCE(MAX(idx) + 1, 0), %(message)s, %(first_event)s
FROM contextengine_records WHERE session = %(session)s
ON CONFLICT DO NOTHING
RETURNING id
"""
LAST_EVENT = "SELECT COALESCE(MAX(id), 0) FROM contextengine_events WHERE session = %s"
REQUEST_STOP = """
UPDATE contextengine_turns SET stop_requested = true
WHERE session = %s AND NOT done
RETURNING COALESCE(first_event, 1), accepted_at, message
"""
OPEN_TURNS = """
SELECT session, COALESCE(first_event, 1), accepted_at, message
FROM contextengine_turns WHERE NOT done
"""
OPEN_TURN = "SELECT EXISTS (SELECT 1 FROM contextengine_turns WHERE session = %s AND NOT done)"
READ_AFTER = """
SELECT id, event, data FROM contextengine_events
WHERE session = %s AND id > %s ORDER BY id LIMIT 500
"""


@dataclass(frozen=True)
class WorkerEvent:
    """One recorded event of a session: its id, SSE event name and JSON payload text."""

    id: int
    event: str
    data: str


@dataclass(frozen=True)
class Follow:
    """What a stream sends: events after ``after``; live ones until a ``done`` after
    ``until_done_after`` (``None``: only what is recorded now)."""

    after: int
    until_done_after: int | None


class TurnDispatcher:
    """Accepts turns for workers and streams the events they record."""

    def __init__(self, config: WorkerSettings) -> None:
        self.store = shared_store(config)
        self.celery = celery_app(config)
        connect(self.store).close()  # the turn and event tables, made once
        self._pool = self.store.pool(POOL_SIZE)
        self._waiting: dict[str, set[asyncio.Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._listener: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start listening for events (notifications wake streams on ``loop``)."""
        self._loop = loop
        self._listener = threading.Thread(
            target=self._listen, name="contextengine-listen", daemon=True
        )
        self._listener.start()

    def stop(self) -> None:
        """Stop listening and close the connection."""
        self._stop.set()
        if self._listener is not None:
            self._listener.join(timeout=5)
        self._pool.close()

    @contextlib.contextmanager
    def _db(self) -> Iterator[psycopg.Connection[Any]]:
        """A checked connection from the pool; a lost server is a ``StoreError``."""
        with self.store.errors(), self._pool.connection() as conn:
            yield conn

    def accept(self, session: str, message: str) -> Follow | None:
        """Queue ``message`` as ``session``'s next turn; ``None`` when a turn is open."""
        with self._db() as conn, conn.transaction():
            last = _scalar(conn, LAST_EVENT, (session,))
            row = conn.execute(
                ACCEPT, {"session": session, "message": message, "first_event": last + 1}
            ).fetchone()
        if row is None:
            return None
        try:
            enqueue(self.celery, int(row[0]))
        except Exception as exc:
            with self._db() as conn:
                conn.execute("DELETE FROM contextengine_turns WHERE id = %s", (row[0],))
            raise ContextEngineError(f"broker: cannot queue the turn ({exc})") from None
        return Follow(last, last)

    def open_turns(self) -> dict[str, TurnInfo]:
        """Every session's queued or running turn, by session id."""
        with self._db() as conn:
            rows = conn.execute(OPEN_TURNS).fetchall()
        return {str(row[0]): _turn_of(row[1:]) for row in rows}

    def cancel(self, session: str) -> TurnInfo | None:
        """Ask the worker on ``session``'s open turn to stop before its next step (a worker
        that has not started it yet ends it at once); that turn, ``None`` when none is open."""
        with self._db() as conn, conn.transaction():
            row = conn.execute(REQUEST_STOP, (session,)).fetchone()
        return None if row is None else _turn_of(row)

    def follow(self, session: str, after: int) -> Follow:
        """Events after ``after``, and the open turn's live ones to its ``done``."""
        with self._db() as conn, conn.transaction():
            running = bool(_scalar(conn, OPEN_TURN, (session,)))
            last = _scalar(conn, LAST_EVENT, (session,))
        if after > last:
            raise ContextEngineError(
                f"Last-Event-ID {after} is after this session's last event {last}"
            )
        return Follow(after, last if running else None)

    def has_more(self, session: str, follow: Follow) -> bool:
        """Whether ``follow`` sends anything at all."""
        if follow.until_done_after is not None:
            return True
        with self._db() as conn:
            return follow.after < _scalar(conn, LAST_EVENT, (session,))

    async def events(self, session: str, follow: Follow) -> AsyncIterator[WorkerEvent]:
        """The events ``follow`` names, in id order, each once."""
        wake = asyncio.Event()
        self._waiting.setdefault(session, set()).add(wake)
        after = follow.after
        try:
            while True:
                wake.clear()
                try:
                    rows = await asyncio.to_thread(self._read_after, session, after)
                except StoreError:
                    rows = []  # the database is away: the stream waits for it, then resumes
                    if follow.until_done_after is None:
                        raise
                for event in rows:
                    yield event
                    after = event.id
                    end = follow.until_done_after
                    if end is not None and event.event == DONE and event.id > end:
                        return
                if follow.until_done_after is None and not rows:
                    return
                if not rows:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), POLL_S)
        finally:
            self._waiting[session].discard(wake)
            if not self._waiting[session]:
                del self._waiting[session]

    def _read_after(self, session: str, after: int) -> list[WorkerEvent]:
        with self._db() as conn:
            rows = conn.execute(READ_AFTER, (session, after)).fetchall()
        return [WorkerEvent(int(i), str(e), str(d)) for i, e, d in rows]

    def _listen(self) -> None:
        """In the listener thread: wake the streams of each notified session."""
        while not self._stop.is_set():
            try:
                with connect(self.store) as conn:
                    conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    self._wake_all()  # whatever was recorded while not listening
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=POLL_S):
                            self._wake(note.payload)
            except Exception:
                self._stop.wait(POLL_S)  # the database is away: streams keep polling

    def _wake(self, session: str) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._set, session)

    def _wake_all(self) -> None:
        for session in list(self._waiting):
            self._wake(session)

    def _set(self, session: str) -> None:
        for wake in self._waiting.get(session, ()):
            wake.set()


def _scalar(conn: psycopg.Connection[Any], sql: str, params: tuple[Any, ...]) -> int:
    row = conn.execute(sql, params).fetchone()
    assert row is not None
    return int(row[0])


def _turn_of(row: Sequence[Any]) -> TurnInfo:
    """The turn from a row's first event, record length at acceptance and message."""
    first_event, accepted_at, message = row
    return TurnInfo(int(first_event), int(accepted_at), str(message))
