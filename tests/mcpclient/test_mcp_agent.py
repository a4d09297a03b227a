"""MCP servers of a Claude-Code-style .mcp.json used by ``Agent.run`` (R18.1): a stdio
server and an HTTP one written here, and mcp-server-time from PyPI, all real processes."""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.session.entries import ToolResultEntry
from support.mcp_servers import TIME_SERVER, stdio_entry
from support.requests import persisted_text

BIG_LINES = 4000
BIG = "\n".join(f"line {n:05d} of the big listing" for n in range(BIG_LINES))


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"content": f"Calling {tool}.", "tool_calls": [{"name": tool, "arguments": arguments}]}


SCRIPT = [
    call(
        "todo_write",
        todos=[
            {"content": "Try every MCP tool", "status": "in_progress"},
            {"content": "Report", "status": "pending"},
        ],
    ),
    call("mcp__local__echo", text="hello from stdio"),  # 1
    call("mcp__remote__echo", text="hello over http"),  # 2
    call("mcp__local__big", lines=BIG_LINES),  # 3
    call("mcp__local__fail", reason="quota exceeded"),  # 4
    call("mcp__local__echo", text=5),  # 5
    call("mcp__local__picture"),  # 6
    call("mcp__remote__drop_table", table="orders"),  # 7: destructive
    call("mcp__time__get_current_time", timezone="Etc/UTC"),  # 8
    call("mcp__local__withdraw", name="big"),  # 9
    call("mcp__local__big", lines=2),  # 10: withdrawn
    {"content": "Every MCP tool was tried; the results are in the history above."},
]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, http_url: str):
    workspace = tmp_path_factory.mktemp("ws")
    servers = {
        "local": stdio_entry(),
        "remote": {"type": "http", "url": http_url},
        "time": TIME_SERVER,
    }
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    provider = ScriptedProvider(list(SCRIPT))
    agent = Agent(provider, workspace, Config(mcp_tool_budget_tokens=100_000))
    with agent:
        result = agent.run("Try the MCP tools.")
        results = [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]
        yield agent, provider, result, results


def test_the_run_completes_and_every_request_offers_the_same_sorted_tools(session):
    agent, provider, result, _ = session
    assert result.status == "completed"
    names = [t["function"]["name"] for t in provider.requests[0].tools]
    assert names == sorted(names)
    for server, tool in [("local", "echo"), ("remote", "drop_table"), ("time", "convert_time")]:
        assert f"mcp__{server}__{tool}" in names
    assert "shell_exec" in names and "todo_write" in names
    for request in provider.requests:
        assert request.tools == provider.requests[0].tools, "withdrawing changed nothing"


def test_a_schema_is_canonical_and_without_generated_titles(session):
    _, provider, *_ = session
    (echo,) = [t for t in provider.requests[0].tools if t["function"]["name"] == "mcp__local__echo"]
    assert echo["function"]["parameters"] == {
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "type": "object",
    }
    assert echo["function"]["description"] == "Return the text unchanged."


def test_annotations_set_the_traits(session):
    agent, *_ = session
    traits = agent.toolset.traits
    assert traits("mcp__local__echo").category == "read"
    assert traits("mcp__local__post_message").category == "web"
    assert traits("mcp__remote__drop_table").risk == "high"
    assert traits("mcp__local__big").risk == "low"


def test_results_of_stdio_http_and_pypi_servers_reach_the_model(session):
    _, provider, _, results = session
    assert results[1].status == "success" and results[1].content.endswith("hello from stdio")
    assert "hello from stdio" in provider.requests[2].text()
    assert "hello over http" in provider.requests[3].text()
    assert '"timezone": "Etc/UTC"' in results[8].content


def test_a_big_result_is_a_compressed_ref_recovered_byte_for_byte(session):
    agent, _, _, results = session
    big = results[3]
    assert big.tool_name == "mcp__local__big"
    ref = big.content.split("\n", 1)[0]
    assert json.loads(ref)["_type"] == "compressed_ref"
    assert agent.recover(ref) == BIG


def test_an_is_error_result_is_an_error_kept_verbatim(session):
    _, provider, _, results = session
    failed = results[4]
    assert failed.status == "error" and failed.error_class == "tool_failed"
    assert "Error executing tool fail: refused: quota exceeded" in failed.content
    assert "Error executing tool fail: refused: quota exceeded" in provider.requests[5].text()


def test_arguments_against_the_schema_are_refused_with_the_problem_named(session):
    _, _, _, results = session
    bad = results[5]
    assert bad.error_class == "invalid_tool_call"
    assert "mcp__local__echo" in bad.content and "text: 5 is not of type 'string'" in bad.content


def test_images_and_resources_become_placeholders_and_text(session):
    _, _, _, results = session
    assert "[image image/png, 100 bytes]" in results[6].content
    assert "[resource file:///notes.txt]\nthe notes" in results[6].content


def test_the_request_after_a_destructive_tool_ends_with_the_full_status(session):
    _, provider, *_ = session
    before, after = provider.requests[7], provider.requests[8]
    # an ordinary step of a short run has no full status (at most the focus line)
    assert not before.messages[-1]["content"].startswith("## Task status")
    tail = after.messages[-1]["content"]
    assert tail.startswith("## Task status") and "[>] 1 Try every MCP tool" in tail


def test_a_withdrawn_tool_is_refused_and_stays_listed(session):
    _, _, _, results = session
    refused = results[10]
    assert refused.error_class == "masked_tool"
    assert "withdrawn by MCP server 'local'" in refused.content and "echo" in refused.content


def test_every_request_extends_the_persisted_part_of_the_one_before(session):
    _, provider, *_ = session
    for previous, current in itertools.pairwise(provider.requests):
        assert current.text().startswith(persisted_text(previous))


def test_closing_the_agent_stops_its_stdio_servers(tmp_path: Path) -> None:
    provider = ScriptedProvider([call("mcp__solo__pid"), {"content": "The pid is reported."}])
    config = Config(mcp_servers={"solo": stdio_entry()})
    agent = Agent(provider, tmp_path, config)
    agent.run("Which pid?")
    result = [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]
    pid = int(result[0].content.strip().rsplit("\n", 1)[-1])
    os.kill(pid, 0)
    agent.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    pytest.fail(f"the stdio server {pid} still runs after close()")
