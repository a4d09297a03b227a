"""The FastAPI app: JSON API for sessions, SSE turns, memory, artifacts, usage; the web UI.

API (all JSON; errors are ``{"error": "..."}``), documented in docs/server.md:

    GET  /api/sessions                          workspace and sessions, newest first
    POST /api/sessions                          start a session                 -> 201
    GET  /api/sessions/{id}                     one session
    GET  /api/sessions/{id}/history             its recorded entries
    POST /api/sessions/{id}/messages            {"message": str} -> SSE stream of the turn
    GET  /api/sessions/{id}/memory              the three working-memory files
    GET  /api/sessions/{id}/memory/{name}       one of them
    GET  /api/sessions/{id}/artifacts           files under artifacts/
    GET  /api/sessions/{id}/artifacts/{path}    one artifact's text
    GET  /api/sessions/{id}/usage               token totals and cache hit rate
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, field_validator
from sse_starlette import EventSourceResponse

from contextengine.config import Config
from contextengine.measure.report import usage_report
from contextengine.measure.usage_log import read_usage
from contextengine.server.errors import install_error_handlers
from contextengine.server.files import (
    list_artifacts,
    read_artifact,
    read_memory,
    read_memory_file,
)
from contextengine.server.history import iter_entries
from contextengine.server.sse import stream_turn
from contextengine.server.store import ProviderFactory, SessionStore
from contextengine.session.layout import SessionLayout

STATIC_DIR = Path(__file__).parent / "static"


class MessageIn(BaseModel):
    """The body of a user message."""

    model_config = ConfigDict(extra="forbid")

    message: str

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the message is empty")
        return value


def create_app(
    workspace: Path, provider_factory: ProviderFactory, config: Config | None = None
) -> FastAPI:
    """The server for sessions in ``workspace``; each session gets ``provider_factory()``."""
    store = SessionStore(workspace, provider_factory, config or Config.load())
    app = FastAPI(title="contextengine", docs_url=None, redoc_url=None)
    app.state.store = store
    install_error_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    @app.get("/api/sessions")
    def list_sessions() -> dict[str, Any]:
        return {
            "workspace": str(store.workspace),
            "sessions": [asdict(s) for s in store.sessions()],
        }

    @app.post("/api/sessions", status_code=201)
    def create_session() -> dict[str, Any]:
        return asdict(store.create())

    @app.get("/api/sessions/{session_id}")
    def get_session(session_id: str) -> dict[str, Any]:
        return asdict(store.info(session_id))

    @app.get("/api/sessions/{session_id}/history")
    def history(session_id: str) -> dict[str, Any]:
        log = SessionLayout(store.directory(session_id)).log
        return {"entries": [e.model_dump(mode="json") for e in iter_entries(log)]}

    @app.post("/api/sessions/{session_id}/messages")
    async def post_message(session_id: str, body: MessageIn) -> EventSourceResponse:
        await run_in_threadpool(store.directory, session_id)
        store.claim(session_id)
        try:
            agent = await run_in_threadpool(store.agent, session_id)
        except BaseException:
            store.release(session_id)
            raise
        events = stream_turn(agent, body.message, lambda: store.release(session_id))
        return EventSourceResponse(events)

    @app.get("/api/sessions/{session_id}/memory")
    def memory(session_id: str) -> dict[str, Any]:
        return {"files": [asdict(f) for f in read_memory(store.directory(session_id))]}

    @app.get("/api/sessions/{session_id}/memory/{name}")
    def memory_file(session_id: str, name: str) -> dict[str, Any]:
        return asdict(read_memory_file(store.directory(session_id), name))

    @app.get("/api/sessions/{session_id}/artifacts")
    def artifacts(session_id: str) -> dict[str, Any]:
        folder = SessionLayout(store.directory(session_id)).artifacts
        return {"artifacts": [asdict(a) for a in list_artifacts(folder)]}

    @app.get("/api/sessions/{session_id}/artifacts/{path:path}")
    def artifact(session_id: str, path: str) -> dict[str, Any]:
        folder = SessionLayout(store.directory(session_id)).artifacts
        return asdict(read_artifact(folder, path))

    @app.get("/api/sessions/{session_id}/usage")
    def usage(session_id: str) -> dict[str, Any]:
        directory = store.directory(session_id)
        log = SessionLayout(directory).usage_log
        records = list(read_usage(log)) if log.exists() else []
        return usage_report(directory, records).as_dict()

    return app
