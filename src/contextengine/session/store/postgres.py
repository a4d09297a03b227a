"""The shared store: sessions as rows in PostgreSQL, so any machine can continue any session.

The record is one row per entry keyed by (session, index); an append is one transaction that
inserts the row only if the index before it exists (ordered, gapless) and, for a compaction,
the archive in the same transaction (the summary never lands without it). A repeated index
compares entries: the same is a no-op, a different one an ``AppendConflictError``. Usage lines
and the memory files are rows too; the memory files are also written to the session folder as
the working copy people and file tools read. Artifacts stay files in the session folder
(put the sessions root on a shared file system).

A server that goes away (restarted, stopped) is a ``StoreError`` naming the store, never a
driver exception; a session's next call connects again, so a failed step can be retried
once the server is back (an append that may have landed is recognised as a repeat).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextengine.errors import AppendConflictError, SessionLogError, StoreError
from contextengine.session.entries import Entry
from contextengine.session.layout import SessionLayout
from contextengine.session.log import (
    LoadReport,
    LogRecord,
    RecordView,
    SessionHeader,
    parse_header,
    parse_records,
)
from contextengine.session.store.files import FolderFiles
from contextengine.session.store.protocol import Archive

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

CONNECT_TIMEOUT_S = 5
SCHEMA_LOCK = 0x636F6E74  # advisory lock id: concurrent first connections create tables once
_SCHEMA_READY: set[str] = set()  # databases this process has made the tables in

SCHEMA = """
CREATE TABLE IF NOT EXISTS contextengine_sessions (
    id text PRIMARY KEY,
    directory text NOT NULL UNIQUE,
    header text NOT NULL
);
CREATE TABLE IF NOT EXISTS contextengine_records (
    session text NOT NULL REFERENCES contextengine_sessions (id),
    idx integer NOT NULL CHECK (idx >= 0),
    line text NOT NULL,
    PRIMARY KEY (session, idx)
);
CREATE TABLE IF NOT EXISTS contextengine_archives (
    session text NOT NULL REFERENCES contextengine_sessions (id),
    name text NOT NULL,
    body text NOT NULL,
    PRIMARY KEY (session, name)
);
CREATE TABLE IF NOT EXISTS contextengine_usage (
    n bigserial PRIMARY KEY,
    session text NOT NULL REFERENCES contextengine_sessions (id),
    line text NOT NULL
);
CREATE INDEX IF NOT EXISTS contextengine_usage_session ON contextengine_usage (session, n);
CREATE TABLE IF NOT EXISTS contextengine_memory (
    session text NOT NULL REFERENCES contextengine_sessions (id),
    name text NOT NULL,
    content text NOT NULL,
    PRIMARY KEY (session, name)
);
"""

INSERT_NEXT = """
INSERT INTO contextengine_records (session, idx, line)
SELECT %(session)s, %(idx)s, %(line)s
WHERE %(idx)s = 0 OR EXISTS (
    SELECT 1 FROM contextengine_records WHERE session = %(session)s AND idx = %(idx)s - 1
)
ON CONFLICT (session, idx) DO NOTHING
"""


def shown_url(url: str) -> str:
    """``url`` without its password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def store_errors(url: str) -> Iterator[None]:
    """Turn the driver's errors inside into a ``StoreError`` naming the store ``url``."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise StoreError(f"store {shown_url(url)}: {first_line(exc)}") from None


class PostgresStore:
    """Sessions in a PostgreSQL database named by a ``postgresql://`` URL."""

    def __init__(self, url: str) -> None:
        self._url = url

    @property
    def url(self) -> str:
        """The URL, password hidden."""
        return shown_url(self._url)

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection (autocommit; transactions are explicit), the tables made once."""
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                f"store {self.url}: the PostgreSQL driver is not installed"
                " (pip install 'contextengine[postgres]')"
            ) from None
        try:
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except (psycopg.Error, ValueError) as exc:
            raise StoreError(f"store {self.url}: cannot connect ({first_line(exc)})") from None
        if self._url not in _SCHEMA_READY:
            with self.errors(), conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                conn.execute(SCHEMA)
            _SCHEMA_READY.add(self._url)
        return conn

    def pool(self, max_size: int) -> ConnectionPool[psycopg.Connection[Any]]:
        """Up to ``max_size`` connections like ``connect``'s, each checked before it is lent:
        one lost when the server restarted is replaced, not handed out."""
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError(
                f"store {self.url}: the PostgreSQL pool is not installed"
                " (pip install 'contextengine[postgres]')"
            ) from None
        self.check()  # a server that cannot be reached fails now, and the tables are made
        return ConnectionPool(
            self._url,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
            min_size=1,
            max_size=max_size,
            check=ConnectionPool.check_connection,
            timeout=CONNECT_TIMEOUT_S,
            name=self.url,
            open=True,  # the replica uses it at once; the default is to change (psycopg_pool 3.2)
        )

    def errors(self) -> contextlib.AbstractContextManager[None]:
        """Driver errors inside become a ``StoreError`` naming this store."""
        return store_errors(self._url)

    def create(
        self, layout: SessionLayout, header: SessionHeader, durable: bool
    ) -> PostgresSession:
        """A new session row for ``layout``'s folder; an error when one exists."""
        import psycopg

        conn = self.connect()
        try:
            with self.errors():
                conn.execute(
                    "INSERT INTO contextengine_sessions (id, directory, header)"
                    " VALUES (%s, %s, %s)",
                    (header.session_id, _key(layout), header.to_json()),
                )
        except StoreError as exc:
            conn.close()
            if isinstance(exc.__context__, psycopg.errors.UniqueViolation):
                raise SessionLogError(
                    f"{layout.directory}: a session already exists here (store {self.url})"
                ) from None
            raise
        layout.artifacts.mkdir(parents=True, exist_ok=True)
        return PostgresSession(self, conn, layout, header, [], durable)

    def open(self, layout: SessionLayout) -> tuple[PostgresSession, LoadReport]:
        """The session of ``layout``'s folder, every record read back in order."""
        conn = self.connect()
        try:
            with self.errors():
                row = conn.execute(
                    "SELECT header FROM contextengine_sessions WHERE directory = %s",
                    (_key(layout),),
                ).fetchone()
        except StoreError:
            conn.close()
            raise
        if row is None:
            conn.close()
            raise SessionLogError(f"{layout.directory}: no session in store {self.url}")
        header = parse_header(layout.log, row[0].encode("utf-8"))
        session = PostgresSession(self, conn, layout, header, [], durable=True)
        session.catch_up()
        return session, LoadReport()

    def check(self) -> None:
        """Connect once (the tables are made then)."""
        self.connect().close()

    def exists(self, layout: SessionLayout) -> bool:
        """Whether a session was created for ``layout``'s folder."""
        return self.header(layout) is not None

    def header(self, layout: SessionLayout) -> SessionHeader | None:
        """The header of ``layout``'s session, ``None`` when there is none."""
        with self.connect() as conn, self.errors():
            row = conn.execute(
                "SELECT header FROM contextengine_sessions WHERE directory = %s", (_key(layout),)
            ).fetchone()
        return None if row is None else parse_header(layout.log, row[0].encode("utf-8"))

    def entries(self, layout: SessionLayout) -> Iterator[Entry]:
        """The entries of ``layout``'s session, in order (none when there is no session)."""
        with self.connect() as conn, self.errors():
            rows = conn.execute(
                "SELECT r.line FROM contextengine_records r JOIN contextengine_sessions s"
                " ON s.id = r.session WHERE s.directory = %s ORDER BY r.idx",
                (_key(layout),),
            ).fetchall()
        for (line,) in rows:
            yield from (r.entry for r in parse_records(str(layout.directory), line.encode()))

    def usage(self, layout: SessionLayout) -> list[str]:
        """The usage rows of ``layout``'s session, in insertion order."""
        with self.connect() as conn, self.errors():
            rows = conn.execute(
                "SELECT u.line FROM contextengine_usage u JOIN contextengine_sessions s"
                " ON s.id = u.session WHERE s.directory = %s ORDER BY u.n",
                (_key(layout),),
            ).fetchall()
        return [line for (line,) in rows]


