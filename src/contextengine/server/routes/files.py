"""A session's files: its working memory and its artifacts."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter

from contextengine.server.files import (
    list_artifacts,
    read_artifact,
    read_memory,
    read_memory_file,
)
from contextengine.server.routes.deps import Store
from contextengine.server.routes.plain import PlainRoute
from contextengine.session.layout import SessionLayout

router = APIRouter(prefix="/api/sessions/{session_id}", route_class=PlainRoute)


@router.get("/memory")
def memory(session_id: str, store: Store) -> dict[str, Any]:
    """The three working-memory files."""
    return {"files": [asdict(f) for f in read_memory(store.directory(session_id))]}


@router.get("/memory/{name}")
def memory_file(session_id: str, name: str, store: Store) -> dict[str, Any]:
    """One working-memory file."""
    return asdict(read_memory_file(store.directory(session_id), name))


@router.get("/artifacts")
def artifacts(session_id: str, store: Store) -> dict[str, Any]:
    """The files under ``artifacts/``."""
    folder = SessionLayout(store.directory(session_id)).artifacts
    return {"artifacts": [asdict(a) for a in list_artifacts(folder)]}


@router.get("/artifacts/{path:path}")
def artifact(session_id: str, path: str, store: Store) -> dict[str, Any]:
    """One artifact's text."""
    folder = SessionLayout(store.directory(session_id)).artifacts
    return asdict(read_artifact(folder, path))
