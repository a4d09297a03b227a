"""The three history modes on the same scripted session (R7.2)."""

from __future__ import annotations

import sys
from itertools import pairwise

import pytest

from agent.test_agent_e2e import coding_script
from contextengine import Agent, Config, ScriptedProvider, ToolResultEntry
from support.requests import live_text
from support.sandbox import PYTHON_PATHS

LONG_FILE = "".join(f"value_{n} = {n}\n" for n in range(700))


def _script():
    script = coding_script(sys.executable)
    read = {
        "content": "Reading the data module.",
        "tool_calls": [{"name": "file_read", "arguments": {"path": "data.py"}}],
    }
    return [script[0], read, *script[1:]]


def _run(tmp_path, mode):
    (tmp_path / "data.py").write_text(LONG_FILE)
    provider = ScriptedProvider(
        [*_script(), {"content": "Second round: nothing else to change, all tests pass."}]
    )
    agent = Agent(
        provider,
        tmp_path,
        Config(history_mode=mode, pruning=False, sandbox_read_only_paths=PYTHON_PATHS),
    )
    agent.run("Make the tests pass.")
    agent.run("Anything else?")
    return agent, [r for r in provider.requests if r.purpose == "main"]


def _entry(agent, tool, path):
    return next(
        r.entry
        for r in agent.session.records
        if isinstance(r.entry, ToolResultEntry)
        and r.entry.tool_name == tool
        and path in r.entry.content
    )


@pytest.mark.parametrize("mode", ["compressed", "full", "round_scratchpad"])
def test_every_mode_keeps_the_persisted_prefix_stable(tmp_path, mode):
    _, requests = _run(tmp_path, mode)
    for previous, current in pairwise(requests):
        assert current.text().startswith("".join(previous.chunks[: previous.persisted_chunks]))


def test_compressed_mode_shows_the_newest_full_observation_once(tmp_path):
    agent, requests = _run(tmp_path, "compressed")
    big = next(
        r.entry
        for r in agent.session.records
        if isinstance(r.entry, ToolResultEntry) and r.entry.original_length > 100_000
    )
    assert big.full_ref and len(big.content) < 5_000
    answering = requests[2]
    # data.py's read form is over twice its kind's threshold, so history holds its ref view
    # (whose preview shows the file's end) and no live copy repeats it
    assert "value_699 = 699" in answering.text()[answering.persisted_chars - 8_000 :]
    assert live_text(answering) == ""
    assert "value_699 = 699" not in requests[4].text()[requests[4].persisted_chars :]


def test_full_mode_keeps_everything_in_history(tmp_path):
    agent, requests = _run(tmp_path, "full")
    read = _entry(agent, "file_read", "value_0")
    assert "value_699 = 699" in read.content
    assert requests[-1].segments.live == 0
    assert "value_699 = 699" in requests[-1].text()


def test_round_scratchpad_shows_full_observations_until_the_round_ends(tmp_path):
    agent, requests = _run(tmp_path, "round_scratchpad")
    last_of_round_one = requests[-2]
    assert last_of_round_one.segments.history == 0 and last_of_round_one.segments.live > 0
    assert "value_699 = 699" in last_of_round_one.text()[last_of_round_one.persisted_chars :]
    second_round = requests[-1]
    # round one's observations are in history now, each in its bounded history form
    read = _entry(agent, "file_read", "data.py")
    assert len(read.content) <= 2 * 5000 < len(LONG_FILE)
    history = second_round.messages[: second_round.segments.persisted]
    assert any(read.content in str(m.get("content")) for m in history)
    assert "value_350 = 350" not in second_round.text()  # the whole file is not kept
