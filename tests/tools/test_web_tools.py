"""web_fetch and web_search against a site the test serves on 127.0.0.1 (R14)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path

import pytest

from contextengine import Agent, Config
from contextengine.compress.compressors import OTHER_HEAD_CHARS, compress
from contextengine.errors import ConfigError
from contextengine.providers.scripted import ScriptedProvider
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.tools.search_backend import BraveBackend, SearxngBackend, search_backend
from contextengine.tools.web_http import USER_AGENT, WebPolicy
from contextengine.tools.web_search import WebSearch
from contextengine.types import ToolCall
from support.websites import BRAVE_KEY, PARAGRAPH, Site, running_site

extracts_html = pytest.mark.skipif(
    find_spec("trafilatura") is None, reason="HTML extraction needs the 'web' extra"
)

LOOPBACK_OK = WebPolicy(allow_private=True, timeout_s=10)


@pytest.fixture
def site() -> Iterator[Site]:
    with running_site() as running:
        yield running


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(Workspace(tmp_path), web=LOOPBACK_OK)


def run(ctx: ToolContext, name: str, **arguments: object) -> ToolOutcome:
    tools = default_toolset().plus(WebSearch())
    return tools.execute(ToolCall("c1", name, json.dumps(arguments)), ctx)


@extracts_html
def test_fetch_returns_the_main_text_without_navigation(site: Site, ctx: ToolContext) -> None:
    out = run(ctx, "web_fetch", url=f"{site.base}/article.html")
    assert out.status == "success" and out.kind == "webpage"
    head = f"Title: KV cache notes\nURL: {site.base}/article.html\n\n# KV cache notes\n\n"
    assert out.text.startswith(head)
    assert PARAGRAPH.strip() in out.text and "Paragraph 11." in out.text
    assert "Menu entry" not in out.text and "Copyright footer" not in out.text
    assert out.data["title"] == "KV cache notes" and out.data["truncated"] is False
    assert len(out.text) > 2000  # over the webpage threshold: it will be externalized
    assert all(headers["user-agent"] == USER_AGENT for _, headers in site.seen)
    assert "contextengine" in USER_AGENT


@extracts_html
def test_robots_disallow_for_our_agent_is_honoured_and_fetched_once(
    site: Site, ctx: ToolContext
) -> None:
    refused = run(ctx, "web_fetch", url=f"{site.base}/private/page.html")
    assert refused.error.code == "robots_disallowed"
    assert "/private/page.html" not in site.paths()
    # Rules for other agents do not apply to us.
    assert run(ctx, "web_fetch", url=f"{site.base}/nobody/page.html").status == "success"
    assert run(ctx, "web_fetch", url=f"{site.base}/short.html").status == "success"
    assert site.paths().count("/robots.txt") == 1


@extracts_html
def test_robots_can_be_ignored_by_policy(site: Site, ctx: ToolContext) -> None:
    ctx = replace(ctx, web=replace(LOOPBACK_OK, respect_robots=False))
    assert run(ctx, "web_fetch", url=f"{site.base}/private/page.html").status == "success"
    assert "/robots.txt" not in site.paths()


def test_loopback_is_refused_by_default(site: Site, tmp_path: Path) -> None:
    default = ToolContext(Workspace(tmp_path))
    out = run(default, "web_fetch", url=f"{site.base}/article.html")
    assert out.error.code == "blocked_url"
    assert "non-public address 127.0.0.1" in out.error.message
    assert "web_allow_private" in out.error.message
    assert site.seen == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://127.0.0.1/x",
        "http:///nohost",
        "javascript:alert(1)",
        "http://127.0.0.1:99999/",
        "http://[::1/",
    ],
)
def test_only_http_urls_with_a_host_are_fetched(url: str, ctx: ToolContext) -> None:
    assert run(ctx, "web_fetch", url=url).error.code == "blocked_url"


@extracts_html
def test_redirects_are_checked_too(site: Site, ctx: ToolContext) -> None:
    out = run(ctx, "web_fetch", url=f"{site.base}/to-file")
    assert out.error.code == "blocked_url" and "file:///etc/passwd" in out.error.message
    moved = run(ctx, "web_fetch", url=f"{site.base}/to-article")
    assert moved.status == "success" and moved.data["url"] == f"{site.base}/article.html"


@extracts_html
def test_size_cap_cuts_the_page_and_says_so(site: Site, ctx: ToolContext) -> None:
    ctx = replace(ctx, web=replace(LOOPBACK_OK, max_bytes=3000))
    out = run(ctx, "web_fetch", url=f"{site.base}/big.html")
    assert out.status == "success" and out.data["truncated"] is True
    assert out.data["bytes"] == 3000 and "(page cut at 3000 bytes)" in out.text


def test_plain_text_is_kept_and_binary_refused(site: Site, ctx: ToolContext) -> None:
    plain = run(ctx, "web_fetch", url=f"{site.base}/notes.txt")
    assert plain.text.endswith("\n\nplain notes\nline two\n")
    assert run(ctx, "web_fetch", url=f"{site.base}/blob.bin").error.code == "not_text"


def test_http_errors_and_dead_ports_are_values(site: Site, ctx: ToolContext) -> None:
    missing = run(ctx, "web_fetch", url=f"{site.base}/missing.html")
    assert missing.error.code == "http_error" and "HTTP 404" in missing.error.message
    ctx = replace(ctx, web=replace(LOOPBACK_OK, respect_robots=False))
    dead = run(ctx, "web_fetch", url="http://127.0.0.1:9/")
    assert dead.error.code == "network_error"


def test_searxng_backend(site: Site, ctx: ToolContext) -> None:
    ctx = replace(ctx, search=SearxngBackend(site.base + "/"))
    out = run(ctx, "web_search", query="kv cache")
    assert out.status == "success"
    assert out.text == (
        "2 results for 'kv cache':\n"
        "1. kv cache one\n   https://one.example/a\n   first hit\n"
        "2. kv cache two\n   https://two.example/b\n   second hit"
    )
    assert out.data["backend"] == "searxng" and len(out.data["results"]) == 2
    assert site.paths() == ["/search?q=kv+cache&format=json"]


def test_brave_backend_sends_its_key(site: Site, ctx: ToolContext) -> None:
    ctx = replace(ctx, search=BraveBackend(BRAVE_KEY, site.base))
    out = run(ctx, "web_search", query="prefix caching")
    assert out.status == "success"
    assert [r["url"] for r in out.data["results"]] == [f"https://b{n}.example/" for n in range(8)]
    assert "1. prefix caching 0\n   https://b0.example/\n   snippet 0" in out.text
    path, headers = site.seen[0]
    assert path == "/res/v1/web/search?q=prefix+caching&count=8"
    assert headers["x-subscription-token"] == BRAVE_KEY
    ctx = replace(ctx, search=BraveBackend("wrong", site.base))
    refused = run(ctx, "web_search", query="x")
    assert refused.error.code == "http_error" and "HTTP 401" in refused.error.message
    assert "wrong" not in repr(ctx.search)


def test_search_without_a_backend_says_how_to_configure_one(ctx: ToolContext) -> None:
    out = run(ctx, "web_search", query="anything")
    assert out.error.code == "unavailable" and "web_search_backend" in out.error.message


def test_backends_from_config() -> None:
    assert search_backend(Config()) is None
    searx = search_backend(Config(web_search_backend="searxng", web_search_url="http://s:8080"))
    assert searx == SearxngBackend("http://s:8080")
    brave = search_backend(Config(web_search_backend="brave", web_search_key="k"))
    assert isinstance(brave, BraveBackend) and brave.base_url == "https://api.search.brave.com"
    with pytest.raises(ConfigError, match="needs web_search_url"):
        search_backend(Config(web_search_backend="searxng"))
    with pytest.raises(ConfigError, match="needs web_search_key"):
        search_backend(Config(web_search_backend="brave"))
    policy = WebPolicy.from_config(Config(web_allow_private=True, web_max_bytes=10))
    assert (policy.allow_private, policy.max_bytes) == (True, 10)
    assert WebPolicy.from_config(Config()).allow_private is False


@pytest.mark.parametrize("name", ["web_fetch", "web_search"])
def test_web_tools_declare_their_traits(name: str) -> None:
    """Web tools reach the network, are not high-risk, and keep head and tail of their text
    in history (the rest is in the saved copy)."""
    traits = default_toolset().plus(WebSearch()).traits(name)
    assert (traits.category, traits.risk, traits.compressor) == ("web", "low", "other")
    page = "A" * OTHER_HEAD_CHARS + "B" * 5000
    outcome = ToolOutcome.ok(page, {"url": "http://x/"}, kind="webpage")
    result = compress(name, {"url": "http://x/"}, outcome, compressor=traits.compressor)
    text = json.loads(result.text)["data"]["text"]
    assert result.cut and text.startswith("A" * OTHER_HEAD_CHARS + "\n[... ")


def test_web_search_joins_the_agents_tools_only_with_a_backend(tmp_path: Path) -> None:
    """Without a backend the tool could only fail, so its definition is not sent."""
    plain = Agent(ScriptedProvider([]), tmp_path / "a", Config())
    searching = Agent(
        ScriptedProvider([]),
        tmp_path / "b",
        Config(web_search_backend="searxng", web_search_url="http://127.0.0.1:9"),
    )
    assert "web_search" not in plain.toolset.names
    assert "web_search" in searching.toolset.names
