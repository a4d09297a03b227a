"""A workspace's sessions on disk: where they live, how one is made, how they are found.

Sessions live under ``<root>/<org>/<team>/<workspace name>/<session id>/``; the root is the
config's ``root``, else ``<workspace>/.contextengine/sessions`` (kept out of git). A folder
belongs to the workspace its ``session.json`` names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from contextengine.session.layout import DEFAULT_ROOT_NAME, SessionLayout, new_session_id
from contextengine.session.listing import session_folders
from contextengine.session.meta import META_FILE, ProviderChoice, SessionMeta, read_meta
from contextengine.session.render import RenderStyle
from contextengine.session.session import Session
from contextengine.session.store.choice import StoreSettings, open_store, sessions_base

MetaReader = Callable[[Path], SessionMeta | None]


def sessions_root(workspace: Path, config: StoreSettings) -> Path:
    """The folder holding the sessions of the config's org and team for ``workspace``."""
    base = sessions_base(config)
    root = Path(base) if base else workspace / DEFAULT_ROOT_NAME
    return root / config.org / config.team


def workspace_sessions(
    workspace: Path, config: StoreSettings, meta: MetaReader = read_meta
) -> dict[str, Path]:
    """The workspace's session folders by session id (``meta`` reads each folder's metadata)."""
    found: dict[str, Path] = {}
    store = open_store(config)
    folders = session_folders(
        sessions_root(workspace, config), lambda folder: store.exists(SessionLayout(folder))
    )
    for folder in folders:
        recorded = meta(folder)
        if recorded is not None and recorded.workspace == str(workspace):
            found[folder.name] = folder
    return found


def create_session(
    workspace: Path,
    config: StoreSettings,
    style: RenderStyle,
    provider: ProviderChoice,
    session_id: str | None = None,
    parent: str | None = None,
) -> Session:
    """A new session of ``workspace`` with its metadata, kept in the config's store;
    ``workspace`` is a resolved path, ``parent`` the id of the session that delegated this
    one (a sub-agent's)."""
    base = sessions_base(config)
    if not base:
        ignore = workspace / ".contextengine" / ".gitignore"
        ignore.parent.mkdir(parents=True, exist_ok=True)
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
    sid = session_id or new_session_id()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", workspace.name).strip("-.") or "workspace"
    root = Path(base) if base else workspace / DEFAULT_ROOT_NAME
    layout = SessionLayout.under(root, config.org, config.team, name, sid)
    meta = SessionMeta(sid, str(workspace), provider, parent)
    return Session.create(
        layout.directory,
        session_id=sid,
        style=style,
        files={META_FILE: meta.to_json()},
        store=open_store(config),
    )
