"""The ``store`` setting: which store keeps sessions, and where their folders are."""

from __future__ import annotations

from typing import Protocol
from urllib.parse import unquote, urlsplit

from contextengine.errors import ConfigError
from contextengine.session.store.files import FileStore
from contextengine.session.store.postgres import PostgresStore
from contextengine.session.store.protocol import SessionStore


class StoreSettings(Protocol):
    """Where sessions are kept (``Config`` has these; the session package never imports it)."""

    @property
    def store(self) -> str | None:
        """The ``store`` setting: a folder, ``file://PATH`` or ``postgresql://...``."""
        ...

    @property
    def root(self) -> str | None:
        """The sessions root (the default is under the workspace)."""
        ...

    @property
    def org(self) -> str:
        """The organization the sessions are filed under."""
        ...

    @property
    def team(self) -> str:
        """The team the sessions are filed under."""
        ...


def open_store(config: StoreSettings) -> SessionStore:
    """The store the config names: PostgreSQL for a ``postgresql://`` URL, else files."""
    if _is_postgres(config.store):
        assert config.store is not None
        return PostgresStore(config.store)
    sessions_base(config)  # a bad file URL fails here, before any session is made
    return FileStore()


def sessions_base(config: StoreSettings) -> str | None:
    """The folder holding the sessions (``<base>/<org>/<team>/...``), ``None`` for the
    default under the workspace: a file store's folder, else ``root``."""
    folder = _store_folder(config.store)
    if folder is None:
        return config.root
    if config.root and config.root != folder:
        raise ConfigError(
            f"store {config.store!r} and root {config.root!r} name two session folders;"
            " set one of them"
        )
    return folder


def _is_postgres(store: str | None) -> bool:
    return store is not None and store.lower().startswith(("postgresql://", "postgres://"))


def _store_folder(store: str | None) -> str | None:
    if store is None or _is_postgres(store):
        return None
    if not store.lower().startswith("file://"):
        return store
    parts = urlsplit(store)
    if parts.netloc not in {"", "localhost"} or not parts.path:
        raise ConfigError(f"store {store!r}: a file URL needs a local path (file:///PATH)")
    return unquote(parts.path)
