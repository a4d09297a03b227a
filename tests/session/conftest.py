"""Fixtures of the session tests: every store (``postgres`` is in ``tests/conftest.py``)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from contextengine.config import Config
from contextengine.session.store.choice import open_store
from contextengine.session.store.protocol import SessionStore
from support.postgres import Postgres

_databases = itertools.count()


@pytest.fixture(params=["files", "postgresql"])
def store_setting(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ``store`` setting of each store: a folder, or a fresh database of the server."""
    if request.param == "files":
        return str(tmp_path / "sessions")
    server: Postgres = request.getfixturevalue("postgres")
    return server.new_database(f"store{next(_databases)}")


@pytest.fixture
def store(store_setting: str) -> SessionStore:
    """The store the setting names."""
    return open_store(Config(store=store_setting))
