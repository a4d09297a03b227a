"""Sessions: list, start, describe, rename, delete, and their recorded history."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter

from contextengine.errors import ConfigError
from contextengine.server.errors import ApiError
from contextengine.server.handover import hand_overs
from contextengine.server.routes.bodies import TitleIn
from contextengine.server.routes.deps import Runner, Store
from contextengine.server.routes.plain import PlainRoute
from contextengine.session.layout import SessionLayout

router = APIRouter(prefix="/api/sessions", route_class=PlainRoute)


@router.get("")
def list_sessions(store: Store, runner: Runner, search: str | None = None) -> dict[str, Any]:
    """The workspace and its sessions, newest first."""
    return {
        "workspace": str(store.workspace),
        "sessions": [asdict(s) for s in runner.with_turns(store.sessions(search))],
    }


@router.post("", status_code=201)
def create_session(store: Store) -> dict[str, Any]:
    """Start a session."""
    return asdict(store.create())


@router.get("/{session_id}")
def get_session(session_id: str, store: Store, runner: Runner) -> dict[str, Any]:
    """One session (its running turn, its question)."""
    return asdict(runner.with_turns([store.info(session_id)])[0])


@router.patch("/{session_id}")
def rename_session(session_id: str, body: TitleIn, store: Store) -> dict[str, Any]:
    """Rename the session (``""``: its first message again)."""
    try:
        return asdict(store.rename(session_id, body.title))
    except ConfigError as exc:
        raise ApiError(400, str(exc)) from None


@router.delete("/{session_id}")
def delete_session(session_id: str, store: Store, runner: Runner) -> dict[str, Any]:
    """Move the session to the trash."""
    runner.check_deletable(session_id)
    return {"deleted": session_id, "trash": str(store.delete(session_id))}


@router.get("/{session_id}/history")
def history(session_id: str, store: Store) -> dict[str, Any]:
    """Its recorded entries and its questions to the human."""
    entries = list(store.kept_in.entries(SessionLayout(store.directory(session_id))))
    return {
        "entries": [e.model_dump(mode="json") for e in entries],
        "questions": [asdict(h) for h in hand_overs(entries)],
    }
