"""Running the app for ``contextengine serve``: bind, print the URL with its token, serve.

Limits that keep one client from starving the others: request headers must arrive within
``protocol.HEADER_TIMEOUT_S``, idle keep-alive connections close after ``KEEP_ALIVE_S``, a
request's headers may not exceed ``MAX_HEADER_BYTES``, and at most ``max_connections()``
connections are open at once (kept below the process's file descriptor limit, raised to its
hard limit first, so ``accept`` never fails for want of descriptors).
"""

from __future__ import annotations

import gc
import resource
import socket
import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from contextengine.compress.topic import load_word_frequencies
from contextengine.context.tokens import shared_counter
from contextengine.errors import ContextEngineError
from contextengine.prices import load_price_table
from contextengine.server.guard import WILDCARD_HOSTS
from contextengine.server.logs import install_log_filters
from contextengine.server.protocol import HeaderDeadlineProtocol

KEEP_ALIVE_S = 5
MAX_HEADER_BYTES = 64 * 1024
SPARE_FILES = 128  # descriptors kept for what is not a client connection (logs, store, tools)
MAX_CONNECTIONS = 4096


def max_connections() -> int:
    """Connections served at once: below the descriptor limit (raised to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else MAX_CONNECTIONS + SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass  # keep the soft limit we were given
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, soft - SPARE_FILES))


def server_config(app: FastAPI, host: str, port: int) -> uvicorn.Config:
    """uvicorn's settings for ``app`` with the limits above."""
    install_log_filters()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info",
        http=HeaderDeadlineProtocol,
        loop="asyncio",
        timeout_keep_alive=KEEP_ALIVE_S,
        limit_concurrency=max_connections(),
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )


def warm_up() -> None:
    """Load the tables every turn reads, then exempt all that is loaded from garbage collection."""
    # Every turn counts tokens, reads tool results for names and is priced; loading the BPE
    # tables, the word frequencies and the price table takes seconds of CPU (holding the
    # GIL), which the first turns would otherwise take from every request served meanwhile.
    shared_counter()
    load_word_frequencies()
    load_price_table()
    # A full collection walks every container still tracked: with these tables and the
    # imported modules that is a 50-90 ms pause of every request in flight. Frozen, they
    # live for the process and the collector walks only what the turns create.
    gc.freeze()


def run_server(app: FastAPI, host: str, port: int, workspace: Path) -> None:
    """Serve ``app`` on ``host:port`` until interrupted; the URL to open goes to stderr."""
    config = server_config(app, host, port)
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
    warm_up()
    bound = sock.getsockname()[1]
    shown = "127.0.0.1" if host in WILDCARD_HOSTS else host
    shown = f"[{shown}]" if ":" in shown else shown
    sys.stderr.write(
        f"contextengine: serving {workspace} on http://{shown}:{bound}/\n"
        f"contextengine: open http://{shown}:{bound}/?token={app.state.token}\n"
    )
    sys.stderr.flush()
    uvicorn.Server(config).run(sockets=[sock])
