"""Starting the test MCP server (``mcp_server.py``) for the suite: over stdio as a
``mcpServers`` entry, or over streamable HTTP on a free port of 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SERVER = Path(__file__).with_name("mcp_server.py")
TIME_SERVER: dict[str, Any] = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
"""``mcp-server-time`` from PyPI: an MCP server not written in this project."""


def stdio_entry(*options: str) -> dict[str, Any]:
    """The ``mcpServers`` entry of the test server over stdio (``options``: its flags)."""
    return {"command": sys.executable, "args": [str(SERVER), *options]}


def free_port() -> int:
    """A TCP port of 127.0.0.1 that is free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_server(*options: str, timeout_s: float = 90.0) -> Iterator[str]:
    """The test server over streamable HTTP; yields its endpoint URL until the block ends."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the HTTP MCP server exited ({process.returncode})")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the HTTP MCP server did not listen in time") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
