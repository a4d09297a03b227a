"""The PostgreSQL tables turns on workers share: queued turns and numbered session events.

A turn row is written by the replica that accepted the message and marked ``done`` by the
worker in the same transaction as the turn's ``done`` event, so a turn re-delivered after
its worker died can tell whether it already finished. At most one turn per session is open
(a unique partial index), which is the API's 409; its ``first_event`` is the id its events
start at. A replica asks the open turn to stop by setting its ``stop_requested``, which the
worker reads before each step of the turn. Events are numbered
per session (the SSE ids); every insert notifies ``contextengine_events`` with the session
id so replicas that ``LISTEN`` wake up and read the rows after the last id they sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextengine.session.store.postgres import PostgresStore

if TYPE_CHECKING:
    import psycopg

EVENTS_CHANNEL = "contextengine_events"
SCHEMA_LOCK = 0x636F6E75  # advisory lock id for creating these tables once
TURN_LOCK_PREFIX = "contextengine-turn:"  # hashed with the session id: one turn at a time
_READY: set[str] = set()

SCHEMA = """
CREATE TABLE IF NOT EXISTS contextengine_turns (
    id bigserial PRIMARY KEY,
    session text NOT NULL REFERENCES contextengine_sessions (id),
    accepted_at integer NOT NULL,
    message text NOT NULL,
    done boolean NOT NULL DEFAULT false
);
ALTER TABLE contextengine_turns
    ADD COLUMN IF NOT EXISTS stop_requested boolean NOT NULL DEFAULT false,
    ADD COLUMN IF NOT EXISTS first_event bigint;
CREATE UNIQUE INDEX IF NOT EXISTS contextengine_turns_open
    ON contextengine_turns (session) WHERE NOT done;
CREATE TABLE IF NOT EXISTS contextengine_events (
    session text NOT NULL REFERENCES contextengine_sessions (id),
    id bigint NOT NULL CHECK (id > 0),
    event text NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (session, id)
);
"""

INSERT_EVENT = """
WITH added AS (
    INSERT INTO contextengine_events (session, id, event, data)
    SELECT %(session)s, COALESCE(MAX(id), 0) + 1, %(event)s, %(data)s
    FROM contextengine_events WHERE session = %(session)s
    RETURNING id
)
SELECT id, pg_notify('contextengine_events', %(session)s) FROM added
"""


def connect(store: PostgresStore) -> psycopg.Connection[Any]:
    """A connection to the store's database with the turn and event tables made once."""
    conn = store.connect()
    if store.url not in _READY:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            conn.execute(SCHEMA)
        _READY.add(store.url)
    return conn


def add_event(conn: psycopg.Connection[Any], session: str, event: str, data: str) -> int:
    """Record one event of ``session`` under its next id (and notify the replicas); the id."""
    row = conn.execute(INSERT_EVENT, {"session": session, "event": event, "data": data}).fetchone()
    assert row is not None
    return int(row[0])
