"""``web_search``'s backends (R14.1) behind a small protocol.

Two backends: a self-hosted SearXNG instance (its JSON API, ``GET {base}/search?q=...
&format=json``) and the hosted Brave Search API (``GET {base}/res/v1/web/search?q=...``
with the key in ``X-Subscription-Token``). ``search_backend`` picks the one the settings
name; ``ToolContext.search`` carries it to the tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from contextengine.errors import ConfigError
from contextengine.tools.web_http import WebPolicy, WebRefused, get

BRAVE_URL = "https://api.search.brave.com"
SNIPPET_CHARS = 300


@dataclass(frozen=True)
class SearchResult:
    """One hit: title, URL and the engine's snippet."""

    title: str
    url: str
    snippet: str


class SearchBackend(Protocol):
    """Something that answers a query with ranked results."""

    @property
    def name(self) -> str:
        """The backend's name, shown in error messages."""
        ...

    def search(self, query: str, limit: int, policy: WebPolicy) -> list[SearchResult]:
        """At most ``limit`` results for ``query``; raises ``WebRefused`` on failure."""
        ...


@dataclass(frozen=True)
class SearxngBackend:
    """A SearXNG instance's JSON API (the instance must enable the ``json`` format)."""

    base_url: str
    name: str = "searxng"

    def search(self, query: str, limit: int, policy: WebPolicy) -> list[SearchResult]:
        """Results of ``{base}/search?q=...&format=json``."""
        url = f"{self.base_url.rstrip('/')}/search?{urlencode({'q': query, 'format': 'json'})}"
        answer = _json(url, policy, {"Accept": "application/json"})
        hits = answer.get("results") if isinstance(answer, Mapping) else None
        return _results(hits, "content", limit)


@dataclass(frozen=True)
class BraveBackend:
    """The Brave Search web search API, authenticated by a subscription key."""

    key: str
    base_url: str = BRAVE_URL
    name: str = "brave"

    def search(self, query: str, limit: int, policy: WebPolicy) -> list[SearchResult]:
        """Results of ``{base}/res/v1/web/search?q=...&count=...``."""
        params = urlencode({"q": query, "count": min(limit, 20)})
        url = f"{self.base_url.rstrip('/')}/res/v1/web/search?{params}"
        headers = {"Accept": "application/json", "X-Subscription-Token": self.key}
        answer = _json(url, policy, headers)
        web = answer.get("web") if isinstance(answer, Mapping) else None
        hits = web.get("results") if isinstance(web, Mapping) else []
        return _results(hits, "description", limit)

    def __repr__(self) -> str:
        return f"BraveBackend(base_url={self.base_url!r}, key=<hidden>)"


def _json(url: str, policy: WebPolicy, headers: Mapping[str, str]) -> Any:
    response = get(url, policy, headers=headers, checked=False)
    try:
        return json.loads(response.body)
    except ValueError:
        raise WebRefused("http_error", f"the search backend's answer is not JSON: {url}") from None


def _results(hits: Any, snippet_key: str, limit: int) -> list[SearchResult]:
    if not isinstance(hits, list):
        raise WebRefused("http_error", "the search backend's answer has no result list")
    results = []
    for hit in hits:
        if isinstance(hit, Mapping) and isinstance(hit.get("url"), str):
            results.append(
                SearchResult(
                    title=str(hit.get("title") or "").strip(),
                    url=hit["url"],
                    snippet=str(hit.get(snippet_key) or "").strip()[:SNIPPET_CHARS],
                )
            )
    return results[:limit]


def search_backend(config: Any) -> SearchBackend | None:
    """The backend a ``Config`` names (``None`` for ``none``); ``ConfigError`` when a
    setting it needs is missing."""
    name = config.web_search_backend
    if name == "none":
        return None
    if name == "searxng":
        if not config.web_search_url:
            raise ConfigError("web_search_backend = 'searxng' needs web_search_url")
        return SearxngBackend(config.web_search_url)
    if not config.web_search_key:
        raise ConfigError(
            "web_search_backend = 'brave' needs web_search_key "
            "(or CONTEXTENGINE_WEB_SEARCH_KEY in the environment)"
        )
    return BraveBackend(config.web_search_key, config.web_search_url or BRAVE_URL)
