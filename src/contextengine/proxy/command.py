"""The ``proxy`` command of the CLI (registered in ``contextengine.cli``)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Annotated

import typer

from contextengine.errors import ContextEngineError
from contextengine.proxy import MAX_BODY_BYTES

DEFAULT_PORT = 8790


def proxy_command(
    upstream: Annotated[
        str, typer.Option(help="The API to pass requests to, e.g. https://api.openai.com.")
    ],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port to listen on (0 picks a free one).", min=0, max=65535)
    ] = DEFAULT_PORT,
    log: Annotated[
        Path, typer.Option(help="Capture file to append every request and its usage to.")
    ] = Path("capture.jsonl"),
    token: Annotated[
        str | None, typer.Option(help="Token of the live page (default: a new random one).")
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option(help="Largest request body passed on (413 beyond it).", min=1)
    ] = MAX_BODY_BYTES,
) -> None:
    """Pass model calls through to UPSTREAM, record them, show the cache live on GET /."""
    try:
        import uvicorn

        from contextengine.proxy.app import create_proxy_app
        from contextengine.server.logs import install_log_filters
        from contextengine.server.protocol import HeaderDeadlineProtocol
    except ImportError as exc:
        raise ContextEngineError(
            "the proxy needs its extra: pip install 'contextengine[server]'"
        ) from exc
    app = create_proxy_app(upstream, log, host, token=token, max_body_bytes=max_body_bytes)
    sock = bind(host, port)
    shown = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{sock.getsockname()[1]}"
    sys.stderr.write(
        f"contextengine: proxy {shown} -> {upstream}, capture {log}\n"
        f"contextengine: point your client at {shown}/v1 (OpenAI) or {shown} (Anthropic); "
        f"live cache page {shown}/?token={app.state.token}\n"
    )
    sys.stderr.flush()
    install_log_filters()
    config = uvicorn.Config(
        app,
        log_level="warning",
        http=HeaderDeadlineProtocol,
        loop="asyncio",
        h11_max_incomplete_event_size=64 * 1024,
    )
    uvicorn.Server(config).run(sockets=[sock])


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket with TCP_NODELAY (no delayed-ACK stalls); one-line error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except (OSError, OverflowError) as exc:
        sock.close()
        raise ContextEngineError(f"cannot listen on {host}:{port}: {exc}") from None
    return sock