class PostgresSession:
    """One session's rows, over its own connection (made again after the server was away)."""

    def __init__(
        self,
        store: PostgresStore,
        conn: psycopg.Connection[Any],
        layout: SessionLayout,
        header: SessionHeader,
        records: list[LogRecord],
        durable: bool,
    ) -> None:
        self._store = store
        self._conn = conn
        self._layout = layout
        self._header = header
        self._records = records
        self._memory = FolderFiles(layout.directory, durable)

    @property
    def header(self) -> SessionHeader:
        """The session's header."""
        return self._header

    @property
    def records(self) -> Sequence[LogRecord]:
        """The records read so far, in order (a live read-only view)."""
        return RecordView(self._records)

    @property
    def _id(self) -> str:
        return self._header.session_id

    def _live(self) -> psycopg.Connection[Any]:
        """The connection; a new one when the last was lost (the server restarted)."""
        if self._conn.closed or self._conn.broken:
            self._conn.close()
            self._conn = self._store.connect()
        return self._conn

    def _execute(self, sql: str, params: Any) -> psycopg.Cursor[Any]:
        """Run ``sql`` (its rows fetched): a lost server is a ``StoreError``."""
        with self._store.errors():
            return self._live().execute(sql, params)

    def append(self, record: LogRecord, archive: Archive | None = None) -> bool:
        """Insert the record, with its archive in the same transaction; see the module doc."""
        params = {"session": self._id, "idx": record.index}
        # a lone INSERT is its own transaction: one round trip per plain append
        with self._store.errors(), self._transaction(archive is not None):
            if archive is not None:
                self._execute(
                    "INSERT INTO contextengine_archives (session, name, body) VALUES (%s, %s, %s)"
                    " ON CONFLICT (session, name) DO UPDATE SET body = EXCLUDED.body",
                    (self._id, archive.name, archive.to_bytes().decode("utf-8")),
                )
            line = record.to_json()
            written = self._execute(INSERT_NEXT, {**params, "line": line}).rowcount == 1
            if not written:
                self._check_repeat(record)
        if written and record.index == len(self._records):
            self._records.append(record)  # its index was free, so nothing before it is unseen
        else:
            self.catch_up()
        if archive is not None:
            # the working copy the model's file tools can read; the row is the record
            self._memory.save_memory(archive.name, archive.to_bytes().decode("utf-8"))
        return written

    def _transaction(self, needed: bool) -> contextlib.AbstractContextManager[Any]:
        return self._live().transaction() if needed else contextlib.nullcontext()

    def _check_repeat(self, record: LogRecord) -> None:
        row = self._execute(
            "SELECT line FROM contextengine_records WHERE session = %s AND idx = %s",
            (self._id, record.index),
        ).fetchone()
        if row is None:
            raise SessionLogError(
                f"{self._where}: append of index {record.index}, expected {self._next_index()}"
            )
        held = parse_records(self._where, row[0].encode("utf-8"))[0]
        if not held.same_as(record):
            raise AppendConflictError(
                f"{self._where}: index {record.index} already holds a different entry"
                f" ({held.entry.kind}, not {record.entry.kind})"
            )

    def _next_index(self) -> int:
        row = self._execute(
            "SELECT count(*) FROM contextengine_records WHERE session = %s", (self._id,)
        ).fetchone()
        return int(row[0]) if row else 0

    def catch_up(self) -> None:
        """Read the records appended (by any writer) since this session last looked."""
        rows = self._execute(
            "SELECT line FROM contextengine_records WHERE session = %s AND idx >= %s ORDER BY idx",
            (self._id, len(self._records)),
        ).fetchall()
        for (line,) in rows:
            self._records.extend(parse_records(self._where, line.encode("utf-8")))

    def read_archive(self, name: str) -> tuple[LogRecord, ...]:
        """The records a compaction archived under ``name``."""
        row = self._execute(
            "SELECT body FROM contextengine_archives WHERE session = %s AND name = %s",
            (self._id, name),
        ).fetchone()
        if row is None:
            raise SessionLogError(f"{self._where}: no archive {name!r}")
        return parse_records(f"{self._where} {name}", row[0].encode("utf-8"))

    def append_usage(self, line: str) -> None:
        """Insert one usage row."""
        self._execute(
            "INSERT INTO contextengine_usage (session, line) VALUES (%s, %s)", (self._id, line)
        )

    def usage_lines(self) -> list[str]:
        """The usage rows in insertion order."""
        rows = self._execute(
            "SELECT line FROM contextengine_usage WHERE session = %s ORDER BY n", (self._id,)
        ).fetchall()
        return [line for (line,) in rows]

    def save_memory(self, name: str, text: str) -> None:
        """Upsert the memory row, then the working copy in the folder."""
        self._execute(
            "INSERT INTO contextengine_memory (session, name, content) VALUES (%s, %s, %s)"
            " ON CONFLICT (session, name) DO UPDATE SET content = EXCLUDED.content",
            (self._id, name, text),
        )
        self._memory.save_memory(name, text)

    def append_memory(self, name: str, text: str) -> None:
        """Extend the memory row, then the working copy in the folder."""
        self._execute(
            "INSERT INTO contextengine_memory (session, name, content) VALUES (%s, %s, %s)"
            " ON CONFLICT (session, name)"
            " DO UPDATE SET content = contextengine_memory.content || EXCLUDED.content",
            (self._id, name, text),
        )
        self._memory.append_memory(name, text)

    def load_memory(self, name: str) -> str | None:
        """The memory row's content, or ``None``."""
        row = self._execute(
            "SELECT content FROM contextengine_memory WHERE session = %s AND name = %s",
            (self._id, name),
        ).fetchone()
        return None if row is None else str(row[0])

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    @property
    def _where(self) -> str:
        return f"session {self._id}"


def _key(layout: SessionLayout) -> str:
    return str(Path(layout.directory).resolve())
