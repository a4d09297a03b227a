"""R16.1: ``agent_delegate`` runs a side task as a child agent in its own session and hands
back one compact observation (answer + paths); the parent's record links the child, the
report lists it, the server's session list names its parent; depth and step limits are
error observations, never crashes."""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from contextengine import MODES, Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.agent.parts import AgentParts
from contextengine.agent.subagents import delegation_depth
from contextengine.cli import app
from contextengine.context.request import Request
from contextengine.measure.report import load_usage, usage_report
from contextengine.session.entries import ToolResultEntry, UserEntry
from contextengine.session.meta import META_FILE, SessionMeta, load_meta
from contextengine.session.session import Session
from contextengine.toolkit.modes import mode_mask
from contextengine.tools.agent_delegate import AgentDelegateTool

SUBAGENTS = Config(subagents=True, sandbox=False)


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def delegate(task: str, **more: object) -> dict[str, Any]:
    return {"content": "Delegating.", "tool_calls": [call("agent_delegate", task=task, **more)]}


def results(agent: Agent) -> list[ToolResultEntry]:
    return [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]


def child_dir(agent: Agent, result: ToolResultEntry) -> Path:
    assert result.child_session is not None
    return agent.session_dir.parent / result.child_session


CHILD_WRITES = [
    {"content": "Writing.", "tool_calls": [call("file_write", path="notes.md", content="sum\n")]},
    {"content": "The summary is in notes.md: caches love stable prefixes."},
]


def test_a_child_runs_in_its_own_session_and_hands_back_answer_paths_and_id(
    tmp_path: Path,
) -> None:
    script = [
        delegate("Summarize the cache notes into notes.md."),
        *CHILD_WRITES,
        {"content": "The sub-agent wrote notes.md with the summary."},
    ]
    provider = ScriptedProvider(script)  # one script drives parent and child in order
    with Agent(provider, tmp_path / "ws", SUBAGENTS) as agent:
        assert agent.run("Get the notes summarized.").status == "completed"
        (result,) = results(agent)
        child = child_dir(agent, result)

    assert result.status == "success" and result.child_session == child.name
    assert result.content.splitlines()[:3] == [
        f"Sub-agent {child.name} finished in 2 steps.",
        "Files written: notes.md",
        "Answer:",
    ]
    assert "caches love stable prefixes" in result.content
    # Its own session: metadata naming the parent, its own log, memory files and usage.
    assert load_meta(child).parent == agent.session.id
    assert child.parent == agent.session_dir.parent
    assert {"task_plan.md", "findings.md", "progress.md", "usage.jsonl"} <= {
        p.name for p in child.iterdir()
    }
    assert (tmp_path / "ws" / "notes.md").read_text() == "sum\n"
    # Its own context: the child's first request starts with its task, not the parent's.
    child_first = provider.requests[1].messages
    texts = json.dumps(child_first)
    assert "Summarize the cache notes" in texts and "Get the notes summarized" not in texts
    # The same tools (same definitions): the child's prefix starts as the parent's.
    assert provider.requests[1].tools == provider.requests[0].tools
    # The parent's record keeps the link, written in the log line itself.
    line = (agent.session_dir / "session.jsonl").read_text().splitlines()
    assert any(f'"child_session":"{child.name}"' in x.replace(" ", "") for x in line)


@pytest.mark.parametrize("sandbox", [False, True], ids=["file tools", "sandboxed shell"])
def test_a_stub_path_the_parent_hands_over_opens_the_parents_artifact_in_the_child(
    tmp_path: Path, sandbox: bool
) -> None:
    shown = ".contextengine/artifacts/3-Bash.txt"  # as the parent's pruning stubs name it
    read = call("shell_exec", command=f"cat {shown}") if sandbox else call("file_read", path=shown)
    script = [
        delegate(f"Find the failing test in the build log at {shown}."),
        {"content": "Reading the log.", "tool_calls": [read]},
        {"content": "test_cache fails."},
        {"content": "The sub-agent found it: test_cache."},
    ]
    provider = ScriptedProvider(script)
    with Agent(provider, tmp_path / "ws", Config(subagents=True, sandbox=sandbox)) as agent:
        parents = agent.externalizer.save("3-Bash", "FAILED tests/test_cache.py::test_cache\n")
        assert agent.externalizer.stub_path(parents) == shown
        assert agent.run("Which test fails?").status == "completed"
        child = child_dir(agent, results(agent)[0])

    (observation,) = [m for m in provider.requests[2].messages if m["role"] == "tool"]
    assert "FAILED tests/test_cache.py::test_cache" in json.dumps(observation)
    # The child's own artifacts go by their full path, never the parent's short one.
    child_parts = AgentParts.defaults(
        ScriptedProvider([]), tmp_path / "ws", Config(), session=Session.open(child)
    )
    own = child_parts.externalizer.save("3-Bash", "the child's own\n")
    assert child_parts.externalizer.stub_path(own) == (
        child_parts.tool_context.workspace.display(own)
    )


