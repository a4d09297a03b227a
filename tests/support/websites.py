"""A small web on 127.0.0.1 for the web tools' tests: pages, robots.txt, search APIs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

BRAVE_KEY = "test-key-123"
PARAGRAPH = "Context engineering keeps the prompt prefix stable so the KV cache hits. "

ARTICLE = (
    "<html><head><title>Cache notes</title></head><body>"
    "<nav><a href='/'>Home</a> <a href='/x'>Menu entry</a></nav>"
    "<article><h1>KV cache notes</h1>"
    + "".join(f"<p>{PARAGRAPH * 4} Paragraph {n}.</p>" for n in range(12))
    + "</article><footer>Copyright footer text</footer></body></html>"
)
SHORT = "<html><head><title>Short</title></head><body><article><p>Just one line.</p></article></body></html>"
ROBOTS = "User-agent: contextengine\nDisallow: /private/\n\nUser-agent: *\nDisallow: /nobody/\n"


@dataclass
class Site:
    """The running server: its base URL and every request it saw (path, headers)."""

    base: str
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def paths(self) -> list[str]:
        """The paths requested so far, in order."""
        return [path for path, _ in self.seen]


def _searxng(query: str) -> dict:
    return {
        "query": query,
        "results": [
            {"title": f"{query} one", "url": "https://one.example/a", "content": "first hit"},
            {"title": f"{query} two", "url": "https://two.example/b", "content": "second hit"},
            {"title": "no url"},
        ],
    }


def _brave(query: str, count: int) -> dict:
    hits = [
        {"title": f"{query} {n}", "url": f"https://b{n}.example/", "description": f"snippet {n}"}
        for n in range(count + 5)
    ]
    return {"type": "search", "web": {"type": "search", "results": hits[:count]}}


class _Handler(BaseHTTPRequestHandler):
    site: Site

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.site.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        if parts.path == "/robots.txt":
            self._send(200, "text/plain", ROBOTS.encode())
        elif parts.path in ("/article.html", "/private/page.html", "/nobody/page.html"):
            self._send(200, "text/html; charset=utf-8", ARTICLE.encode())
        elif parts.path == "/short.html":
            self._send(200, "text/html", SHORT.encode())
        elif parts.path == "/notes.txt":
            self._send(200, "text/plain; charset=utf-8", b"plain notes\nline two\n")
        elif parts.path == "/big.html":
            self._send(200, "text/html", ARTICLE.encode() * 50)
        elif parts.path == "/blob.bin":
            self._send(200, "application/octet-stream", b"\0\1\2")
        elif parts.path == "/to-file":
            self._redirect("file:///etc/passwd")
        elif parts.path == "/to-article":
            self._redirect("/article.html")
        elif parts.path == "/search" and query.get("format") == "json":
            self._json(200, _searxng(query.get("q", "")))
        elif parts.path == "/res/v1/web/search":
            if self.headers.get("X-Subscription-Token") != BRAVE_KEY:
                self._json(401, {"error": "bad key"})
            else:
                self._json(200, _brave(query.get("q", ""), int(query.get("count", "20"))))
        else:
            self._send(404, "text/plain", b"not found")

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _json(self, status: int, body: dict) -> None:
        self._send(status, "application/json", json.dumps(body).encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@contextmanager
def running_site() -> Iterator[Site]:
    """Serve the site on a free port of 127.0.0.1 for the block's duration."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    site = Site(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = type("Handler", (_Handler,), {"site": site})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
