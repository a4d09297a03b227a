"""Iterating a blocking event stream from asyncio code: the stream runs in a worker thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


async def in_thread(events: Callable[[], Iterator[T]], name: str) -> AsyncIterator[T]:
    """The items of ``events()``, produced by a daemon thread called ``name``; its
    exception is raised here, in the consumer."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[T | BaseException | None] = asyncio.Queue()

    def work() -> None:
        try:
            for event in events():
                loop.call_soon_threadsafe(queue.put_nowait, event)
        except BaseException as exc:  # handed to the consumer, not lost in the thread
            loop.call_soon_threadsafe(queue.put_nowait, exc)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=work, name=name, daemon=True).start()
    while (item := await queue.get()) is not None:
        if isinstance(item, BaseException):
            raise item
        yield item
