"""The FastAPI app: JSON API for sessions, SSE turns, memory, artifacts, usage; the web UI.

API (all JSON; errors are ``{"error": "..."}``), documented in docs/server.md. Every
``/api`` call needs the token (``Authorization: Bearer`` or the cookie ``GET /?token=``
sets); ``guard.py`` also checks Host, Origin and body size.

    GET  /api/server                            loaded agents, open channels, running turns
    GET  /api/sessions[?search=Q]               workspace and sessions, newest first
    POST /api/sessions                          start a session                 -> 201
    GET  /api/sessions/{id}                     one session (its running turn, its question)
    PATCH /api/sessions/{id}                    {"title": str}: rename ("" = first message)
    DELETE /api/sessions/{id}                   move the session to the trash
    GET  /api/sessions/{id}/history             its recorded entries, its questions to the human
    POST /api/sessions/{id}/messages            {"message": str} -> SSE stream of the turn
    GET  /api/sessions/{id}/events              SSE events after Last-Event-ID
    POST /api/sessions/{id}/cancel              stop the running turn at its next step
    POST /api/sessions/{id}/answer              {"answer": str}: the human's answer to the
                                                question the running turn waits on
    GET  /api/sessions/{id}/memory              the three working-memory files
    GET  /api/sessions/{id}/memory/{name}       one of them
    GET  /api/sessions/{id}/artifacts           files under artifacts/
    GET  /api/sessions/{id}/artifacts/{path}    one artifact's text
    GET  /api/sessions/{id}/usage               token totals and cache hit rate
    GET  /api/sessions/{id}/inspect             every recorded request: parts, cache, breaks
    GET  /api/sessions/{id}/inspect/timeline    per-call tokens, cost and events; totals
    GET  /api/sessions/{id}/inspect/{n}         request n's text, parts and diff vs n - 1
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo
from sse_starlette import EventSourceResponse, ServerSentEvent

from contextengine.agent.loop import Agent
from contextengine.agent.usage_log import parse_usage
from contextengine.config import Config
from contextengine.errors import ConfigError, ContextEngineError
from contextengine.measure.inspector import CallView, first_difference, inspect_session, timeline
from contextengine.measure.report import usage_report
from contextengine.server.channel import SessionChannel, Subscription
from contextengine.server.errors import ApiError, install_error_handlers
from contextengine.server.files import (
    list_artifacts,
    read_artifact,
    read_memory,
    read_memory_file,
)
from contextengine.server.guard import NO_TOKEN, TOKEN_COOKIE, Guard, GuardSettings
from contextengine.server.handover import hand_overs
from contextengine.server.store import ProviderFactory, SessionInfo, SessionStore
from contextengine.session.layout import SessionLayout
from contextengine.workers.replica import Follow, TurnDispatcher

STATIC_DIR = Path(__file__).parent / "static"


def _not_blank(value: str, info: ValidationInfo) -> str:
    if not value.strip():
        raise ValueError(f"the {info.field_name} is empty")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]
"""Text with something in it besides whitespace."""


class MessageIn(BaseModel):
    """The body of a user message."""

    model_config = ConfigDict(extra="forbid")

    message: NonBlank


class TitleIn(BaseModel):
    """A session's new title."""

    model_config = ConfigDict(extra="forbid")

    title: str


class AnswerIn(BaseModel):
    """The human's answer to the agent's question."""

    model_config = ConfigDict(extra="forbid")

    answer: NonBlank


