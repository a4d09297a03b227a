"""A scripted DEEP_RESEARCH session end to end (issue 12, R15.1, R16.1, R14.1): it plans,
searches a SearXNG-shaped JSON API, fetches three pages, delegates a summary to a
sub-agent, writes a report. No cache break outside compaction in either session, and every
fetched page is recoverable byte for byte from its compressed_ref."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from contextengine import CompressedRef, Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.session.entries import ToolResultEntry
from contextengine.session.meta import load_meta
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall

pytest.importorskip("trafilatura", reason="web_fetch needs the 'web' extra")

TOPICS = {
    "prefix": "A stable prompt prefix lets the provider reuse its KV cache across calls.",
    "append": "Append-only history never rewrites earlier messages, so cached tokens stay valid.",
    "masking": "Masking tools at decode time keeps the tool list, and so the cache, unchanged.",
}


def page(topic: str, sentence: str) -> bytes:
    paragraphs = "".join(f"<p>{sentence} Note {n} on {topic}.</p>" for n in range(40))
    return (
        f"<html><head><title>{topic}</title></head><body><nav>Home | About</nav>"
        f"<article><h1>Notes on {topic}</h1>{paragraphs}</article>"
        "<footer>Footer text</footer></body></html>"
    ).encode()


@contextmanager
def research_web() -> Iterator[str]:
    """Three article pages and a SearXNG JSON search API listing them, on 127.0.0.1."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            topic = parts.path.strip("/").removesuffix(".html")
            if parts.path == "/search" and parse_qs(parts.query).get("format") == ["json"]:
                hits = [
                    {"title": f"Notes on {t}", "url": f"{base}/{t}.html", "content": s[:40]}
                    for t, s in TOPICS.items()
                ]
                self._send("application/json", json.dumps({"results": hits}).encode())
            elif topic in TOPICS:
                self._send("text/html; charset=utf-8", page(topic, TOPICS[topic]))
            elif parts.path == "/robots.txt":
                self._send("text/plain", b"User-agent: *\nAllow: /\n")
            else:
                self.send_error(404)

        def _send(self, content_type: str, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def step(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"content": text, "tool_calls": list(calls)}


def plan(*statuses: str) -> dict[str, Any]:
    steps = ("Search", "Fetch three pages", "Summarize via a sub-agent", "Write the report")
    todos = [{"content": s, "status": st} for s, st in zip(steps, statuses, strict=True)]
    return call("todo_write", todos=todos)


def script(base: str) -> list[dict[str, Any]]:
    summary = "\n".join(f"- {t}: {s}" for t, s in TOPICS.items())
    return [
        step("Planning.", plan("in_progress", "pending", "pending", "pending")),
        step("Searching.", call("web_search", query="kv cache context engineering")),
        step("Fetching the first hit.", call("web_fetch", url=f"{base}/prefix.html")),
        step(
            "Fetching the other two.",
            call("web_fetch", url=f"{base}/append.html"),
            call("web_fetch", url=f"{base}/masking.html"),
        ),
        step("Progress.", plan("done", "done", "in_progress", "pending")),
        step(
            "Delegating the summary.",
            call("agent_delegate", task=f"Write summary.md from these notes:\n{summary}"),
        ),
        # The sub-agent's turn: the same provider answers it, in order.
        step("Writing it.", call("file_write", path="summary.md", content=summary + "\n")),
        {"content": "summary.md holds one line per page: prefix, append, masking."},
        # Back in the parent.
        step(
            "Writing the report.",
            call("file_write", path="report.md", content="# Report\n\nSee summary.md.\n"),
        ),
        step("Done.", plan("done", "done", "done", "done")),
        {"content": "The report is in report.md; the sub-agent's summary is in summary.md."},
    ]


def usage_of(session_dir: Path) -> list[dict[str, Any]]:
    lines = (session_dir / "usage.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_deep_research_session_end_to_end(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    with research_web() as base:
        config = Config(
            web_search_backend="searxng",
            web_search_url=base,
            web_allow_private=True,
            sandbox=False,
        )
        provider = ScriptedProvider(script(base))
        with Agent(provider, workspace, config, mode="DEEP_RESEARCH") as agent:
            result = agent.run("Research how context engineering keeps the KV cache warm.")
            urls = [f"{base}/{topic}.html" for topic in TOPICS]
            direct = {
                url: default_toolset().execute(
                    ToolCall("d", "web_fetch", json.dumps({"url": url})), agent.tool_context
                )
                for url in urls
            }
            records = [r.entry for r in agent.session.records]
            assert agent.mode == "DEEP_RESEARCH" and "agent_delegate" in agent.toolset.names

            assert result.status == "completed", result.error
            assert (workspace / "report.md").is_file()
            assert (workspace / "summary.md").read_text().count("\n") == 3
            tools = [e for e in records if isinstance(e, ToolResultEntry)]
            assert [(e.tool_name, e.status) for e in tools] == [
                ("todo_write", "success"),
                ("web_search", "success"),
                ("web_fetch", "success"),
                ("web_fetch", "success"),
                ("web_fetch", "success"),
                ("todo_write", "success"),
                ("agent_delegate", "success"),
                ("file_write", "success"),
                ("todo_write", "success"),
            ]
            assert all(f"{u}" in tools[1].content for u in urls)

            # Every fetched page: a webpage ref naming its URL, recoverable byte for byte.
            for entry, url in zip(tools[2:5], urls, strict=True):
                (line,) = [x for x in entry.content.splitlines() if '"compressed_ref"' in x]
                ref = CompressedRef.from_json(line)
                assert (ref.type, ref.url, ref.recoverable) == ("webpage", url, True)
                assert TOPICS[url.rsplit("/", 1)[1].removesuffix(".html")] in direct[url].text
                assert agent.recover(ref) == direct[url].text
                assert ref.path is not None
                saved = agent.session_dir / "artifacts" / Path(ref.path).name
                assert saved.read_bytes() == direct[url].text.encode()

            # The sub-agent: its own session, linked both ways, its answer handed back.
            delegated = tools[6]
            assert delegated.child_session is not None
            child = agent.session_dir.parent / delegated.child_session
            assert load_meta(child).parent == agent.session.id
            assert "Files written: summary.md" in delegated.content
            assert "one line per page" in delegated.content

    # No cache break outside compaction, in the parent and in the child.
    for session_dir in (agent.session_dir, child):
        usage = usage_of(session_dir)
        assert usage and all(u["purpose"] == "main" for u in usage)
        causes = [u["prefix"]["break"]["cause"] for u in usage if "break" in u["prefix"]]
        assert set(causes) <= {"compaction"}, causes
    assert len(usage_of(agent.session_dir)) == 9 and len(usage_of(child)) == 2
    assert agent.stats()["cache_breaks"] == {}
