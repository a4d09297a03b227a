"""The proxy app: every request passed to the upstream API untouched, model calls recorded.

Request bodies go upstream byte for byte with the client's headers (auth included; hop-by-hop
headers and cookies dropped: a browser's cookies for 127.0.0.1, such as ``serve``'s token,
are not the API vendor's business); replies come back byte for byte, chunk by chunk as they
arrive (event streams, and any other streamed body too), without ``Set-Cookie``. A body over
``max_body_bytes`` is refused with a 413 as soon as that is known (its declared length, or
the bytes read so far). Calls to the model endpoints (``/chat/completions``, ``/responses``,
``/messages``) are recorded after they finish (``Recorder``).

``GET /`` is the live page; its data is at ``GET /_contextengine/stats``. Both show prompt
snippets, so they need the proxy's own token (``GET /?token=...`` moves it into a cookie, or
``Authorization: Bearer``), a local Host (DNS rebinding) and, from a browser, the proxy's own
Origin.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.background import BackgroundTask

from contextengine.errors import ContextEngineError
from contextengine.proxy import MAX_BODY_BYTES
from contextengine.proxy.page import LIVE_PAGE
from contextengine.proxy.recorder import Recorder
from contextengine.server.guard import LOCAL_HOSTS, WILDCARD_HOSTS, host_name

MODEL_ENDPOINTS = ("/chat/completions", "/responses", "/messages")
STATS_PATH = "/_contextengine/stats"
TOKEN_COOKIE = "contextengine_proxy_token"
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
_NOT_FORWARDED = _HOP_BY_HOP | {"host", "content-length", "accept-encoding", "cookie"}
_NOT_RETURNED = _HOP_BY_HOP | {"set-cookie"}


class UpstreamError(ContextEngineError):
    """The ``--upstream`` URL is not an http(s) URL."""


@dataclass(frozen=True)
class PageAccess:
    """Who may read the live page and its data: a request with ``token`` whose Host is one
    of ``hosts`` and whose Origin, if any, is the proxy itself."""

    token: str
    hosts: frozenset[str]

    def refused(self, request: Request, presented: str | None) -> JSONResponse | None:
        """The refusal of ``request`` presenting the token ``presented``, or ``None``."""
        host = request.headers.get("host", "")
        origin = request.headers.get("origin")
        if host_name(host) not in self.hosts:
            return _error(403, "proxy: this page answers local names only")
        if origin is not None and urlsplit(origin).netloc.lower() != host.strip().lower():
            return _error(403, f"proxy: origin {origin!r} may not read this page")
        if presented is None or not secrets.compare_digest(
            presented.encode("utf-8", "surrogateescape"), self.token.encode("utf-8")
        ):
            return _error(401, "proxy: open the page URL the proxy printed (it has ?token=)")
        return None


@dataclass(frozen=True)
class Upstream:
    """Where requests go (``root``, no trailing slash) and the largest body passed on."""

    root: str
    max_body_bytes: int


def create_proxy_app(
    upstream: str,
    log: Path | None,
    host: str = "127.0.0.1",
    *,
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """The proxy to ``upstream`` (e.g. ``https://api.openai.com``), recording to ``log``.

    The live page and its data answer only requests with ``token`` (a new random one when
    ``None``; in ``app.state.token``) whose Host is a local name or ``host`` and whose Origin,
    if any, is the proxy itself.
    """
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UpstreamError(f"--upstream must be an http(s) URL, not {upstream!r}")
    recorder = Recorder(log)
    page_token = token or secrets.token_urlsafe(24)
    app = FastAPI(
        title="contextengine proxy",
        lifespan=_lifespan(recorder),
        docs_url=None,
        redoc_url=None,
    )
    app.state.recorder = recorder
    app.state.token = page_token
    app.state.page = PageAccess(
        page_token, LOCAL_HOSTS | ({host.strip("[]").lower()} - WILDCARD_HOSTS)
    )
    app.state.upstream = Upstream(upstream.rstrip("/"), max_body_bytes)
    app.include_router(page_router)
    # A plain Starlette route: no request validation or dependency injection on the hot path.
    app.add_route("/{path:path}", pass_through, methods=_METHODS, include_in_schema=False)
    return app


def _lifespan(recorder: Recorder) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """One pooled upstream client while the app serves; the recorder closed at its end."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
        timeout = httpx.Timeout(30.0, read=None)  # a stream may pause for minutes
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
            app.state.client = client
            yield
        recorder.close()

    return lifespan


page_router = APIRouter()


@page_router.get("/", include_in_schema=False)
async def live_page(request: Request, token: str | None = None) -> Response:
    """The live page; ``?token=`` moves the token into a cookie first."""
    page: PageAccess = request.app.state.page
    refusal = page.refused(request, token if token is not None else _presented(request))
    if refusal is not None:
        return refusal
    if token is None:
        return HTMLResponse(LIVE_PAGE)
    # The token moves into a cookie (the page's script fetches the stats with it) and out
    # of the address bar and the history.
    moved = RedirectResponse("/", status_code=303)
    moved.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
    return moved


@page_router.get(STATS_PATH, include_in_schema=False)
async def stats(request: Request) -> JSONResponse:
    """The live page's data: the recorder's figures."""
    page: PageAccess = request.app.state.page
    recorder: Recorder = request.app.state.recorder
    return page.refused(request, _presented(request)) or JSONResponse(recorder.stats())


async def pass_through(request: Request) -> Response:
    """Send ``request`` upstream as it is; relay the reply as it arrives (recorded after)."""
    upstream: Upstream = request.app.state.upstream
    body = await _body(request, upstream.max_body_bytes)
    if body is None:
        message = f"proxy: request body too large (the limit is {upstream.max_body_bytes} bytes)"
        return _error(413, message)
    target = _target(upstream.root, request.url.path, request.url.query)
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED]
    headers.append(("accept-encoding", "identity"))
    client: httpx.AsyncClient = request.app.state.client
    upstream_request = client.build_request(request.method, target, headers=headers, content=body)
    try:
        answer = await client.send(upstream_request, stream=True)
    except httpx.HTTPError as exc:
        message = f"proxy: cannot reach the upstream {upstream.root}: {type(exc).__name__}"
        return JSONResponse({"error": {"message": message, "type": "proxy_error"}}, 502)
    record = request.method == "POST" and request.url.path.endswith(MODEL_ENDPOINTS)
    reply_headers = {k: v for k, v in answer.headers.items() if k.lower() not in _NOT_RETURNED}
    return StreamingResponse(
        _relay(answer, request.app.state.recorder, request.url.path, body, record),
        answer.status_code,
        reply_headers,  # content-length kept: the bytes relayed are exactly those
        background=BackgroundTask(answer.aclose),
    )


def _error(status: int, message: str) -> JSONResponse:
    """An error in the shape the model APIs use."""
    return JSONResponse({"error": {"message": message, "type": "proxy_error"}}, status)


def _presented(request: Request) -> str | None:
    """The page token a request carries: ``Authorization: Bearer`` or the cookie."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    cookie = SimpleCookie()
    try:
        cookie.load(request.headers.get("cookie", ""))
    except CookieError:
        return None
    morsel = cookie.get(TOKEN_COOKIE)
    return morsel.value if morsel is not None else None


async def _body(request: Request, limit: int) -> bytes | None:
    """The whole body, or ``None`` as soon as it is known to exceed ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


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