def create_app(
    workspace: Path,
    provider_factory: ProviderFactory,
    config: Config | None = None,
    *,
    token: str | None = None,
    hosts: Iterable[str] = (),
) -> FastAPI:
    """The server for sessions in ``workspace``; each session gets ``provider_factory()``.

    ``token`` (else ``config.server_token``, else a new random one, in ``app.state.token``)
    guards the API; ``hosts`` are Host names allowed besides localhost and the configured ones.
    """
    settings = config or Config.load()
    store = SessionStore(
        workspace,
        provider_factory,
        settings,
        partial(Agent, config=settings),
        partial(Agent.resume, config=settings),
    )
    # With a broker, turns run on workers and this replica only queues and streams them.
    dispatcher = TurnDispatcher(settings) if settings.broker else None
    api_token = token or settings.server_token or secrets.token_urlsafe(24)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(_evict_idle(store))
        if dispatcher is not None:
            dispatcher.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            sweeper.cancel()
            if dispatcher is not None:
                dispatcher.stop()

    # No schema or docs pages: they would answer without the token.
    app = FastAPI(
        title="contextengine", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.store = store
    app.state.token = api_token
    guard = GuardSettings.of(
        api_token, [*settings.server_allowed_hosts, *hosts], settings.server_max_body_bytes
    )
    app.add_middleware(Guard, settings=guard)
    install_error_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False, response_model=None)
    def index(token: str | None = None) -> Response:
        if token is None:
            return FileResponse(STATIC_DIR / "index.html")
        if not guard.token_matches(token):
            raise ApiError(401, NO_TOKEN)
        # The token moves into a cookie (EventSource cannot send headers) and out of the
        # address bar and the history.
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
        return response

    @app.get("/api/server")
    def server_status() -> dict[str, Any]:
        return asdict(store.status())

    def with_worker_turns(*infos: SessionInfo) -> list[SessionInfo]:
        """``infos`` with the turns workers run for them (a replica's channels run none)."""
        if dispatcher is None:
            return list(infos)
        turns = dispatcher.open_turns()
        return [
            replace(i, busy=True, turn=t) if (t := turns.get(i.id)) is not None else i
            for i in infos
        ]

    @app.get("/api/sessions")
    def list_sessions(search: str | None = None) -> dict[str, Any]:
        return {
            "workspace": str(store.workspace),
            "sessions": [asdict(s) for s in with_worker_turns(*store.sessions(search))],
        }

    @app.post("/api/sessions", status_code=201)
    def create_session() -> dict[str, Any]:
        return asdict(store.create())

    @app.get("/api/sessions/{session_id}")
    def get_session(session_id: str) -> dict[str, Any]:
        return asdict(with_worker_turns(store.info(session_id))[0])

    @app.patch("/api/sessions/{session_id}")
    def rename_session(session_id: str, body: TitleIn) -> dict[str, Any]:
        try:
            return asdict(store.rename(session_id, body.title))
        except ConfigError as exc:
            raise ApiError(400, str(exc)) from None

    @app.delete("/api/sessions/{session_id}")
    def delete_session(session_id: str) -> dict[str, Any]:
        if dispatcher is not None and session_id in dispatcher.open_turns():
            raise ApiError(409, f"session {session_id!r} is running a turn; stop it first")
        return {"deleted": session_id, "trash": str(store.delete(session_id))}

    @app.get("/api/sessions/{session_id}/history")
    def history(session_id: str) -> dict[str, Any]:
        entries = list(store.kept_in.entries(SessionLayout(store.directory(session_id))))
        return {
            "entries": [e.model_dump(mode="json") for e in entries],
            "questions": [asdict(h) for h in hand_overs(entries)],
        }

    @app.post("/api/sessions/{session_id}/messages")
    async def post_message(session_id: str, body: MessageIn) -> EventSourceResponse:
        if dispatcher is not None:
            return await _queue_turn(dispatcher, store, session_id, body.message)
        channel = await run_in_threadpool(store.channel, session_id)
        channel.check_free()
        agent = await run_in_threadpool(store.agent, session_id)
        subscription = channel.start(agent, body.message)
        return EventSourceResponse(_sse(channel, subscription))

    @app.get("/api/sessions/{session_id}/events", response_model=None)
    async def events(
        session_id: str, request: Request, last_event_id: int = 0
    ) -> EventSourceResponse | Response:
        after = _last_event_id(request.headers.get("last-event-id"), last_event_id)
        if dispatcher is not None:
            return await _follow_turns(dispatcher, store, session_id, after)
        channel = await run_in_threadpool(store.channel, session_id)
        subscription = await channel.subscribe(after)
        if subscription.empty:
            # 204 tells an EventSource to stop reconnecting: there is nothing to follow.
            return Response(status_code=204)
        return EventSourceResponse(_sse(channel, subscription))

    @app.post("/api/sessions/{session_id}/cancel", status_code=202)
    async def cancel(session_id: str) -> dict[str, Any]:
        if dispatcher is not None:
            turn = await run_in_threadpool(dispatcher.cancel, session_id)
            if turn is None:
                raise ApiError(409, f"session {session_id!r} is not running a turn")
            return {"cancelling": True, "turn": asdict(turn)}
        channel = await run_in_threadpool(store.channel, session_id)
        if not channel.cancel():
            raise ApiError(409, f"session {session_id!r} is not running a turn")
        return {"cancelling": True, "turn": asdict(channel.turn) if channel.turn else None}

    @app.post("/api/sessions/{session_id}/answer")
    async def answer(session_id: str, body: AnswerIn) -> dict[str, Any]:
        channel = await run_in_threadpool(store.channel, session_id)
        channel.answer(body.answer)
        return {"answered": True}

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
        lines = store.kept_in.usage(SessionLayout(directory))
        records = list(parse_usage(lines, f"{directory} usage"))
        return usage_report(directory, records).as_dict()

    def calls_of(session_id: str) -> list[CallView]:
        directory = store.directory(session_id)
        return inspect_session(directory) if SessionLayout(directory).requests.is_file() else []

    @app.get("/api/sessions/{session_id}/inspect")
    def inspect_calls(session_id: str) -> dict[str, Any]:
        return {"calls": [c.as_dict() for c in calls_of(session_id)]}

    @app.get("/api/sessions/{session_id}/inspect/timeline")
    def inspect_timeline(session_id: str) -> dict[str, Any]:
        directory = store.directory(session_id)
        if not SessionLayout(directory).usage_log.is_file():
            return {"calls": [], "totals": usage_report(directory, []).as_dict()}
        return timeline(directory)

    @app.get("/api/sessions/{session_id}/inspect/{call}")
    def inspect_call(session_id: str, call: int) -> dict[str, Any]:
        calls = calls_of(session_id)
        if not 1 <= call <= len(calls):
            raise ApiError(404, f"session {session_id!r} has no call {call}")
        view = calls[call - 1]
        text = view.request.text()
        before = calls[call - 2].request.text() if call > 1 else None
        at = first_difference(before, text) if before is not None else None
        return {
            **view.as_dict(),
            "text": text,
            "diff": None
            if before is None
            else {"previous": call - 1, "position": at, "old": _around(before, at)},
        }

    return app


