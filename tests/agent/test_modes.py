"""Modes through the public Agent API (R15): presets, switching, state rules, the guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextengine import MODES, Config, ConfigError, ScriptedProvider, ToolMask
from contextengine.agent.loop import Agent
from contextengine.providers.anthropic import PREFILL, AnthropicProvider
from contextengine.providers.openai import OpenAIProvider
from contextengine.session.entries import ToolResultEntry
from contextengine.toolkit.modes import MODE_NAMES
from providers.fake_servers import FakeModelServer

ANSWER = {"content": "Here is the complete answer to your question."}


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def step(*calls: dict) -> dict:
    return {"content": "Working.", "tool_calls": list(calls)}


def todo(*statuses: str) -> dict:
    return call(
        "todo_write", todos=[{"content": f"step {k}", "status": s} for k, s in enumerate(statuses)]
    )


def main_requests(provider: ScriptedProvider) -> list:
    return [r for r in provider.requests if r.purpose == "main"]


def results(agent: Agent) -> list[ToolResultEntry]:
    return [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]


def tools_text(body: bytes) -> str:
    """The exact text of the ``tools`` value in a JSON request body, as sent."""
    text = body.decode()
    start = text.index('"tools":') + len('"tools":')
    start += len(text[start:]) - len(text[start:].lstrip())
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end]


def test_agent_starts_in_the_mode_given_else_the_configs(tmp_path: Path) -> None:
    provider = ScriptedProvider([ANSWER])
    assert Agent(provider, tmp_path / "a", Config(overhead_share=None)).mode is None
    configured = Agent(provider, tmp_path / "b", Config(overhead_share=None, mode="knowledge"))
    assert configured.mode == "KNOWLEDGE" and configured.mask is MODES["KNOWLEDGE"]
    chosen = Agent(
        provider, tmp_path / "c", Config(overhead_share=None, mode="KNOWLEDGE"), mode="CODE"
    )
    assert chosen.mode == "CODE"


def test_unknown_mode_is_a_config_error_listing_the_six(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        Agent(
            ScriptedProvider([ANSWER]),
            tmp_path / "ws",
            Config(overhead_share=None),
            mode="PLANNING",
        )
    assert all(name in str(caught.value) for name in MODE_NAMES)
    agent = Agent(
        ScriptedProvider([ANSWER]), tmp_path / "ws2", Config(overhead_share=None), mode="CODE"
    )
    with pytest.raises(ConfigError, match="unknown mode 'nope'"):
        agent.set_mode("nope")
    assert agent.mode == "CODE"


def test_a_call_outside_the_mode_gets_the_guards_error_and_never_runs(tmp_path: Path) -> None:
    script = [step(call("file_write", path="x.txt", content="x")), ANSWER]
    provider = ScriptedProvider(script)
    agent = Agent(provider, tmp_path / "ws", Config(overhead_share=None), mode="CHAT")
    result = agent.run("Write x.txt")
    assert result.status == "completed"
    assert not (tmp_path / "ws" / "x.txt").exists()
    (refused,) = results(agent)
    assert refused.status == "error" and refused.error_class == "masked_tool"
    assert "'file_write' is not allowed now and was not run; allowed tools: (none)" in (
        refused.content
    )
    assert all(r.mask == MODES["CHAT"] for r in main_requests(provider))


def test_search_mode_refuses_the_shell_and_names_what_it_allows(tmp_path: Path) -> None:
    script = [step(call("shell_exec", command="ls"), todo("in_progress")), ANSWER]
    agent = Agent(
        ScriptedProvider(script), tmp_path / "ws", Config(overhead_share=None), mode="SEARCH"
    )
    agent.run("Look something up.")
    shell, plan = results(agent)
    assert shell.error_class == "masked_tool"
    assert "allowed tools: memory_finding_add, memory_plan_update, todo_write" in shell.content
    assert plan.status == "success"


def test_set_mode_changes_the_mask_from_the_next_step_and_never_the_tools(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider([ANSWER, ANSWER, ANSWER, ANSWER])
    agent = Agent(provider, tmp_path / "ws", Config(overhead_share=None), mode="CODE")
    agent.run("one")
    agent.set_mode("search")
    assert agent.mode == "SEARCH"
    agent.run("two")
    agent.set_mode(None)
    assert agent.mode is None and agent.mask is None
    agent.run("three")
    agent.mask = ToolMask.only("file_read")
    assert agent.mode is None  # a custom mask is no preset
    agent.run("four")
    requests = main_requests(provider)
    assert [r.mask for r in requests] == [
        MODES["CODE"],
        MODES["SEARCH"],
        None,
        ToolMask.only("file_read"),
    ]
    assert len({r.chunks[0] for r in requests}) == 1
    assert all(r.tools == requests[0].tools for r in requests)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_wire_tools_are_the_same_bytes_in_every_mode(tmp_path: Path, wire: str) -> None:
    modes = ["CODE", "SEARCH", "CHAT", None, "DEEP_RESEARCH"]
    with FakeModelServer(wire, [ANSWER] * len(modes)) as server:
        if wire == "openai":
            provider = OpenAIProvider("gpt-test", api_key="k", base_url=server.base_url)
        else:
            provider = AnthropicProvider("claude-test", api_key="k", base_url=server.base_url)
        agent = Agent(provider, tmp_path / "ws", Config(overhead_share=None))
        for mode in modes:
            agent.set_mode(mode)
            agent.run(f"turn in {mode}")
        raw = [r.body for r in server.answered]
    assert len(raw) == len(modes)
    assert len({tools_text(body) for body in raw}) == 1
    choices = [json.loads(body)["tool_choice"] for body in raw]
    code = sorted(
        n for n in agent.toolset.names if n.startswith(("file_", "shell_", "todo_", "memory_"))
    )
    search = sorted(n for n in agent.toolset.names if n.startswith(("web_", "todo_", "memory_")))
    assert set(code) < set(agent.toolset.names), "the web tools are outside CODE"
    if wire == "openai":

        def allowed(names: list[str]) -> dict[str, object]:
            tools = [{"type": "function", "function": {"name": n}} for n in names]
            return {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": tools}}

        assert choices == [allowed(code), allowed(search), "none", "auto", "auto"]
    else:
        assert choices == [{"type": t} for t in ("auto", "auto", "none", "auto", "auto")]
        last_turns = [json.loads(body)["messages"][-1] for body in raw]
        for k, names in ((0, code), (1, search)):
            assert last_turns[k] == {
                "role": "assistant",
                "content": [{"type": "text", "text": PREFILL.format(names=", ".join(names))}],
            }
        assert all(turn["role"] == "user" for k, turn in enumerate(last_turns) if k > 1)


def test_a_finished_plan_lets_a_call_requiring_mask_answer(tmp_path: Path) -> None:
    script = [step(todo("in_progress", "pending")), step(todo("done", "done")), ANSWER]
    provider = ScriptedProvider(script)
    agent = Agent(provider, tmp_path / "ws", Config(overhead_share=None))
    agent.mask = ToolMask.only("todo_", "file_", mode="specified")
    result = agent.run("Do the two steps.")
    assert result.status == "completed"
    modes = [r.mask.mode for r in main_requests(provider)]
    assert modes == ["specified", "specified", "auto"]
    assert all(r.mask.allow == ("todo_", "file_") for r in main_requests(provider))


def test_masking_off_turns_off_the_guard_and_the_decode_time_mask(tmp_path: Path) -> None:
    script = [step(call("file_write", path="x.txt", content="x")), ANSWER]
    provider = ScriptedProvider(script)
    agent = Agent(
        provider, tmp_path / "ws", Config(overhead_share=None, masking=False), mode="CHAT"
    )
    assert agent.mode == "CHAT"
    agent.run("Write x.txt")
    assert (tmp_path / "ws" / "x.txt").read_text() == "x"
    assert all(r.mask is None for r in main_requests(provider))


def test_a_mode_survives_resume_only_when_asked(tmp_path: Path) -> None:
    agent = Agent(
        ScriptedProvider([ANSWER]), tmp_path / "ws", Config(overhead_share=None), mode="THINKING"
    )
    agent.run("think")
    resumed = Agent.resume(
        agent.session_dir, ScriptedProvider([ANSWER]), Config(overhead_share=None)
    )
    assert resumed.mode is None
    again = Agent.resume(
        agent.session_dir, ScriptedProvider([ANSWER]), Config(overhead_share=None), mode="CODE"
    )
    assert again.mode == "CODE"


def test_the_reboot_request_allows_no_tool_and_the_mode_comes_back(tmp_path: Path) -> None:
    shell = step(call("shell_exec", command="ls"))
    reboot_answer = {"content": "1. Search.\n2. Tried the shell.\n3. Masked.\n4. Answer.\n5. No."}
    script = [shell, shell, shell, reboot_answer, ANSWER]
    provider = ScriptedProvider(script)
    agent = Agent(provider, tmp_path / "ws", Config(overhead_share=None), mode="SEARCH")
    result = agent.run("Look it up.")
    assert result.status == "completed"
    assert [r.purpose for r in provider.requests] == ["main"] * 3 + ["reboot", "main"]
    assert [r.mask for r in provider.requests] == [MODES["SEARCH"]] * 3 + [
        ToolMask(allow=(), mode="auto"),
        MODES["SEARCH"],
    ]
    assert agent.stats()["tool_errors"] == {"masked_tool": 3}
    assert agent.stats()["strikes"] == 1
