"""The FastAPI app: JSON API for sessions, SSE turns, memory, artifacts, usage; the web UI.

API (all JSON; errors are ``{"error": "..."}``), documented in docs/server.md. Every
``/api`` call needs the token (``Authorization: Bearer`` or the cookie ``GET /?token=``
sets); ``guard.py`` also checks Host, Origin and body size. The routes live in
``contextengine.server.routes``, one router per area; who runs the turns is the app's
``TurnRunner`` (``contextengine.server.runner``).

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
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from contextengine.agent.loop import Agent
from contextengine.config import Config
from contextengine.server.errors import install_error_handlers
from contextengine.server.guard import Guard, GuardSettings
from contextengine.server.routes import files, inspect, pages, sessions, turns
from contextengine.server.runner import LocalTurns, TurnRunner, WorkerTurns
from contextengine.server.store import ProviderFactory, SessionStore
from contextengine.workers.replica import TurnDispatcher

STATIC_DIR = pages.STATIC_DIR
ROUTERS = (pages.router, sessions.router, turns.router, files.router, inspect.router)


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
    runner: TurnRunner = (
        WorkerTurns(store, TurnDispatcher(settings)) if settings.broker else LocalTurns(store)
    )
    api_token = token or settings.server_token or secrets.token_urlsafe(24)
    # No schema or docs pages: they would answer without the token.
    app = FastAPI(
        title="contextengine",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=_lifespan(store, runner),
    )
    guard = GuardSettings.of(
        api_token, [*settings.server_allowed_hosts, *hosts], settings.server_max_body_bytes
    )
    app.state.store = store
    app.state.token = api_token
    app.state.runner = runner
    app.state.guard = guard
    app.add_middleware(Guard, settings=guard)
    install_error_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    for router in ROUTERS:
        app.include_router(router)
    return app


def _lifespan(
    store: SessionStore, runner: TurnRunner
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Evict idle sessions and run ``runner`` while the app serves."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(_evict_idle(store))
        runner.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            sweeper.cancel()
            runner.stop()

    return lifespan


async def _evict_idle(store: SessionStore) -> None:
    period = min(max(store.config.server_idle_s / 2, 0.1), 60.0)
    while True:
        await asyncio.sleep(period)
        store.evict_idle()