def test_the_child_works_in_the_mode_it_is_given(tmp_path: Path) -> None:
    script = [
        delegate("Look around.", mode="code"),
        {"content": "Nothing to do here at all."},
        {"content": "The sub-agent found nothing to do."},
    ]
    provider = ScriptedProvider(script)
    with Agent(provider, tmp_path / "ws", SUBAGENTS) as agent:
        agent.run("Delegate a look.")
    child_mask = provider.requests[1].mask
    assert provider.requests[0].mask is None  # the parent: no mode
    assert child_mask is not None and child_mask.mode == mode_mask("CODE").mode
    assert not child_mask.allows("web_fetch") and child_mask.allows("file_read")


@pytest.mark.parametrize("mode", ["SEARCHING", "chatty"])
def test_an_unknown_mode_is_an_error_observation_and_no_child_starts(
    tmp_path: Path, mode: str
) -> None:
    script = [delegate("Anything.", mode=mode), {"content": "I will do it myself then."}]
    with Agent(ScriptedProvider(script), tmp_path / "ws", SUBAGENTS) as agent:
        assert agent.run("Go.").status == "completed"
        (result,) = results(agent)
        sessions = list(agent.session_dir.parent.iterdir())
    assert result.status == "error" and result.error_class == "invalid_tool_call"
    assert f"unknown mode {mode!r}" in result.content and "DEEP_RESEARCH" in result.content
    assert result.child_session is None and sessions == [agent.session_dir]


def test_a_child_at_the_depth_limit_gets_an_error_observation(tmp_path: Path) -> None:
    script = [
        delegate("Split this up."),
        delegate("Go deeper."),  # the child tries to delegate again
        {"content": "I could not delegate, so I did it: all fine."},
        {"content": "The sub-agent reported all fine."},
    ]
    with Agent(ScriptedProvider(script), tmp_path / "ws", SUBAGENTS) as agent:
        assert agent.run("Go.").status == "completed"
        (result,) = results(agent)
        child = child_dir(agent, result)
    inner = [
        json.loads(line)["entry"] for line in (child / "session.jsonl").read_text().splitlines()[1:]
    ]
    refused = [e for e in inner if e["kind"] == "tool_result"]
    assert len(refused) == 1 and refused[0]["status"] == "error"
    assert refused[0]["error_class"] == "limit_reached"
    assert "max_delegate_depth is 1" in refused[0]["content"]
    assert len(list(agent.session_dir.parent.iterdir())) == 2  # no grandchild


def test_a_deeper_limit_lets_a_grandchild_run(tmp_path: Path) -> None:
    script = [
        delegate("Split this up."),
        delegate("Go deeper."),
        {"content": "Grandchild answer: 42 is the count."},
        {"content": "Child answer: the grandchild counted 42."},
        {"content": "Parent answer: the count is 42."},
    ]
    config = SUBAGENTS.with_flags(max_delegate_depth=2)
    with Agent(ScriptedProvider(script), tmp_path / "ws", config) as agent:
        assert agent.run("Count.").final_answer == "Parent answer: the count is 42."
        child = child_dir(agent, results(agent)[0])
    grandchild_id = load_meta(child).session_id
    grandchildren = [
        p for p in agent.session_dir.parent.iterdir() if load_meta(p).parent == grandchild_id
    ]
    assert len(grandchildren) == 1


def test_a_child_over_its_step_limit_is_an_error_observation(tmp_path: Path) -> None:
    script = [
        delegate("Write many files."),
        {"content": "One.", "tool_calls": [call("file_write", path="a.txt", content="a")]},
        {"content": "The sub-agent ran out of steps; a.txt exists."},
    ]
    config = SUBAGENTS.with_flags(delegate_max_steps=1)
    with Agent(ScriptedProvider(script), tmp_path / "ws", config) as agent:
        assert agent.run("Go.").status == "completed"
        (result,) = results(agent)
    assert result.status == "error" and result.error_class == "subagent_failed"
    assert "stopped without an answer (max_steps" in result.content
    assert "Files written: a.txt" in result.content
    assert result.child_session is not None


def test_agent_delegate_is_offered_only_with_subagents_or_deep_research(tmp_path: Path) -> None:
    def tools(config: Config, mode: str | None = None) -> tuple[str, ...]:
        with Agent(ScriptedProvider([]), tmp_path / "ws", config, mode=mode) as agent:
            return agent.toolset.names

    assert "agent_delegate" not in tools(Config())
    assert "agent_delegate" not in tools(Config(), mode="CODE")
    assert "agent_delegate" in tools(Config(subagents=True))
    assert "agent_delegate" in tools(Config(), mode="DEEP_RESEARCH")
    assert "agent_delegate" in tools(Config(mode="DEEP_RESEARCH"))
    assert MODES["DEEP_RESEARCH"].allows("agent_delegate")


def test_the_tool_definition_stays_small() -> None:
    assert len(AgentDelegateTool.description) <= 200
    schema = AgentDelegateTool.Args.model_json_schema()
    assert set(schema["properties"]) == {"task", "mode"} and schema["required"] == ["task"]


