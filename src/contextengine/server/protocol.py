"""HTTP/1.1 connections with a deadline for their request headers.

uvicorn times out idle keep-alive connections but not one that is still sending its request
line and headers: a client that never finishes them (slowloris) holds a socket for good, and
enough of them exhaust the process's file descriptors and every other client with them.
Here each connection must complete its headers within ``HEADER_TIMEOUT_S`` of opening (or of
its last response): one that has not is closed. And no more than uvicorn's
``limit_concurrency`` connections are open at once: one beyond it is closed at once, before
it costs more than its socket (uvicorn itself counts only those that sent a request).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing connections whose request headers are late."""

    header_timeout_s = HEADER_TIMEOUT_S
    _header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Accept the connection and start its headers' clock."""
        super().connection_made(transport)
        limit = self.limit_concurrency
        if limit is not None and len(self.connections) > limit:
            transport.close()
            return
        self._arm_header_deadline()

    def on_response_complete(self) -> None:
        """Finish the response; the next request's headers get a new clock."""
        super().on_response_complete()
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection and its clock."""
        self._cancel_header_deadline()
        super().connection_lost(exc)

    def _arm_header_deadline(self) -> None:
        self._cancel_header_deadline()
        self._header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_late(self) -> None:
        self._header_deadline = None
        # No request whose headers arrived is being answered: the client is still sending
        # them (or sends nothing at all).
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and not self.transport.is_closing():
            self.transport.close()
