"""What the route handlers are given: the app's session store, turn runner and guard.

The providers are ``async``: FastAPI runs a plain function dependency in its thread pool,
a hop per request that only reads ``app.state``.
"""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Request

from contextengine.server.guard import GuardSettings
from contextengine.server.runner import TurnRunner
from contextengine.server.store import SessionStore


async def _store(request: Request) -> SessionStore:
    return cast(SessionStore, request.app.state.store)


async def _runner(request: Request) -> TurnRunner:
    return cast(TurnRunner, request.app.state.runner)


async def _guard(request: Request) -> GuardSettings:
    return cast(GuardSettings, request.app.state.guard)


Store = Annotated[SessionStore, Depends(_store)]
"""The sessions of the app's workspace."""

Runner = Annotated[TurnRunner, Depends(_runner)]
"""Who runs the app's turns."""

Guard = Annotated[GuardSettings, Depends(_guard)]
"""The app's token and host rules."""
