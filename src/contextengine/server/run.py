"""Running the app for ``contextengine serve``: bind, print the URL with its token, serve."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from contextengine.context.tokens import shared_counter
from contextengine.errors import ContextEngineError
from contextengine.server.guard import WILDCARD_HOSTS


def run_server(app: FastAPI, host: str, port: int, workspace: Path) -> None:
    """Serve ``app`` on ``host:port`` until interrupted; the URL to open goes to stderr."""
    config = uvicorn.Config(app, host=host, port=port, log_level="info")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Naming the protocol lets asyncio set TCP_NODELAY on each connection: without it a
    # response's second write waits for the client's delayed ACK (40 ms on keep-alive).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(config.backlog)  # connections wait in the queue until the app is up
    except (OSError, OverflowError) as exc:
        sock.close()
        raise ContextEngineError(f"cannot listen on {host}:{port}: {exc}") from None
    # Every turn counts tokens; loading the BPE tables takes a second or more of CPU, which
    # the first turn would otherwise take from every request served meanwhile.
    shared_counter()
    bound = sock.getsockname()[1]
    shown = "127.0.0.1" if host in WILDCARD_HOSTS else host
    shown = f"[{shown}]" if ":" in shown else shown
    sys.stderr.write(
        f"contextengine: serving {workspace} on http://{shown}:{bound}/\n"
        f"contextengine: open http://{shown}:{bound}/?token={app.state.token}\n"
    )
    sys.stderr.flush()
    uvicorn.Server(config).run(sockets=[sock])
