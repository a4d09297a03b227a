"""The proxy app: every request passed to the upstream API untouched, model calls recorded.

Request bodies go upstream byte for byte with the client's headers (auth included, hop-by-hop
headers dropped); replies come back byte for byte, chunk by chunk as they arrive (event
streams, and any other streamed body too). Calls to the model endpoints (``/chat/completions``, ``/responses``, ``/messages``)
are recorded after they finish (``Recorder``). ``GET /`` is the live page; its data is at
``GET /_contextengine/stats``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.background import BackgroundTask

from contextengine.errors import ContextEngineError
from contextengine.proxy.page import LIVE_PAGE
from contextengine.proxy.recorder import Recorder
from contextengine.server.guard import LOCAL_HOSTS, WILDCARD_HOSTS, host_name

MODEL_ENDPOINTS = ("/chat/completions", "/responses", "/messages")
STATS_PATH = "/_contextengine/stats"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]
# Headers that describe one connection, not the message (RFC 9110 section 7.6.1).
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
    }
)
# httpx sets these for the upstream connection itself; the upstream is asked for identity
# encoding so a recorded reply can be read.
_NOT_FORWARDED = _HOP_BY_HOP | {"host", "content-length", "accept-encoding"}


class UpstreamError(ContextEngineError):
    """The ``--upstream`` URL is not an http(s) URL."""


def create_proxy_app(upstream: str, log: Path | None, host: str = "127.0.0.1") -> FastAPI:
    """The proxy to ``upstream`` (e.g. ``https://api.openai.com``), recording to ``log``.

    The live page and its data show prompt snippets, so they answer only requests whose Host
    is a local name or ``host`` (a page that rebinds its DNS name to 127.0.0.1 gets a 403).
    """
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UpstreamError(f"--upstream must be an http(s) URL, not {upstream!r}")
    root = upstream.rstrip("/")
    recorder = Recorder(log)
    page_hosts = LOCAL_HOSTS | ({host.strip("[]").lower()} - WILDCARD_HOSTS)

    def refused(request: Request) -> JSONResponse | None:
        if host_name(request.headers.get("host", "")) in page_hosts:
            return None
        return JSONResponse(
            {"error": {"message": "proxy: this page answers local names only"}}, 403
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
        timeout = httpx.Timeout(30.0, read=None)  # a stream may pause for minutes
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
            app.state.client = client
            yield
        recorder.close()

    app = FastAPI(title="contextengine proxy", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.recorder = recorder

    @app.get("/", include_in_schema=False)
    async def live_page(request: Request) -> Response:
        return refused(request) or HTMLResponse(LIVE_PAGE)

    @app.get(STATS_PATH, include_in_schema=False)
    async def stats(request: Request) -> JSONResponse:
        return refused(request) or JSONResponse(recorder.stats())

    async def pass_through(request: Request) -> Response:
        body = await request.body()
        target = _target(root, request.url.path, request.url.query)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED]
        headers.append(("accept-encoding", "identity"))
        client: httpx.AsyncClient = request.app.state.client
        upstream_request = client.build_request(
            request.method, target, headers=headers, content=body
        )
        try:
            answer = await client.send(upstream_request, stream=True)
        except httpx.HTTPError as exc:
            message = f"proxy: cannot reach the upstream {root}: {type(exc).__name__}"
            return JSONResponse({"error": {"message": message, "type": "proxy_error"}}, 502)
        record = request.method == "POST" and request.url.path.endswith(MODEL_ENDPOINTS)
        reply_headers = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
        return StreamingResponse(
            _relay(answer, recorder, request.url.path, body, record),
            answer.status_code,
            reply_headers,  # content-length kept: the bytes relayed are exactly those
            background=BackgroundTask(answer.aclose),
        )

    # A plain Starlette route: no request validation or dependency injection on the hot path.
    app.add_route("/{path:path}", pass_through, methods=_METHODS, include_in_schema=False)
    return app


async def _relay(
    answer: httpx.Response, recorder: Recorder, path: str, body: bytes, record: bool
) -> AsyncIterator[bytes]:
    """Pass the reply on chunk by chunk as it arrives; record the call once it has ended."""
    chunks: list[bytes] = []
    try:
        async for chunk in answer.aiter_raw():
            chunks.append(chunk)
            yield chunk
    finally:
        await answer.aclose()
        if record:
            sse = answer.headers.get("content-type", "").startswith("text/event-stream")
            recorder.submit(path, body, answer.status_code, chunks, sse=sse)


def _target(root: str, path: str, query: str) -> str:
    """The upstream URL of ``path``; an upstream given with ``/v1`` does not get it twice."""
    base_path = urlsplit(root).path
    if base_path and (path == base_path or path.startswith(base_path + "/")):
        path = path[len(base_path) :]
    return root + path + (f"?{query}" if query else "")
