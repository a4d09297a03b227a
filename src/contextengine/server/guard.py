"""The server's front door: Host and Origin checks, the API token, and a body size limit.

A local server is reachable from any web page the user opens: a page can POST to it
(cross-site requests) or rebind its own DNS name to 127.0.0.1 (then the Host header names
that page's domain). So every request must name an allowed host, a request from a browser
page must come from the server's own origin, every ``/api`` call must carry the token, and
no body may exceed the size limit. Each refusal is a JSON ``{"error": ...}``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contextengine.server.errors import error_response

TOKEN_COOKIE = "contextengine_token"
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

NO_TOKEN = (
    "missing or wrong API token: send 'Authorization: Bearer <token>', "
    "or open the URL 'contextengine serve' printed (it carries ?token=...)"
)


@dataclass(frozen=True)
class GuardSettings:
    """What the front door lets in."""

    token: str
    allowed_hosts: frozenset[str]
    max_body_bytes: int

    @classmethod
    def of(cls, token: str, hosts: Iterable[str], max_body_bytes: int) -> GuardSettings:
        """Settings for ``token``; ``hosts`` (besides the local names) may be named in Host."""
        named = {h.strip().lower().strip("[]") for h in hosts} - WILDCARD_HOSTS
        return cls(token, frozenset(LOCAL_HOSTS | named), max_body_bytes)

    def token_matches(self, candidate: str | None) -> bool:
        """Whether ``candidate`` is the token (compared in constant time)."""
        return candidate is not None and secrets.compare_digest(
            candidate.encode("utf-8", "surrogateescape"), self.token.encode("utf-8")
        )


def host_name(host_header: str) -> str:
    """The name in a Host header, without port and IPv6 brackets, lower-cased."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """ASGI middleware applying ``GuardSettings`` to every HTTP request."""

    def __init__(self, app: ASGIApp, settings: GuardSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request, or pass it on (with its body read within the limit)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, message = refusal
            await error_response(status, message)(scope, receive, send)
            return
        if scope["method"] in BODY_METHODS:
            body = await self._read_body(receive, headers)
            if body is None:
                limit = self.settings.max_body_bytes
                message = (
                    f"request body too large: the limit is {limit} bytes (server_max_body_bytes)"
                )
                await error_response(413, message)(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if host_name(host) not in self.settings.allowed_hosts:
            return 403, (
                f"host {host!r} is not allowed: use localhost, 127.0.0.1, the address the "
                "server listens on, or add the name to server_allowed_hosts (--allow-host)"
            )
        origin = headers.get("origin")
        if origin is not None and not _same_origin(origin, host):
            return 403, f"origin {origin!r} may not use this server (cross-site request)"
        path: str = scope["path"]
        is_api = path == "/api" or path.startswith("/api/")
        if is_api and not self.settings.token_matches(_presented_token(headers)):
            return 401, NO_TOKEN
        return None

    async def _read_body(self, receive: Receive, headers: dict[str, str]) -> bytes | None:
        """The whole body, or ``None`` as soon as it is known to exceed the limit."""
        limit = self.settings.max_body_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _same_origin(origin: str, host: str) -> bool:
    parts = urlsplit(origin)
    return parts.scheme in {"http", "https"} and parts.netloc.lower() == host.strip().lower()


def _presented_token(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except CookieError:  # a malformed Cookie header carries no token
        return None
    morsel = cookie.get(TOKEN_COOKIE)
    return morsel.value if morsel is not None else None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands out ``body`` once, then waits on the real one (disconnects)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