async def _queue_turn(
    dispatcher: TurnDispatcher, store: SessionStore, session_id: str, message: str
) -> EventSourceResponse:
    """Queue the turn for a worker; stream its events from the store."""
    await run_in_threadpool(store.directory, session_id)  # a 404 for an unknown session
    try:
        follow = await run_in_threadpool(dispatcher.accept, session_id, message)
    except ContextEngineError as exc:
        raise ApiError(503, str(exc)) from None
    if follow is None:
        raise ApiError(
            409,
            f"session {session_id!r} is already running a turn; "
            "wait for its 'done' event before sending another message",
        )
    return EventSourceResponse(_worker_sse(dispatcher, session_id, follow))


async def _follow_turns(
    dispatcher: TurnDispatcher, store: SessionStore, session_id: str, after: int
) -> EventSourceResponse | Response:
    """The events after ``after`` that workers recorded, and the open turn's to its end."""
    await run_in_threadpool(store.directory, session_id)
    try:
        follow = await run_in_threadpool(dispatcher.follow, session_id, after)
    except ContextEngineError as exc:
        raise ApiError(400, str(exc)) from None
    if not await run_in_threadpool(dispatcher.has_more, session_id, follow):
        return Response(status_code=204)
    return EventSourceResponse(_worker_sse(dispatcher, session_id, follow))


async def _worker_sse(
    dispatcher: TurnDispatcher, session_id: str, follow: Follow
) -> AsyncIterator[ServerSentEvent]:
    async for event in dispatcher.events(session_id, follow):
        yield ServerSentEvent(data=event.data, event=event.event, id=str(event.id))


def _around(text: str, at: int | None) -> str | None:
    """The previous request's text near the first difference (what was there before)."""
    return None if at is None else text[max(0, at - 40) : at + 120]


async def _sse(
    channel: SessionChannel, subscription: Subscription
) -> AsyncIterator[ServerSentEvent]:
    async for event in channel.events(subscription):
        yield ServerSentEvent(data=event.data, event=event.event, id=str(event.id))


def _last_event_id(header: str | None, query: int) -> int:
    """The id to continue after: the ``Last-Event-ID`` header wins (EventSource reconnects)."""
    if header is None or not header.strip():
        after = query
    elif header.strip().isdigit():
        after = int(header.strip())
    else:
        raise ApiError(400, f"Last-Event-ID must be an event id (a number), not {header!r}")
    if after < 0:
        raise ApiError(400, f"last_event_id must not be negative, got {after}")
    return after


async def _evict_idle(store: SessionStore) -> None:
    period = min(max(store.config.server_idle_s / 2, 0.1), 60.0)
    while True:
        await asyncio.sleep(period)
        store.evict_idle()
