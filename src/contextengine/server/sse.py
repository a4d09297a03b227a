"""One agent turn as a stream of server-sent events: ``event:`` is the event type, ``data:``
its JSON payload, and the last event is always ``done``.

The turn runs in a task of its own, not in the response: a client that disconnects does
not stop the agent mid-step, and the session stays busy until the turn really ends.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable

from sse_starlette import ServerSentEvent

from contextengine.agent.events import AgentEvent, Done, ErrorEvent, RunResult
from contextengine.agent.loop import Agent

logger = logging.getLogger(__name__)

# Strong references to running turns: the event loop keeps only weak ones.
_TURNS: set[asyncio.Task[None]] = set()


def to_sse(event: AgentEvent) -> ServerSentEvent:
    """The SSE form of an agent event."""
    data = json.dumps(event.payload(), default=str, ensure_ascii=False)
    return ServerSentEvent(data=data, event=event.type)


async def stream_turn(
    agent: Agent, message: str, finished: Callable[[], None]
) -> AsyncIterator[ServerSentEvent]:
    """Run one turn of ``agent`` and yield its events; ``finished`` runs before ``done``."""
    queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()

    async def drive() -> None:
        ended = False
        try:
            async for event in agent.astream(message):
                if isinstance(event, Done):
                    # Released before the client sees `done`, so it can send the next
                    # message at once without a 409.
                    finished()
                    ended = True
                queue.put_nowait(event)
        except Exception as exc:
            logger.exception("agent turn failed in session %s", agent.session.id)
            if not ended:
                text = f"{type(exc).__name__}: {exc}"
                queue.put_nowait(ErrorEvent("turn_failed", text))
                queue.put_nowait(Done(RunResult("", agent.session_dir, "error", 0, text)))
        finally:
            finished()
            queue.put_nowait(None)

    task = asyncio.create_task(drive())
    _TURNS.add(task)
    task.add_done_callback(_TURNS.discard)
    while (event := await queue.get()) is not None:
        yield to_sse(event)
