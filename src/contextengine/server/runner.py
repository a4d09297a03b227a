"""Who runs a session's turns: this process (``LocalTurns``) or workers (``WorkerTurns``).

The routes ask one ``TurnRunner`` and never which kind it is: ``create_app`` picks
``WorkerTurns`` when a broker is configured (this replica then only queues turns and streams
the events workers record) and ``LocalTurns`` otherwise (each session's channel runs its
agent here).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Protocol

from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sse_starlette import EventSourceResponse, ServerSentEvent

from contextengine.errors import ContextEngineError
from contextengine.server.channel import SessionChannel, Subscription
from contextengine.server.errors import ApiError
from contextengine.server.store import SessionInfo, SessionStore
from contextengine.types import TurnInfo
from contextengine.workers.replica import Follow, TurnDispatcher

SSE = EventSourceResponse | Response
"""A stream of a session's events, or 204 when there is nothing to follow."""


class TurnRunner(Protocol):
    """Starts, follows and stops the turns of the sessions in one store."""

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The app started, on ``loop``."""
        ...

    def stop(self) -> None:
        """The app is stopping."""
        ...

    def with_turns(self, infos: Sequence[SessionInfo]) -> list[SessionInfo]:
        """``infos`` marked busy with the turns running for them."""
        ...

    def check_deletable(self, session_id: str) -> None:
        """Refuse (409) to delete a session whose turn is running elsewhere."""
        ...

    async def send(self, session_id: str, message: str) -> EventSourceResponse:
        """Start a turn with the user's ``message``; the stream of its events."""
        ...

    async def follow(self, session_id: str, after: int) -> SSE:
        """The session's events after event ``after``, and the open turn's to its end."""
        ...

    async def cancel(self, session_id: str) -> TurnInfo | None:
        """Stop the running turn at its next step (409 when none runs); the turn, when known."""
        ...


class LocalTurns:
    """Turns run in this process, one session channel each."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Nothing to start: a channel starts with its first turn."""

    def stop(self) -> None:
        """Nothing to stop: the store's channels end with their turns."""

    def with_turns(self, infos: Sequence[SessionInfo]) -> list[SessionInfo]:
        """``infos`` as they are: the store reads its channels' turns itself."""
        return list(infos)

    def check_deletable(self, session_id: str) -> None:
        """The store itself refuses a session its channel is running."""

    async def send(self, session_id: str, message: str) -> EventSourceResponse:
        """Run the turn on the session's channel; stream its events."""
        channel = await run_in_threadpool(self.store.channel, session_id)
        channel.check_free()
        agent = await run_in_threadpool(self.store.agent, session_id)
        subscription = channel.start(agent, message)
        return EventSourceResponse(_channel_sse(channel, subscription))

    async def follow(self, session_id: str, after: int) -> SSE:
        """The channel's events after ``after``."""
        channel = await run_in_threadpool(self.store.channel, session_id)
        subscription = await channel.subscribe(after)
        if subscription.empty:
            # 204 tells an EventSource to stop reconnecting: there is nothing to follow.
            return Response(status_code=204)
        return EventSourceResponse(_channel_sse(channel, subscription))

    async def cancel(self, session_id: str) -> TurnInfo | None:
        """Set the channel's turn's cancel flag."""
        channel = await run_in_threadpool(self.store.channel, session_id)
        if not channel.cancel():
            raise ApiError(409, f"session {session_id!r} is not running a turn")
        return channel.turn


class WorkerTurns:
    """Turns queued for workers; their events read back from the shared store."""

    def __init__(self, store: SessionStore, dispatcher: TurnDispatcher) -> None:
        self.store = store
        self.dispatcher = dispatcher

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start listening for the events workers record."""
        self.dispatcher.start(loop)

    def stop(self) -> None:
        """Stop listening."""
        self.dispatcher.stop()

    def with_turns(self, infos: Sequence[SessionInfo]) -> list[SessionInfo]:
        """``infos`` with the turns workers run for them (a replica's channels run none)."""
        turns = self.dispatcher.open_turns()
        return [
            replace(i, busy=True, turn=t) if (t := turns.get(i.id)) is not None else i
            for i in infos
        ]

    def check_deletable(self, session_id: str) -> None:
        """409 while a worker runs the session's turn."""
        if session_id in self.dispatcher.open_turns():
            raise ApiError(409, f"session {session_id!r} is running a turn; stop it first")

    async def send(self, session_id: str, message: str) -> EventSourceResponse:
        """Queue the turn for a worker; stream its events from the store."""
        await run_in_threadpool(self.store.directory, session_id)  # a 404 for an unknown one
        try:
            follow = await run_in_threadpool(self.dispatcher.accept, session_id, message)
        except ContextEngineError as exc:
            raise ApiError(503, str(exc)) from None
        if follow is None:
            raise ApiError(
                409,
                f"session {session_id!r} is already running a turn; "
                "wait for its 'done' event before sending another message",
            )
        return EventSourceResponse(self._sse(session_id, follow))

    async def follow(self, session_id: str, after: int) -> SSE:
        """The events after ``after`` that workers recorded, and the open turn's to its end."""
        await run_in_threadpool(self.store.directory, session_id)
        try:
            follow = await run_in_threadpool(self.dispatcher.follow, session_id, after)
        except ContextEngineError as exc:
            raise ApiError(400, str(exc)) from None
        if not await run_in_threadpool(self.dispatcher.has_more, session_id, follow):
            return Response(status_code=204)
        return EventSourceResponse(self._sse(session_id, follow))

    async def cancel(self, session_id: str) -> TurnInfo | None:
        """Ask the worker running the session's turn to stop it."""
        turn = await run_in_threadpool(self.dispatcher.cancel, session_id)
        if turn is None:
            raise ApiError(409, f"session {session_id!r} is not running a turn")
        return turn

    async def _sse(self, session_id: str, follow: Follow) -> AsyncIterator[ServerSentEvent]:
        async for event in self.dispatcher.events(session_id, follow):
            yield ServerSentEvent(data=event.data, event=event.event, id=str(event.id))


async def _channel_sse(
    channel: SessionChannel, subscription: Subscription
) -> AsyncIterator[ServerSentEvent]:
    async for event in channel.events(subscription):
        yield ServerSentEvent(data=event.data, event=event.event, id=str(event.id))
