"""Polite HTTP GETs for the web tools (R14): timeouts, a size cap, a named user agent,
robots.txt, and a guard on the addresses a model-chosen URL may reach.

Only ``http`` and ``https`` URLs are fetched. By default a URL whose host resolves to a
private, loopback, link-local or otherwise non-public address is refused (at every
redirect too), so a model cannot make the engine read an intranet page or a cloud
metadata endpoint; ``allow_private`` lifts that (tests serve pages on 127.0.0.1). The
search backend's own URL is the user's configuration, not the model's, and is not
checked. The address is checked before the connection opens by name, so a DNS answer
that changes in between (rebinding) is not caught.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.error
import urllib.request
import urllib.robotparser
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.message import Message
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

USER_AGENT_TOKEN = "contextengine"
USER_AGENT = f"{USER_AGENT_TOKEN} (LLM agent web tool; honours robots.txt)"
ROBOTS_MAX_BYTES = 500_000

WebErrorCode = Literal["blocked_url", "http_error", "network_error", "timeout"]


class WebRefused(Exception):
    """A fetch that did not happen or failed; ``code`` is the tool error code."""

    def __init__(self, code: WebErrorCode, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


@dataclass(frozen=True)
class WebPolicy:
    """How the web tools behave toward the sites they reach."""

    timeout_s: float = 20.0
    max_bytes: int = 2_000_000
    allow_private: bool = False
    respect_robots: bool = True
    user_agent: str = USER_AGENT

    @classmethod
    def from_config(cls, config: Any) -> WebPolicy:
        """The policy a ``Config`` describes."""
        return cls(
            timeout_s=config.web_timeout_s,
            max_bytes=config.web_max_bytes,
            allow_private=config.web_allow_private,
        )


@dataclass(frozen=True)
class WebResponse:
    """A fetched body (cut at the policy's cap) and where it finally came from."""

    url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool


@dataclass
class RobotsCache:
    """robots.txt rules per origin, fetched once per session."""

    rules: dict[str, urllib.robotparser.RobotFileParser] = field(default_factory=dict)

    def allows(self, url: str, policy: WebPolicy) -> bool:
        """Whether robots.txt of ``url``'s site lets our user agent fetch it."""
        parts = urlsplit(url)
        origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        if origin not in self.rules:
            self.rules[origin] = _robots(origin, policy)
        return self.rules[origin].can_fetch(USER_AGENT_TOKEN, url)


def _robots(origin: str, policy: WebPolicy) -> urllib.robotparser.RobotFileParser:
    parser = urllib.robotparser.RobotFileParser(f"{origin}/robots.txt")
    try:
        response = get(f"{origin}/robots.txt", policy, max_bytes=ROBOTS_MAX_BYTES)
    except WebRefused as exc:
        # 401/403 forbid everything (as robotparser does); a missing or unreachable
        # robots.txt allows everything.
        parser.parse(["User-agent: *", "Disallow: /"] if exc.status in (401, 403) else [])
        return parser
    parser.parse(response.body.decode("utf-8", errors="replace").splitlines())
    return parser


def check_url(url: str, policy: WebPolicy) -> None:
    """Refuse a URL the policy does not let a model reach."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebRefused("blocked_url", f"URL {url!r:.200} is malformed: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise WebRefused("blocked_url", f"only http and https URLs are fetched, not {url!r:.200}")
    if not parts.hostname:
        raise WebRefused("blocked_url", f"URL {url!r:.200} has no host")
    if policy.allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, port or 0, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise WebRefused("network_error", f"cannot resolve {parts.hostname}: {exc}") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not address.is_global:
            raise WebRefused(
                "blocked_url",
                f"{parts.hostname} resolves to the non-public address {address}; "
                "private and loopback addresses are not fetched (setting web_allow_private)",
            )


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to a URL the policy allows."""

    def __init__(self, policy: WebPolicy) -> None:
        self.policy = policy

    def http_error_302(self, req, fp, code, msg, headers):  # type: ignore[no-untyped-def]
        """Check the target before urllib looks at it."""
        location = headers.get("location") or headers.get("uri")
        if location:
            check_url(urljoin(req.full_url, location), self.policy)
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def get(
    url: str,
    policy: WebPolicy,
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int | None = None,
    checked: bool = True,
) -> WebResponse:
    """GET ``url`` under ``policy``; failures raise ``WebRefused`` with a tool error code.

    ``checked=False`` skips the address guard (for the user's configured search backend).
    """
    cap = policy.max_bytes if max_bytes is None else max_bytes
    if checked:
        check_url(url, policy)
    request = urllib.request.Request(
        url, headers={"User-Agent": policy.user_agent, **(headers or {})}
    )
    handlers = [_CheckedRedirects(policy)] if checked else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(request, timeout=policy.timeout_s) as response:
            body = response.read(cap + 1)
            info: Message = response.headers
            final = response.geturl()
            status = response.status
    except urllib.error.HTTPError as exc:
        message = f"GET {url} answered HTTP {exc.code} {exc.reason}"
        raise WebRefused("http_error", message, exc.code) from None
    except TimeoutError:
        raise WebRefused("timeout", f"GET {url} timed out after {policy.timeout_s:g} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, WebRefused):
            raise exc.reason from None
        raise WebRefused("network_error", f"GET {url} failed: {exc.reason}") from None
    except OSError as exc:
        raise WebRefused("network_error", f"GET {url} failed: {exc}") from None
    return WebResponse(
        url=final,
        status=status,
        content_type=info.get_content_type(),
        charset=info.get_content_charset(),
        body=body[:cap],
        truncated=len(body) > cap,
    )
