"""The server's front door: Host and Origin checks, the API token, and a body size limit.

A local server is reachable from any web page the user opens: a page can POST to it
(cross-site requests) or rebind its own DNS name to 127.0.0.1 (then the Host header names
that page's domain). So every request must name an allowed host, a request from a browser
page must come from the server's own origin, every ``/api`` call must carry the token, and
no body may exceed the size limit. Each refusal is a JSON ``{"error": ...}``.

Wrong tokens are throttled per client address, and only wrong tokens: the right one always
passes at once (the user's browser and a guessing script share 127.0.0.1). After
``FREE_FAILURES`` wrong tokens, each further one is answered (429) only after a lockout of
1 s, doubling with each failure up to ``MAX_LOCKOUT_S``, and at most ``MAX_HELD`` such
answers wait per address: more requests from it meanwhile are refused at once without their
token being looked at (else an immediate answer would tell a right guess from a wrong one).
So an address tests at most ``MAX_HELD`` tokens per lockout. A right token does not clear the
count (a guesser would get its free failures back with each request of the user); an address
with no wrong token for ``MAX_LOCKOUT_S`` after its lockout starts over.
Every response carries headers that keep pages from being framed, leaking the address (and
so a ``?token=``) as a referrer, or running scripts from anywhere but the server.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contextengine.server.errors import error_response

TOKEN_COOKIE = "contextengine_token"
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

FREE_FAILURES = 10
MAX_LOCKOUT_S = 60.0
MAX_HELD = 3  # wrong-token answers held at once per address
MAX_CLIENTS_TRACKED = 10_000
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
)

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


@dataclass
class _Client:
    """One address's wrong tokens: how many, the last one, its lockout, answers held."""

    failures: int = 0
    last_failure: float = 0.0
    locked_until: float = 0.0
    held: int = 0


@dataclass(frozen=True)
class Refusal:
    """A request refused: status and message; a wrong token's answer may wait ``hold_s``."""

    status: int
    message: str
    hold_s: float = 0.0
    retry_after_s: float | None = None


@dataclass
class Throttle:
    """Wrong-token counts, lockouts and held answers per client address."""

    clients: dict[str, _Client] = field(default_factory=dict)

    def crowded_s(self, client: str) -> float | None:
        """While ``client`` has ``MAX_HELD`` answers waiting, the seconds its lockout still
        lasts (its request is refused unread); else ``None``."""
        record = self.clients.get(client)
        if record is None or record.held < MAX_HELD:
            return None
        return max(1.0, record.locked_until - time.monotonic())

    def failed(self, client: str) -> float:
        """Count a wrong token: the seconds its answer must wait (0 within the free ones)."""
        now = time.monotonic()
        record = self.clients.get(client)
        if record is None:
            if len(self.clients) >= MAX_CLIENTS_TRACKED:
                self.clients.clear()  # a flood of addresses: start over rather than grow
            record = self.clients[client] = _Client()
        if now > max(record.last_failure, record.locked_until) + MAX_LOCKOUT_S:
            record.failures = 0  # quiet long enough: start over
        record.failures += 1
        record.last_failure = now
        if record.failures <= FREE_FAILURES:
            return 0.0
        lockout = min(MAX_LOCKOUT_S, 2.0 ** (record.failures - FREE_FAILURES - 1))
        record.locked_until = now + lockout
        return lockout

    async def hold(self, client: str, seconds: float) -> None:
        """Wait ``seconds`` as one of ``client``'s held answers."""
        record = self.clients.setdefault(client, _Client())
        record.held += 1
        try:
            await asyncio.sleep(seconds)
        finally:
            record.held -= 1


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
        self.throttle = Throttle()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request, or pass it on (with its body read within the limit)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            if refusal.hold_s > 0:
                await self.throttle.hold(_client(scope), refusal.hold_s)
            response = error_response(refusal.status, refusal.message)
            if refusal.retry_after_s is not None:
                response.headers["retry-after"] = str(max(1, round(refusal.retry_after_s)))
            await response(scope, receive, send)
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

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> Refusal | None:
        host = headers.get("host", "")
        if host_name(host) not in self.settings.allowed_hosts:
            return Refusal(
                403,
                f"host {host!r} is not allowed: use localhost, 127.0.0.1, the address the "
                "server listens on, or add the name to server_allowed_hosts (--allow-host)",
            )
        origin = headers.get("origin")
        if origin is not None and not _same_origin(origin, host):
            return Refusal(403, f"origin {origin!r} may not use this server (cross-site request)")
        path: str = scope["path"]
        is_api = path == "/api" or path.startswith("/api/")
        if is_api:
            presented = _presented_token(headers)
        elif path == "/" and b"token=" in scope.get("query_string", b""):
            presented = _query_token(scope)
        else:
            return None
        client = _client(scope)
        crowded = self.throttle.crowded_s(client)
        if crowded is not None:
            return Refusal(
                429,
                f"too many wrong API tokens from this address: {MAX_HELD} answers are "
                f"waiting; try again in {crowded:.0f} s",
                retry_after_s=crowded,
            )
        if self.settings.token_matches(presented):
            return None
        hold = self.throttle.failed(client)
        if hold == 0:
            return Refusal(401, NO_TOKEN)
        return Refusal(
            429,
            f"too many wrong API tokens from this address: this answer waited {hold:.0f} s, "
            f"each further wrong token doubles that (up to {MAX_LOCKOUT_S:.0f} s). {NO_TOKEN}",
            hold_s=hold,
        )

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


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


def _query_token(scope: Scope) -> str | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[0] if values else None


def _with_security_headers(send: Send) -> Send:
    """``send`` that adds ``SECURITY_HEADERS`` to the response's start."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *SECURITY_HEADERS]}
        await send(message)

    return sending


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
