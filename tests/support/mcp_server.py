"""A real MCP server for the tests, written with the SDK's ``MCPServer`` (FastMCP in mcp 1).

``python tests/support/mcp_server.py`` serves over stdio; ``--http PORT`` over streamable
HTTP on 127.0.0.1:PORT; ``--generated N`` adds N generated tools (``gen_000`` ...) for the
tool-search tests; ``--headers`` adds ``request_headers``, which returns the HTTP headers
of the request that called it (over HTTP). Its tools cover what a client must handle: annotations, a big result,
an image and an embedded resource, an ``isError`` result, a call that hangs, one that
kills the server, one that answers with a malformed line, and one that withdraws a tool
(``tools/list_changed``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, ImageContent, TextResourceContents, ToolAnnotations

TOPICS = (
    "invoice",
    "weather",
    "calendar",
    "ticket",
    "payment",
    "inventory",
    "shipment",
    "customer",
    "report",
    "translation",
)
VERBS = ("create", "list", "update", "archive", "export")
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 92).decode()


def build(generated: int, headers: bool = False) -> MCPServer:
    """The server with its fixed tools and ``generated`` more (``headers``: and
    ``request_headers``)."""
    server = MCPServer("contextengine-test")
    if headers:

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        def request_headers(ctx: Context) -> str:
            """The HTTP headers of the request that called this tool, one per line."""
            request = ctx.request_context.request
            found = getattr(request, "headers", {})
            return "\n".join(f"{name}: {value}" for name, value in sorted(found.items()))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def drop_table(table: str) -> str:
        """Delete a table and every row in it."""
        return f"table {table} dropped"

    @server.tool(annotations=ToolAnnotations(open_world_hint=True, read_only_hint=False))
    def post_message(channel: str, text: str) -> str:
        """Post a message to a chat channel on the internet."""
        return f"posted to {channel}"

    @server.tool()
    def big(lines: int) -> str:
        """Return a long numbered listing."""
        return "\n".join(f"line {n:05d} of the big listing" for n in range(lines))

    @server.tool()
    def fail(reason: str) -> str:
        """Always fail with the reason."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def picture() -> list[ImageContent | EmbeddedResource]:
        """Return an image and an embedded text resource."""
        return [
            ImageContent(type="image", data=PIXEL, mime_type="image/png"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="file:///notes.txt", mime_type="text/plain", text="the notes"
                ),
            ),
        ]

    @server.tool()
    async def hang(seconds: float) -> str:
        """Sleep for the given seconds, then answer."""
        await asyncio.sleep(seconds)
        return "woke up"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    @server.tool()
    def crash() -> str:
        """Kill the server process."""
        os._exit(3)

    @server.tool()
    async def garble() -> str:
        """Answer with a line that is not JSON-RPC instead of a result."""
        os.write(_wire_fd(), b"this is {not json-rpc\n")
        await asyncio.sleep(3600)
        return "garbled"

    @server.tool()
    async def withdraw(name: str, ctx: Context) -> str:
        """Stop offering a tool and tell the client its tools changed."""
        server.remove_tool(name)
        await ctx.session.send_tool_list_changed()
        return f"{name} withdrawn"

    for n in range(generated):
        topic, verb = TOPICS[n % len(TOPICS)], VERBS[(n // len(TOPICS)) % len(VERBS)]
        server.add_tool(
            _generated(n),
            name=f"gen_{n:03d}",
            description=f"{verb.capitalize()} the {topic} records of region {n} "
            f"(generated tool {n}: {verb} {topic}).",
        )
    return server


WIRE = os.fstat(1)  # the protocol pipe, before the SDK moves it off fd 1 (prints go to stderr)


def _wire_fd() -> int:
    """The descriptor the SDK now writes the protocol to (a duplicate of the first fd 1)."""
    for fd in range(3, 256):
        try:
            found = os.fstat(fd)
        except OSError:
            continue
        if (found.st_dev, found.st_ino) == (WIRE.st_dev, WIRE.st_ino):
            return fd
    return sys.stdout.fileno()


def _generated(n: int):  # type: ignore[no-untyped-def]
    def tool(record_id: int, note: str = "") -> str:
        return f"gen_{n:03d} handled record {record_id} {note}".strip()

    return tool


def main() -> None:
    """Serve over stdio, or over streamable HTTP with ``--http PORT``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--generated", type=int, default=0)
    parser.add_argument("--headers", action="store_true")
    options = parser.parse_args()
    server = build(options.generated, options.headers)
    if options.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)


if __name__ == "__main__":
    main()
