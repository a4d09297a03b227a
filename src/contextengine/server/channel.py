"""A session's event channel: its running turn, its numbered events, and their listeners.

A turn runs in a task of its own, not in a response: a client that disconnects does not
stop the agent mid-step, and the session stays busy until the turn really ends. Each event
is recorded in the session's ``EventLog`` and then handed to every listener, so a listener
that (re)subscribes after id N gets every later event exactly once: the recorded ones
from the log, then the live ones. The channel lives on the server's event loop only,
except ``_ask``: a turn that hands over to the human waits in its own thread there until
``answer`` (or ``cancel``) comes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from queue import SimpleQueue

from contextengine.agent.events import AgentEvent, Done, ErrorEvent, RunResult
from contextengine.agent.loop import Agent
from contextengine.server.errors import ApiError
from contextengine.server.eventlog import EventLog, StoredEvent
from contextengine.types import TurnInfo

logger = logging.getLogger(__name__)

# Strong references to running turns: the event loop keeps only weak ones.
_TURNS: set[asyncio.Task[None]] = set()


@dataclass(frozen=True)
class Subscription:
    """Events after a given id: the recorded ones, then (if a turn runs) live ones to ``done``."""

    backlog: list[StoredEvent]
    live: asyncio.Queue[StoredEvent] | None

    @property
    def empty(self) -> bool:
        """Nothing to send now and nothing coming."""
        return not self.backlog and self.live is None


class SessionChannel:
    """One session's running turn, event record and listeners."""

    def __init__(self, session_id: str, log: EventLog) -> None:
        self.session_id = session_id
        self.log = log
        self.turn: TurnInfo | None = None
        self.last_used = time.monotonic()
        self._cancel: threading.Event | None = None
        self._listeners: set[asyncio.Queue[StoredEvent]] = set()
        self.question: str | None = None  # what the running turn waits for the human on
        self._question_lock = threading.Lock()
        self._answers: SimpleQueue[str | None] = SimpleQueue()

    @property
    def idle(self) -> bool:
        """No turn runs and nobody listens."""
        return self.turn is None and not self._listeners

    def check_free(self) -> None:
        """A 409 when a turn is running."""
        if self.turn is not None:
            raise ApiError(
                409,
                f"session {self.session_id!r} is already running a turn; "
                "wait for its 'done' event before sending another message",
            )

    def start(self, agent: Agent, message: str) -> Subscription:
        """Run one turn of ``agent`` in a task; the subscription streams it up to ``done``."""
        self.check_free()
        cancel = threading.Event()
        self.turn = TurnInfo(self.log.last_id + 1, len(agent.session.records), message)
        self._cancel = cancel
        subscription = Subscription([], self._listen())
        task = asyncio.create_task(self._drive(agent, message, cancel))
        _TURNS.add(task)
        task.add_done_callback(_TURNS.discard)
        return subscription

    def cancel(self) -> bool:
        """Ask the running turn to stop at its next step; ``False`` when none runs."""
        if self._cancel is None:
            return False
        self._cancel.set()
        with self._question_lock:
            waiting, self.question = self.question is not None, None
        if waiting:
            self._answers.put(None)  # the hand-over ends unanswered
        return True

    def answer(self, text: str) -> None:
        """Continue the turn waiting on a question with the human's ``text``; else a 409."""
        with self._question_lock:
            if self.question is None:
                raise ApiError(409, f"session {self.session_id!r} is not waiting for an answer")
            self.question = None
        self._answers.put(text)

    def _ask(self, question: str, *, cancel: threading.Event) -> str | None:
        """In the turn's thread: wait for ``answer``; ``None`` when the turn is stopped."""
        with self._question_lock:
            if cancel.is_set():
                return None
            self.question = question
        return self._answers.get()

    async def subscribe(self, after: int) -> Subscription:
        """Every event after id ``after``: recorded ones, then the running turn's live ones."""
        if after > self.log.last_id:
            raise ApiError(
                400, f"Last-Event-ID {after} is after this session's last event {self.log.last_id}"
            )
        backlog: list[StoredEvent] = []
        if after < self.log.last_id:
            backlog, offset = await asyncio.to_thread(self.log.read_after, after)
            # From here on nothing awaits: the events recorded while the log was read are
            # caught up and the listener is added before the loop can publish another one.
            backlog.extend(self.log.read_after(after, offset)[0])
        return Subscription(backlog, self._listen() if self.turn is not None else None)

    async def events(self, subscription: Subscription) -> AsyncIterator[StoredEvent]:
        """The subscription's events, in id order; the live part ends after ``done``."""
        queue = subscription.live
        try:
            for event in subscription.backlog:
                yield event
            if queue is None:
                return
            while True:
                event = await queue.get()
                yield event
                if event.event == Done.type:
                    return
        finally:
            if queue is not None:
                self._listeners.discard(queue)
            self.last_used = time.monotonic()

    def close(self) -> None:
        """Release the event record's file."""
        self.log.close()

    def _listen(self) -> asyncio.Queue[StoredEvent]:
        queue: asyncio.Queue[StoredEvent] = asyncio.Queue()
        self._listeners.add(queue)
        return queue

    def _publish(self, event: AgentEvent) -> None:
        data = json.dumps(event.payload(), default=str)
        stored = self.log.append(event.type, data)
        for queue in self._listeners:
            queue.put_nowait(stored)

    def _end_turn(self) -> None:
        self.turn = None
        self._cancel = None
        self.last_used = time.monotonic()

    async def _drive(self, agent: Agent, message: str, cancel: threading.Event) -> None:
        ended = False
        try:
            ask = partial(self._ask, cancel=cancel)
            async for event in agent.astream(message, cancel=cancel, ask_human=ask):
                if isinstance(event, Done):
                    # The session is free before anyone sees `done`, so a client can send
                    # the next message at once without a 409.
                    self._end_turn()
                    ended = True
                self._publish(event)
        except Exception as exc:
            logger.exception("agent turn failed in session %s", agent.session.id)
            if not ended:
                text = f"{type(exc).__name__}: {exc}"
                self._publish(ErrorEvent("turn_failed", text))
                self._end_turn()
                self._publish(Done(RunResult("", agent.session_dir, "error", 0, text)))
        finally:
            if not ended and self.turn is not None:
                self._end_turn()
