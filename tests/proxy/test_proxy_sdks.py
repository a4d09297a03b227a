"""The proxy with the official SDKs pointed at it, against a local upstream.

Every body must arrive upstream byte for byte, every reply reach the SDK intact (streamed or
not), every call land in the capture with the usage the upstream reported, and the capture
must read back with ``contextengine profile``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from contextengine.measure.capture import load_capture
from contextengine.measure.profile import profile_requests
from proxy.live import LiveProxy
from proxy.upstream import REPLY, Upstream, usage_for

SYSTEM = "You are a careful coding agent."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


@pytest.fixture
def proxy(upstream: Upstream, tmp_path: Path) -> Iterator[LiveProxy]:
    with LiveProxy(upstream.url, tmp_path / "capture.jsonl") as live:
        yield live


def _openai(proxy: LiveProxy) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test-key", base_url=proxy.url + "/v1", max_retries=0)


def _anthropic(proxy: LiveProxy) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="ak-test-key", base_url=proxy.url, max_retries=0)


def _captured(proxy: LiveProxy, calls: int) -> list[dict]:
    # The proxy hands a call to its recorder after the response has gone out, so the
    # client can hold the reply a moment before the call is even submitted.
    deadline = time.monotonic() + 10
    while proxy.recorder.recorded < calls and time.monotonic() < deadline:
        time.sleep(0.01)
    proxy.recorder.drain()
    assert proxy.recorder.log is not None
    return [json.loads(line) for line in proxy.recorder.log.read_text().splitlines()]


def _chat_turns(client: openai.OpenAI, stream: bool) -> list[str]:
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    texts = []
    for question in ("first question", "second question"):
        messages.append({"role": "user", "content": question})
        if stream:
            chunks = client.chat.completions.create(
                model="gpt-4o",
                messages=messages,
                tools=TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            )
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
            text = reply.choices[0].message.content or ""
        texts.append(text)
        messages.append({"role": "assistant", "content": text})
    return texts


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_through_the_proxy(upstream: Upstream, proxy: LiveProxy, stream: bool) -> None:
    assert _chat_turns(_openai(proxy), stream) == [REPLY, REPLY]
    captured = _captured(proxy, 2)
    assert len(upstream.received) == len(captured) == 2
    for got, line in zip(upstream.received, captured):
        assert got.path == "/v1/chat/completions"
        assert got.headers["authorization"] == "Bearer sk-test-key"
        assert json.loads(got.body) == line["request"]
        assert line["usage"] == usage_for(got.body)
        assert line["response_status"] == 200
    profile = profile_requests(load_capture(proxy.recorder.log))
    assert [r.cache_break for r in profile.requests] == [None, None]
    assert profile.requests[1].reusable_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_through_the_proxy(
    upstream: Upstream, proxy: LiveProxy, stream: bool
) -> None:
    client = _openai(proxy)
    if stream:
        events = list(
            client.responses.create(model="gpt-5", instructions=SYSTEM, input="hi", stream=True)
        )
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    else:
        text = client.responses.create(model="gpt-5", instructions=SYSTEM, input="hi").output_text
    assert text == REPLY
    (line,) = _captured(proxy, 1)
    (got,) = upstream.received
    assert got.path == "/v1/responses"
    assert json.loads(got.body) == line["request"]
    assert line["usage"] == usage_for(got.body)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_through_the_proxy(
    upstream: Upstream, proxy: LiveProxy, stream: bool
) -> None:
    client = _anthropic(proxy)
    ask = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    if stream:
        with client.messages.stream(**ask) as events:
            text = events.get_final_text()
    else:
        text = client.messages.create(**ask).content[0].text
    assert text == REPLY
    (line,) = _captured(proxy, 1)
    (got,) = upstream.received
    assert got.path == "/v1/messages"
    key = got.headers.get("x-api-key") or got.headers["authorization"]  # SDK versions differ
    assert key.endswith("ak-test-key")
    assert "anthropic-version" in got.headers
    assert json.loads(got.body) == line["request"]
    assert line["usage"] == usage_for(got.body)


def test_bodies_and_streams_pass_byte_for_byte(upstream: Upstream, proxy: LiveProxy) -> None:
    """Odd spacing and key order reach the upstream as sent; the stream comes back as sent."""
    body = b'{ "stream": true,"model" : "m",  "messages":[{"content":"x","role":"user"}]}'
    with httpx.Client(timeout=10) as client:
        via = client.post(proxy.url + "/v1/chat/completions", content=body)
        direct = client.post(upstream.url + "/v1/chat/completions", content=body)
    assert upstream.received[0].body == body
    assert via.content == direct.content
    assert via.headers["content-type"] == "text/event-stream"


def test_other_paths_pass_through_unrecorded(upstream: Upstream, proxy: LiveProxy) -> None:
    models = _openai(proxy).models.list()
    assert [m.id for m in models] == ["m"]
    assert upstream.received[0].path == "/v1/models"
    proxy.recorder.drain()
    assert proxy.recorder.recorded == 0


def test_upstream_with_v1_is_not_doubled(upstream: Upstream, tmp_path: Path) -> None:
    with LiveProxy(upstream.url + "/v1", tmp_path / "c.jsonl") as live:
        assert _chat_turns(_openai(live), stream=False) == [REPLY, REPLY]
    assert upstream.received[0].path == "/v1/chat/completions"


def test_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    with LiveProxy("http://127.0.0.1:9", tmp_path / "c.jsonl") as live:
        reply = httpx.post(live.url + "/v1/chat/completions", content=b"{}", timeout=10)
    assert reply.status_code == 502
    assert "cannot reach the upstream" in reply.json()["error"]["message"]


def test_live_page_and_stats(upstream: Upstream, proxy: LiveProxy) -> None:
    _chat_turns(_openai(proxy), stream=True)
    proxy.recorder.drain()
    with httpx.Client(base_url=proxy.url, timeout=10) as client:
        assert client.get("/").status_code == 401
        assert client.get("/_contextengine/stats").status_code == 401
        assert client.get("/?token=wrong").status_code == 401
        page = client.get(f"/?token={proxy.token}", follow_redirects=True)
        assert page.url.path == "/" and "token" not in str(page.url)
        stats = client.get("/_contextengine/stats").json()  # the cookie carries the token
    assert "/_contextengine/stats" in page.text
    assert stats["summary"]["requests"] == 2
    assert stats["summary"]["measured_hit_rate"] == pytest.approx(0.5, abs=0.01)
    assert [r["index"] for r in stats["recent"]] == [0, 1]


def test_live_page_refuses_a_rebound_host(proxy: LiveProxy) -> None:
    auth = {"Authorization": f"Bearer {proxy.token}"}
    with httpx.Client(base_url=proxy.url, timeout=10, headers=auth) as client:
        for path in ("/", "/_contextengine/stats"):
            assert client.get(path, headers={"host": "evil.example"}).status_code == 403
            assert client.get(path, headers={"host": "localhost:1"}).status_code == 200
            foreign = {"host": "localhost:1", "origin": "http://evil.example"}
            assert client.get(path, headers=foreign).status_code == 403
            own = {"host": "localhost:1", "origin": "http://localhost:1"}
            assert client.get(path, headers=own).status_code == 200


def test_cookies_go_neither_upstream_nor_back(upstream: Upstream, proxy: LiveProxy) -> None:
    cookie = {"Cookie": "contextengine_token=serve-secret; other=1", "X-Kept": "yes"}
    reply = httpx.get(proxy.url + "/v1/models", headers=cookie, timeout=10)
    assert reply.status_code == 200
    (received,) = upstream.received
    assert "cookie" not in received.headers and received.headers["x-kept"] == "yes"
    assert "set-cookie" not in reply.headers


def test_an_oversized_body_is_a_413_before_it_is_read(upstream: Upstream, tmp_path: Path) -> None:
    limit = 1024 * 1024
    with LiveProxy(upstream.url, tmp_path / "c.jsonl", max_body_bytes=limit) as live:
        url = live.url + "/v1/chat/completions"
        declared = httpx.post(url, content=b"x" * (limit + 1), timeout=10)
        assert declared.status_code == 413
        assert "the limit is 1048576 bytes" in declared.json()["error"]["message"]

        def chunks() -> Iterator[bytes]:  # no length declared: counted as it arrives
            for _ in range(64):
                yield b"y" * 65536

        streamed = httpx.post(url, content=chunks(), timeout=10)
        assert streamed.status_code == 413
        assert httpx.post(url, content=b"{}", timeout=10).status_code == 200
    assert [r.body for r in upstream.received] == [b"{}"]


def test_a_stream_is_relayed_chunk_by_chunk(upstream: Upstream, proxy: LiveProxy) -> None:
    """The first event reaches the client while the upstream still holds back the second."""
    with (
        httpx.Client(timeout=10) as client,
        client.stream("GET", proxy.url + "/gated") as reply,
    ):
        chunks = reply.iter_raw()
        assert next(chunks) == b"data: first\n\n"
        upstream.gate.set()
        assert b"".join(chunks) == b"data: second\n\n"


def test_concurrent_calls_lose_no_body(upstream: Upstream, proxy: LiveProxy) -> None:
    """40 calls at once, streamed and not: every body arrives intact and is captured once."""

    def ask(n: int) -> str:
        body = {
            "model": "m",
            "stream": n % 2 == 0,
            "messages": [{"role": "user", "content": f"q{n}"}],
        }
        reply = httpx.post(proxy.url + "/v1/chat/completions", json=body, timeout=30)
        return reply.text

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(ask, range(40)))
    assert all("upstream" in r for r in replies)
    sent = sorted(got.body for got in upstream.received)
    captured = _captured(proxy, 40)
    assert len(sent) == len(captured) == 40
    assert (
        sorted(json.dumps(line["request"], separators=(",", ":")).encode() for line in captured)
        == sent
    )