def test_report_lists_each_child_with_its_calls_and_cost(tmp_path: Path) -> None:
    script = [
        delegate("Summarize."),
        *CHILD_WRITES,
        {"content": "The sub-agent wrote notes.md with the summary."},
    ]
    with Agent(ScriptedProvider(script), tmp_path / "ws", SUBAGENTS) as agent:
        agent.run("Go.")
        child = child_dir(agent, results(agent)[0])
    report = usage_report(agent.session_dir, load_usage(agent.session_dir), "gpt-4o")
    (listed,) = report.as_dict()["sub_agents"]
    assert listed["session"] == child.name and listed["folder"] == str(child)
    assert listed["calls"] == 2 and listed["status"] == "success"
    assert listed["cost_usd"] == usage_report(child, load_usage(child), "gpt-4o").cost_usd > 0
    assert report.calls == 2  # the parent's own calls only

    shown = CliRunner().invoke(app, ["report", str(agent.session_dir), "--prices", "gpt-4o"])
    assert shown.exit_code == 0, shown.output
    assert f"sub-agent {child.name} (success): 2 calls" in shown.output
    assert f"report {child}" in shown.output.replace("\n", "")


def test_the_child_is_a_session_of_its_own_for_resume(tmp_path: Path) -> None:
    script = [delegate("Summarize."), *CHILD_WRITES, {"content": "Done with the summary."}]
    with Agent(ScriptedProvider(script), tmp_path / "ws", SUBAGENTS) as agent:
        agent.run("Go.")
        child = child_dir(agent, results(agent)[0])
    more = [delegate("Again."), {"content": "no"}]
    with Agent.resume(child, ScriptedProvider(more), SUBAGENTS) as resumed:
        resumed.run("Delegate once more.")
        last = results(resumed)[-1]
        users = [r.entry for r in resumed.session.records if isinstance(r.entry, UserEntry)]
    # Resumed, the child still knows its depth from the parent link on disk.
    assert last.error_class == "limit_reached" and len(users) == 2


def test_cli_run_in_deep_research_delegates_over_a_real_model_server(tmp_path: Path) -> None:
    from providers.fake_servers import FakeModelServer
    from test_cli import run_cli

    script = [
        delegate("Count the files."),
        {"content": "There are no files in this workspace."},
        {"content": "The sub-agent counted no files."},
    ]
    with FakeModelServer("responses", script) as fake:
        done = run_cli(
            "run", "How many files?", "-p", "openai", "-m", "gpt-test",
            "--base-url", fake.base_url, "-w", str(tmp_path / "ws"),
            "--mode", "deep_research",
            env={"OPENAI_API_KEY": "k", "CONTEXTENGINE_SANDBOX": "false"},
        )  # fmt: skip
        bodies = [r.json() for r in fake.answered]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The sub-agent counted no files." in done.stdout
    assert len(bodies) == 3
    names = [t["name"] for t in bodies[0]["tools"]]
    assert "agent_delegate" in names
    assert bodies[1]["tools"] == bodies[0]["tools"]  # the child: the same tool definitions
    assert "Count the files." in json.dumps(bodies[1]["input"])
    assert "How many files?" not in json.dumps(bodies[1]["input"])


@settings(max_examples=40, deadline=None)
@given(
    parents=st.lists(st.one_of(st.none(), st.integers(0, 7)), min_size=1, max_size=8),
)
def test_depth_counts_parent_links_and_always_ends(parents: list[int | None]) -> None:
    """Session ``s<k>`` names ``s<parents[k]>`` as its parent (maybe missing, maybe a loop):
    the depth is the number of links followed before a top-level, missing or seen session."""
    with tempfile.TemporaryDirectory() as tmp:
        for k, parent in enumerate(parents):
            folder = Path(tmp) / f"s{k}"
            folder.mkdir()
            named = None if parent is None else f"s{parent}"
            (folder / META_FILE).write_text(SessionMeta(f"s{k}", "/w", parent=named).to_json())
        for k in range(len(parents)):
            seen, at, expected = {k}, parents[k], 0
            while at is not None and at not in seen:
                expected += 1
                seen.add(at)
                at = parents[at] if at < len(parents) else None
            assert delegation_depth(Path(tmp) / f"s{k}") == expected


def test_stopping_the_parent_stops_its_child_before_the_child_next_step(tmp_path: Path) -> None:
    cancel = threading.Event()
    asked: list[str] = []

    def model(request: Request) -> dict[str, Any]:
        asked.append(request.purpose)
        if len(asked) == 1:
            return delegate("Summarize the cache notes into notes.md.")
        cancel.set()  # the user presses Stop while the child's model answers
        return CHILD_WRITES[0]

    with Agent(ScriptedProvider(model), tmp_path / "ws", SUBAGENTS) as agent:
        result = agent.run("Get the notes summarized.", cancel)
        (delegated,) = results(agent)
    assert result.status == "cancelled" and len(asked) == 2
    assert delegated.status == "error" and "(cancelled" in delegated.content
    assert not (tmp_path / "ws" / "notes.md").exists(), "the child's reply is not run"
