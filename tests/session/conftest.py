"""Fixtures of the session tests: every store, PostgreSQL started once per test run."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextengine.config import Config
from contextengine.session.store.choice import open_store
from contextengine.session.store.protocol import SessionStore
from support.postgres import Postgres, start_postgres

_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throwaway PostgreSQL server for the whole run; it failing to start fails the tests."""
    server = start_postgres(Path(tempfile.mkdtemp(prefix="contextengine-pg-")))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["files", "postgresql"])
def store_setting(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ``store`` setting of each store: a folder, or a fresh database of the server."""
    if request.param == "files":
        return str(tmp_path / "sessions")
    server: Postgres = request.getfixturevalue("postgres")
    return server.new_database(f"t{next(_databases)}")


@pytest.fixture
def store(store_setting: str) -> SessionStore:
    """The store the setting names."""
    return open_store(Config(store=store_setting))
