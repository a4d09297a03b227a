"""Turns: send a message, follow the events, cancel, answer the agent's question."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sse_starlette import EventSourceResponse

from contextengine.server.errors import ApiError
from contextengine.server.routes.bodies import AnswerIn, MessageIn
from contextengine.server.routes.deps import Runner, Store
from contextengine.server.routes.plain import PlainRoute

router = APIRouter(prefix="/api/sessions/{session_id}", route_class=PlainRoute)


@router.post("/messages")
async def post_message(session_id: str, body: MessageIn, runner: Runner) -> EventSourceResponse:
    """Start a turn; the SSE stream of its events."""
    return await runner.send(session_id, body.message)


@router.get("/events")
async def events(
    session_id: str, request: Request, runner: Runner, last_event_id: int = 0
) -> EventSourceResponse | Response:
    """The SSE events after ``Last-Event-ID``."""
    after = _last_event_id(request.headers.get("last-event-id"), last_event_id)
    return await runner.follow(session_id, after)


@router.post("/cancel", status_code=202)
async def cancel(session_id: str, runner: Runner) -> dict[str, Any]:
    """Stop the running turn at its next step."""
    turn = await runner.cancel(session_id)
    return {"cancelling": True, "turn": asdict(turn) if turn else None}


@router.post("/answer")
async def answer(session_id: str, body: AnswerIn, store: Store) -> dict[str, Any]:
    """The human's answer to the question the running turn waits on."""
    channel = await run_in_threadpool(store.channel, session_id)
    channel.answer(body.answer)
    return {"answered": True}


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
