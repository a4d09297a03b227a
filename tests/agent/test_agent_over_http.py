"""The scripted coding session through the real OpenAI and Anthropic adapters, over HTTP."""

from __future__ import annotations

import itertools
import json
import sys

import pytest

from agent.test_agent_e2e import coding_script
from contextengine import Config
from contextengine.agent.loop import Agent
from contextengine.providers.anthropic import AnthropicProvider
from contextengine.providers.base import StreamingProvider
from contextengine.providers.openai import OpenAIProvider
from providers.fake_servers import FakeModelServer


class Recording(StreamingProvider):
    """Passes requests to a real adapter and keeps the built requests."""

    def __init__(self, inner):
        self.inner, self.model, self.requests = inner, inner.model, []

    def stream(self, request):
        self.requests.append(request)
        return self.inner.stream(request)


def _run(wire, make_provider, tmp_path):
    script = coding_script(sys.executable)
    with FakeModelServer(wire, script) as server:
        agent = Agent(
            Recording(make_provider(server.base_url)), tmp_path / "ws", Config(overhead_share=None)
        )
        result = agent.run("Create calc.py with add(a, b) and a test, and make the test pass.")
        bodies = [r.json() for r in server.answered]
    return agent, result, bodies


def _usage(agent):
    return [
        json.loads(line) for line in (agent.session_dir / "usage.jsonl").read_text().splitlines()
    ]


def test_openai_adapter_runs_the_session(tmp_path):
    agent, result, bodies = _run(
        "openai", lambda url: OpenAIProvider("gpt-test", api_key="k", base_url=url), tmp_path
    )
    assert result.status == "completed" and "test passes" in result.final_answer
    assert len(bodies) == 16
    assert all(b["tools"] == bodies[0]["tools"] for b in bodies)
    assert all(b["messages"][0] == bodies[0]["messages"][0] for b in bodies)
    assert {b["prompt_cache_key"] for b in bodies} == {agent.session.id}
    built = agent.provider.requests
    assert len(built) == len(bodies)
    main = [(r, b) for r, b in zip(built, bodies) if r.purpose == "main"]
    assert len(main) < len(bodies), "the script strikes out once: a reboot request of its own"
    for (request, prev), (_, cur) in itertools.pairwise(main):
        # The previous request's persisted messages are sent again unchanged, in order.
        n = request.segments.persisted
        assert cur["messages"][:n] == prev["messages"][:n]
    assert (tmp_path / "ws" / "calc.py").read_text().endswith("a + b\n")
    usage = _usage(agent)
    assert len(usage) == 16 and sum(u["cached_tokens"] for u in usage) > 0.5 * sum(
        u["input_tokens"] for u in usage
    )


def test_anthropic_adapter_runs_the_session(tmp_path):
    agent, result, bodies = _run(
        "anthropic",
        lambda url: AnthropicProvider("claude-test", api_key="k", base_url=url),
        tmp_path,
    )
    assert result.status == "completed" and "test passes" in result.final_answer
    assert len(bodies) == 16
    assert all(b["tools"] == bodies[0]["tools"] for b in bodies)
    assert all(b["system"] == bodies[0]["system"] for b in bodies)
    for body in bodies:
        marks = [
            blk
            for m in body["messages"]
            for blk in (m["content"] if isinstance(m["content"], list) else [])
            if "cache_control" in blk
        ]
        marks += [blk for blk in body["system"] if "cache_control" in blk]
        assert 1 <= len(marks) <= 4
    tool_uses = [
        blk
        for m in bodies[-1]["messages"]
        if m["role"] == "assistant"
        for blk in m["content"]
        if blk["type"] == "tool_use"
    ]
    results = [
        blk
        for m in bodies[-1]["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for blk in m["content"]
        if blk["type"] == "tool_result"
    ]
    assert [u["id"] for u in tool_uses] == [r["tool_use_id"] for r in results]
    usage = _usage(agent)
    assert sum(u["cached_tokens"] for u in usage) > 0.5 * sum(u["input_tokens"] for u in usage)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_provider_failure_ends_the_run_cleanly_and_keeps_the_record(tmp_path, wire):
    make = {
        "openai": lambda url: OpenAIProvider("gpt-test", api_key="k", base_url=url, max_retries=0),
        "anthropic": lambda url: AnthropicProvider(
            "claude-test", api_key="k", base_url=url, max_retries=0
        ),
    }[wire]
    with FakeModelServer(wire, [], failures=[500, 500]) as server:
        agent = Agent(make(server.base_url), tmp_path / "ws", Config(overhead_share=None))
        result = agent.run("Do something.")
    assert result.status == "error" and result.error
    assert "\n" not in result.error.strip()
    texts = [r.entry.text for r in agent.session.records if r.entry.kind == "user"]
    assert texts == ["Do something."]
