"""Tool search (R18.2): 160 MCP tools over the budget are offered as ``tool_search`` and
``tool_call``; the request's tools are the same bytes on every request."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.session.entries import ToolResultEntry
from contextengine.tools.mcp.search import ToolCatalog, words
from contextengine.types import ToolCall as ToolCallRequest
from support.mcp_servers import stdio_entry
from support.requests import persisted_text

GENERATED = 150


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"content": f"Calling {tool}.", "tool_calls": [{"name": tool, "arguments": arguments}]}


SCRIPT = [
    call("tool_search", query="create the customer records of region 57"),
    call("tool_call", name="mcp__many__gen_057", arguments={"record_id": "seven"}),
    call("tool_call", name="mcp__many__gen_057", arguments={"record_id": 7, "note": "ok"}),
    call("tool_call", name="mcp__many__gen_120", arguments={"record_id": 1}),
    call("tool_search", query=r"^mcp__many__gen_00[12]$"),
    call("tool_call", name="mcp__many__gen_999", arguments={}),
    call("tool_call", name="mcp__many__echo", arguments='{"text": "as a JSON string"}'),
    call("todo_write", todos=[{"content": "Clean up the tables", "status": "in_progress"}]),
    call("tool_call", name="mcp__many__drop_table", arguments={"table": "stale"}),
    {"content": "Customer records of region 57 created; other tools checked too."},
]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory):
    workspace = tmp_path_factory.mktemp("ws")
    config = Config(
        mcp_servers={"many": stdio_entry("--generated", str(GENERATED))}, mcp_project_file=False
    )
    provider = ScriptedProvider(list(SCRIPT))
    with Agent(provider, workspace, config) as agent:
        result = agent.run("Create the customer records of region 57.")
        results = [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]
        yield agent, provider, result, results


def test_the_tools_are_the_pair_and_the_same_bytes_on_every_request(session):
    agent, provider, result, _ = session
    assert result.status == "completed"
    assert agent.mcp is not None and agent.mcp.deferred
    assert len(agent.mcp.catalog.tools) == GENERATED + 11
    names = [t["function"]["name"] for t in provider.requests[0].tools]
    assert "tool_search" in names and "tool_call" in names
    assert not [n for n in names if n.startswith("mcp__")]
    (search,) = [t for t in provider.requests[0].tools if t["function"]["name"] == "tool_search"]
    assert "(many; 161 tools)" in search["function"]["description"]
    for request in provider.requests:
        assert request.tools == provider.requests[0].tools


def test_every_request_shares_the_whole_prefix_of_the_one_before(session):
    _, provider, *_ = session
    first = provider.requests[0]
    for previous, current in itertools.pairwise(provider.requests):
        assert current.messages[0] == first.messages[0]
        assert current.text().startswith(persisted_text(previous))


def test_a_search_returns_the_wanted_tools_full_definition(session):
    _, _, _, results = session
    found = results[0].content.splitlines()
    assert found[0].startswith('{"description":"Create the customer records of region 57')
    assert '"name":"mcp__many__gen_057"' in found[0]
    assert '"parameters":{"properties":{"note":{"default":"","type":"string"}' in found[0]
    regex = results[4].content.splitlines()
    assert [line.split('"name":"')[1].split('"')[0] for line in regex] == [
        "mcp__many__gen_001",
        "mcp__many__gen_002",
    ]


def test_tool_call_checks_the_arguments_against_the_schema(session):
    _, _, _, results = session
    bad = results[1]
    assert bad.status == "error" and bad.error_class == "invalid_tool_call"
    assert "record_id: 'seven' is not of type 'integer'" in bad.content


def test_tool_call_runs_a_found_tool_and_one_never_searched(session):
    _, _, _, results = session
    assert results[2].status == "success" and "gen_057 handled record 7 ok" in results[2].content
    assert results[3].status == "success" and "gen_120 handled record 1" in results[3].content
    assert results[6].status == "success" and "as a JSON string" in results[6].content


def test_an_unknown_name_is_refused_with_the_closest_names(session):
    _, _, _, results = session
    unknown = results[5]
    assert (
        unknown.status == "error"
        and "no MCP tool is called 'mcp__many__gen_999'" in unknown.content
    )
    assert "tool_search" in unknown.content


def test_a_destructive_tool_run_by_tool_call_is_followed_by_the_full_status(session):
    agent, provider, _, results = session
    assert results[8].status == "success" and "table stale dropped" in results[8].content
    before, after = provider.requests[8], provider.requests[9]
    # an ordinary step of a short run has no full status (at most the focus line)
    assert not before.messages[-1]["content"].startswith("## Task status")
    assert after.messages[-1]["content"].startswith("## Task status")
    assert "[>] 1 Clean up the tables" in after.messages[-1]["content"]
    drop = ToolCallRequest("c", "tool_call", '{"name": "mcp__many__drop_table"}')
    assert agent.toolset.call_traits(drop).risk == "high"
    echo = ToolCallRequest("c", "tool_call", '{"name": "mcp__many__echo"}')
    assert agent.toolset.call_traits(echo).category == "read"


def test_words_split_names_and_descriptions() -> None:
    assert words("mcp__git__gitLogShow kebab-case") == [
        "mcp",
        "git",
        "git",
        "log",
        "show",
        "kebab",
        "case",
    ]


def test_an_empty_catalog_finds_nothing() -> None:
    assert ToolCatalog([]).search("anything") == []
