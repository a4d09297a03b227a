"""The text ReAct protocol: tolerant parsing and a full text-mode run."""

from __future__ import annotations

import asyncio

import pytest

from contextengine import Agent, Config, ScriptedProvider
from contextengine.agent.events import Done, ToolCallEvent
from contextengine.agent.text_protocol import parse_text_reply


@pytest.mark.parametrize(
    ("reply", "name", "arguments"),
    [
        ('Thought: look\nAction: file_read[{"path": "a.py"}]', "file_read", '{"path":"a.py"}'),
        ('Action: file_read({"path": "a]b"})', "file_read", '{"path":"a]b"}'),
        (
            'Action: shell_exec\nAction Input: {"command": "ls -la"}',
            "shell_exec",
            '{"command":"ls -la"}',
        ),
        ('Action: file_read {"path": "x"}\nObservation: invented', "file_read", '{"path":"x"}'),
        ('Action: file_read[\n```json\n{"path": "x"}\n```\n]', "file_read", '{"path":"x"}'),
        ("**Action:** `file_ls` {}", "file_ls", "{}"),
        ("Action: file_ls[]", "file_ls", "{}"),
        ("Action: file_read[{broken json}]", "file_read", "{broken json}"),
    ],
)
def test_action_variants(reply, name, arguments):
    parsed = parse_text_reply(reply)
    assert parsed.action is not None and parsed.problem is None
    assert (parsed.action.name, parsed.action.arguments_json) == (name, arguments)


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Thought: done\nAction: Finish[All good [really]]", "All good [really]"),
        ("Action: Finish\nit is done", "it is done"),
        ("Final Answer: 42 is the answer", "42 is the answer"),
    ],
)
def test_final_answers(reply, answer):
    assert parse_text_reply(reply).final_answer == answer


def test_unparseable_reply_is_a_problem_not_a_guess():
    parsed = parse_text_reply("I think I should look at the file.")
    assert parsed.action is None and parsed.final_answer is None
    assert "Action:" in parsed.problem


def test_text_mode_run_with_an_unparseable_reply_and_a_bad_argument(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    provider = ScriptedProvider(
        [
            {"content": "Let me think about it."},
            {"content": "Thought: read it\nAction: file_read[{broken}]"},
            {"content": 'Thought: read it properly\nAction: file_read[{"path": "notes.txt"}]'},
            {
                "content": "Thought: done\nAction: Finish[notes.txt holds two lines: alpha and beta.]"
            },
        ]
    )
    agent = Agent(provider, tmp_path, Config(overhead_share=None), protocol="text")
    result = agent.run("What is in notes.txt?")
    assert result.status == "completed"
    assert result.final_answer == "notes.txt holds two lines: alpha and beta."
    first = provider.requests[0]
    assert first.tools == []
    assert (
        "file_read" in first.messages[0]["content"]
        and "Action: Finish[" in first.messages[0]["content"]
    )
    second = provider.requests[1]
    assert any(
        "no 'Action:' line" in m["content"] for m in second.messages[: second.segments.persisted]
    )
    fourth = provider.requests[3].messages
    assert any(
        "alpha" in m["content"] and m["content"].startswith("Observation")
        for m in fourth
        if m["role"] == "user"
    )
    assert any(
        "invalid" in m["content"].lower()
        for m in provider.requests[2].messages
        if m["role"] == "user"
    )


def test_astream_yields_the_same_events(tmp_path):
    provider = ScriptedProvider(
        [
            {"content": "Listing.", "tool_calls": [{"name": "file_ls", "arguments": {}}]},
            {"content": "The workspace holds no files yet, nothing to report."},
        ]
    )
    agent = Agent(provider, tmp_path, Config(overhead_share=None))

    async def collect():
        return [event async for event in agent.astream("List the files.")]

    events = asyncio.run(collect())
    assert isinstance(events[-1], Done) and events[-1].result.status == "completed"
    assert any(isinstance(e, ToolCallEvent) and e.name == "file_ls" for e in events)


def test_three_invalid_replies_trigger_the_three_strike_reboot(tmp_path):
    invalid = {"content": "I keep thinking without an action line."}
    provider = ScriptedProvider(
        [
            invalid,
            invalid,
            invalid,
            {"content": "1. Stuck writing actions. 5. No human help needed."},
            {"content": "Thought: done\nAction: Finish[I could not find the file, sorry.]"},
        ]
    )
    agent = Agent(provider, tmp_path, Config(overhead_share=None), protocol="text")
    result = agent.run("Find the file.")
    assert result.status == "completed"
    purposes = [r.purpose for r in provider.requests]
    assert purposes == ["main", "main", "main", "reboot", "main"]
    progress = (agent.session_dir / "progress.md").read_text()
    assert "5-Question Reboot" in progress
