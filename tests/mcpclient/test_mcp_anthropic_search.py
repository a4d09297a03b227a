"""``mcp_tool_search = "anthropic"`` (R18.2): 161 MCP tools over the budget are listed with
``defer_loading`` behind Anthropic's tool search tool, against a local server speaking the
Messages stream; the tools are the same bytes on every request and a found tool runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.errors import ConfigError
from contextengine.providers.anthropic import AnthropicProvider
from contextengine.session.entries import ToolResultEntry
from providers.fake_servers import FakeModelServer
from support.mcp_servers import stdio_entry

GENERATED = 150
SCRIPT: list[dict[str, Any]] = [
    {
        "content": "Looking for the tool.",
        "tool_search": {"query": "create customer records", "found": ["mcp__many__gen_057"]},
        "tool_calls": [{"name": "mcp__many__gen_057", "arguments": {"record_id": 57}}],
    },
    {"tool_calls": [{"name": "mcp__many__echo", "arguments": {"text": "found by name"}}]},
    {"content": "Customer records of region 57 created."},
]


def tools_bytes(body: bytes) -> bytes:
    """The raw bytes of the body's ``tools`` array, as sent."""
    text = body.decode()
    start = text.index('"tools":') + len('"tools":')
    while text[start] == " ":
        start += 1
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end].encode()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    config = Config(
        mcp_servers={"many": stdio_entry("--generated", str(GENERATED))},
        mcp_project_file=False,
        mcp_tool_budget_tokens=0,
        mcp_tool_search="anthropic",
    )
    with FakeModelServer("anthropic", list(SCRIPT)) as server:
        provider = AnthropicProvider("claude-test", api_key="sk-ant-test", base_url=server.base_url)
        with Agent(provider, tmp_path_factory.mktemp("ws"), config) as agent:
            result = agent.run("Create the customer records of region 57.")
            results = [
                r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)
            ]
        yield server, result, results


def test_every_mcp_tool_is_deferred_behind_the_search_tool(run) -> None:
    server, result, _ = run
    assert result.status == "completed"
    tools = server.requests[0].json()["tools"]
    mcp = [t for t in tools if t.get("name", "").startswith("mcp__")]
    assert len(mcp) == GENERATED + 11
    assert all(t["defer_loading"] is True for t in mcp)
    assert not [t for t in tools if "defer_loading" in t and t not in mcp], "built-ins stay"
    assert tools[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert "tool_search" not in {t.get("name") for t in tools}, "not the engine's pair"


def test_the_tools_are_the_same_bytes_on_every_request(run) -> None:
    server, *_ = run
    sent = [tools_bytes(r.body) for r in server.requests]
    assert len(sent) == len(SCRIPT)
    assert all(s == sent[0] for s in sent)


def test_the_found_tool_runs_and_the_search_stays_in_its_turn(run) -> None:
    server, _, results = run
    assert [r.tool_name for r in results] == ["mcp__many__gen_057", "mcp__many__echo"]
    assert all(r.status == "success" for r in results)
    for request in server.requests[1:]:
        turn = next(t for t in request.json()["messages"] if t["role"] == "assistant")
        kinds = [block["type"] for block in turn["content"]]
        assert kinds == ["server_tool_use", "tool_search_tool_result", "text", "tool_use"]


def test_anthropic_tool_search_with_another_provider_is_one_error(tmp_path) -> None:
    config = Config(mcp_tool_search="anthropic", mcp_project_file=False)
    with pytest.raises(ConfigError, match=r"^mcp_tool_search = 'anthropic' needs the Anthropic"):
        Agent(ScriptedProvider([{"content": "hi"}]), tmp_path, config)


def test_a_sub_agent_defers_its_parents_mcp_tools_alike(tmp_path) -> None:
    delegate = {"name": "agent_delegate", "arguments": {"task": "Echo hi."}}
    script = [
        {"tool_calls": [delegate]},
        {"tool_calls": [{"name": "mcp__few__echo", "arguments": {"text": "hi"}}]},
        {"content": "Echoed hi."},
        {"content": "The sub-agent echoed hi."},
    ]
    config = Config(
        mcp_servers={"few": stdio_entry()},
        mcp_project_file=False,
        mcp_tool_budget_tokens=0,
        mcp_tool_search="anthropic",
        subagents=True,
    )
    with FakeModelServer("anthropic", script) as server:
        provider = AnthropicProvider("claude-test", api_key="sk-ant-test", base_url=server.base_url)
        with Agent(provider, tmp_path / "ws", config) as agent:
            assert agent.run("Have a sub-agent echo hi.").status == "completed"
        sent = [tools_bytes(r.body) for r in server.requests]
    assert len(sent) == len(script)
    assert all(s == sent[0] for s in sent), "the child's tools are the parent's bytes"
    assert b'"defer_loading":true' in sent[0].replace(b" ", b"")
