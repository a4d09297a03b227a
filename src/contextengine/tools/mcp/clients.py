"""Client sessions with MCP servers, on the official ``mcp`` SDK (the ``mcp`` extra).

The SDK is asynchronous and the agent loop is not: one background thread runs an event
loop holding every server's session for the agent's lifetime, and a tool call waits
there for its answer. Each session lives in one task that enters the transport and the
``ClientSession`` and leaves them at ``close``, as anyio's cancel scopes require.

A server that cannot start is an ``McpStartError`` naming it. A server that dies, hangs
past ``call_timeout_s`` or sends a malformed message fails the call it was answering with
an ``McpCallError`` naming it; the session goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import tempfile
import threading
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO, TypeVar

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client

from contextengine.errors import ContextEngineError
from contextengine.toolkit.base import ErrorCode
from contextengine.toolkit.mcp_servers import HttpServer, McpServer, StdioServer

_T = TypeVar("_T")
CLOSE_TIMEOUT_S = 10.0
DESCRIBE_CHARS = 300  # of an exception's text in an error message
STDERR_CHARS = 300  # of a server's stderr, quoted when it fails to start


class McpStartError(ContextEngineError):
    """An MCP server that could not be started or did not answer its handshake."""


class McpCallError(Exception):
    """A tool call that got no result: the server died, hung or sent a malformed message.
    Its message names the server; the tool turns it into an error observation."""

    def __init__(self, message: str, code: ErrorCode = "unavailable") -> None:
        super().__init__(message)
        self.code: ErrorCode = code


@dataclass(frozen=True)
class ServerTool:
    """A tool as its server listed it at session start."""

    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool = False
    destructive: bool = False
    open_world: bool = False


@dataclass
class _Connection:
    name: str
    spec: McpServer
    errlog: TextIO
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    session: ClientSession | None = None
    listed: tuple[ServerTool, ...] = ()
    offered: frozenset[str] = frozenset()  # the server's current tools (tools/list_changed)
    fault: str | None = None  # why it can no longer answer (it exited, say)
    malformed: asyncio.Event | None = None  # set when the call under way met a bad message
    malformed_text: str = ""
    gone: asyncio.Event = field(default_factory=asyncio.Event)  # its session has ended
    handle: concurrent.futures.Future[None] = field(default_factory=concurrent.futures.Future)
    relisting: set[asyncio.Task[None]] = field(default_factory=set)


class McpClients:
    """Sessions with a set of MCP servers, open from ``start`` to ``close``."""

    def __init__(self, call_timeout_s: float) -> None:
        self._call_timeout_s = call_timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="contextengine-mcp", daemon=True
        )
        self._thread.start()
        self._connections: dict[str, _Connection] = {}
        self._closed = False

    @classmethod
    def start(
        cls, servers: Mapping[str, McpServer], start_timeout_s: float, call_timeout_s: float
    ) -> McpClients:
        """Start every server (all at once) and list its tools; one that fails closes the
        others and raises ``McpStartError`` naming it."""
        clients = cls(call_timeout_s)
        try:
            readiness = [clients._open(name, spec) for name, spec in servers.items()]
            deadline = time.monotonic() + start_timeout_s
            for conn, ready in readiness:
                clients._await_start(conn, ready, deadline, start_timeout_s)
        except BaseException:
            clients.close()
            raise
        return clients

    def tools(self) -> list[ServerTool]:
        """Every server's tools as listed at start, by server then tool name."""
        listed = [tool for conn in self._connections.values() for tool in conn.listed]
        return sorted(listed, key=lambda t: (t.server, t.name))

    def offers(self, server: str, tool: str) -> bool:
        """Whether ``server`` still offers ``tool`` (its latest list, after a change)."""
        conn = self._connections.get(server)
        return conn is not None and tool in conn.offered

    def offered(self, server: str) -> tuple[str, ...]:
        """The tools ``server`` offers now, sorted."""
        conn = self._connections.get(server)
        return tuple(sorted(conn.offered)) if conn is not None else ()

    def call(self, server: str, tool: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """Call ``tool`` of ``server`` and wait for its result (``McpCallError`` if none)."""
        conn = self._connections[server]
        if conn.fault is not None or conn.session is None:
            raise McpCallError(f"MCP server {server!r} {conn.fault or 'is not running'}")
        return self._wait(self._call(conn, tool, dict(arguments)), None)

    def close(self) -> None:
        """End every session (stopping stdio servers) and the background loop."""
        if self._closed:
            return
        self._closed = True
        for conn in self._connections.values():
            self._loop.call_soon_threadsafe(conn.stop.set)
        with contextlib.suppress(Exception):
            self._wait(self._all_gone(), CLOSE_TIMEOUT_S + 1)
        for conn in self._connections.values():
            conn.handle.cancel()  # one that would not end when asked
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()
        for conn in self._connections.values():
            conn.errlog.close()

    async def _all_gone(self) -> None:
        gone = [asyncio.ensure_future(c.gone.wait()) for c in self._connections.values()]
        if gone:
            await asyncio.wait(gone, timeout=CLOSE_TIMEOUT_S)

    def _wait(self, coroutine: Coroutine[Any, Any, _T], timeout: float | None) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _open(self, name: str, spec: McpServer) -> tuple[_Connection, asyncio.Future[None]]:
        """Begin starting server ``name``: its connection and the future set once it is up."""
        # closed by ``close``: the server writes to it for the session's whole life
        errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        conn = _Connection(name, spec, errlog)
        self._connections[name] = conn
        ready: asyncio.Future[None] = self._wait(self._future(), None)
        conn.handle = asyncio.run_coroutine_threadsafe(self._hold(conn, ready), self._loop)
        return conn, ready

    def _await_start(
        self, conn: _Connection, ready: asyncio.Future[None], deadline: float, timeout_s: float
    ) -> None:
        name = conn.name
        left = max(deadline - time.monotonic(), 0.0)
        try:
            self._wait(asyncio.wait_for(asyncio.shield(ready), left), left + 5)
        except TimeoutError:
            conn.handle.cancel()  # a server stuck in its handshake is stopped
            raise McpStartError(
                f"MCP server {name!r} did not start within {timeout_s:g} s{self._stderr(conn)}"
            ) from None
        except Exception as exc:
            raise McpStartError(
                f"MCP server {name!r} failed to start: {_describe(exc)}{self._stderr(conn)}"
            ) from None

    async def _future(self) -> asyncio.Future[None]:
        return self._loop.create_future()

    def _stderr(self, conn: _Connection) -> str:
        with contextlib.suppress(OSError, ValueError):
            conn.errlog.seek(0)
            lines = [line.strip() for line in conn.errlog.read().splitlines() if line.strip()]
            if lines:
                return f" (stderr: {lines[-1][:STDERR_CHARS]})"
        return ""

    async def _hold(self, conn: _Connection, ready: asyncio.Future[None]) -> None:
        """Open the session, list the tools, and keep it open until ``close``."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(_transport(conn, stack))
                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=self._handler(conn))
                )
                await session.initialize()
                conn.listed = tuple(await _list_tools(conn.name, session))
                conn.offered = frozenset(t.name for t in conn.listed)
                conn.session = session
                ready.set_result(None)
                await conn.stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            if not isinstance(exc, Exception):
                raise
        finally:
            conn.session = None
            if conn.fault is None:
                conn.fault = "has exited"
            conn.gone.set()

    def _handler(self, conn: _Connection) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                conn.malformed_text = f"sent a malformed message ({_describe(message)})"
                if conn.malformed is not None:
                    conn.malformed.set()
            elif isinstance(message, types.ToolListChangedNotification):
                task = asyncio.ensure_future(self._relist(conn))
                conn.relisting.add(task)
                task.add_done_callback(conn.relisting.discard)

        return on_message

    async def _relist(self, conn: _Connection) -> None:
        """The server changed its tools: note which it still offers (the request's tools
        stay those listed at start; a withdrawn one is refused by its adapter)."""
        if conn.session is None:
            return
        with contextlib.suppress(Exception):
            listed = await _list_tools(conn.name, conn.session)
            conn.offered = frozenset(t.name for t in listed)

    async def _call(
        self, conn: _Connection, tool: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        assert conn.session is not None
        conn.malformed = asyncio.Event()
        call = asyncio.ensure_future(conn.session.call_tool(tool, arguments))
        bad = asyncio.ensure_future(conn.malformed.wait())
        ended = asyncio.ensure_future(conn.gone.wait())
        try:
            done, _ = await asyncio.wait(
                {call, bad, ended},
                timeout=self._call_timeout_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            for future in (call, bad, ended):
                if not future.done():
                    future.cancel()
        server = f"MCP server {conn.name!r}"
        if call in done:
            try:
                return call.result()
            except Exception as exc:
                raise McpCallError(f"{server} failed {tool!r}: {_describe(exc)}") from None
        if bad in done:
            raise McpCallError(
                f"{server} {conn.malformed_text} while answering {tool!r}", "protocol_error"
            )
        if ended in done:
            raise McpCallError(f"{server} {conn.fault or 'has exited'} while answering {tool!r}")
        raise McpCallError(
            f"{server} did not answer {tool!r} within {self._call_timeout_s:g} s", "timeout"
        )


def _transport(conn: _Connection, stack: contextlib.AsyncExitStack) -> Any:
    spec = conn.spec
    if isinstance(spec, StdioServer):
        params = StdioServerParameters(
            command=spec.command, args=list(spec.args), env=dict(spec.env) or None, cwd=spec.cwd
        )
        return stdio_client(params, errlog=conn.errlog)
    assert isinstance(spec, HttpServer)
    client = httpx2.AsyncClient(
        headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0)
    )
    stack.push_async_callback(client.aclose)
    return streamable_http_client(spec.url, http_client=client)


async def _list_tools(server: str, session: ClientSession) -> list[ServerTool]:
    found: list[ServerTool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        found += [_server_tool(server, tool) for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return found


def _server_tool(server: str, tool: types.Tool) -> ServerTool:
    hints = tool.annotations
    return ServerTool(
        server=server,
        name=tool.name,
        description=tool.description or (hints.title if hints and hints.title else "") or "",
        input_schema=dict(tool.input_schema),
        read_only=bool(hints and hints.read_only_hint),
        destructive=bool(hints and hints.destructive_hint),
        open_world=bool(hints and hints.open_world_hint),
    )


def _describe(exc: BaseException) -> str:
    """An exception in one line; a group (anyio's) by its first member."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    lines = [line for line in str(exc).splitlines() if "errors.pydantic.dev" not in line]
    text = " ".join(" ".join(lines).split())
    if len(text) > DESCRIBE_CHARS:
        text = text[: DESCRIBE_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
