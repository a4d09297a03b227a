"""The request log and the ``inspect`` / ``sessions`` commands on a recorded session."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.agent.request_log import read_requests
from contextengine.agent.usage_log import read_usage
from contextengine.context.request import Request
from contextengine.errors import SessionLogError
from contextengine.measure.inspector import PART_NAMES
from contextengine.session.manage import set_title
from support.inspected_session import record_session

SEGMENT_OF = {"system": "l1", "l2": "l2", "history": "history", "live": "live", "tail": "tail"}


def cli(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTENGINE_")}
    return subprocess.run(
        [sys.executable, "-m", "contextengine.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Request]]:
    return record_session(tmp_path_factory.mktemp("inspect") / "ws")


def test_the_log_rebuilds_every_request_exactly_as_sent(recorded) -> None:
    session_dir, sent = recorded
    rebuilt = list(read_requests(session_dir / "requests.jsonl"))
    assert [r.text() for r in rebuilt] == [r.text() for r in sent]
    assert [r.segments for r in rebuilt] == [r.segments for r in sent]
    assert [r.purpose for r in rebuilt] == [r.purpose for r in sent]
    # stored by reference: far smaller than every request written out in full
    full = sum(len(r.text().encode()) for r in sent)
    assert (session_dir / "requests.jsonl").stat().st_size < full / 5


def test_inspect_json_parts_are_the_request_layers(recorded) -> None:
    session_dir, sent = recorded
    done = cli("inspect", session_dir, "--json")
    assert done.returncode == 0, done.stderr
    calls = json.loads(done.stdout)
    usage = list(read_usage(session_dir / "usage.jsonl"))
    assert [c["call"] for c in calls] == list(range(1, len(sent) + 1))
    for call, request, record in zip(calls, sent, usage, strict=True):
        assert call["purpose"] == request.purpose
        assert call["cached_prefix_reported"] == record.cached_tokens
        assert call["cached_prefix_predicted"] == record.prefix["reusable_chars"]
        parts = call["parts"]
        assert {p["name"] for p in parts} <= set(PART_NAMES)
        assert parts[0] == {"name": "tools", "start": 0, "end": len(request.chunks[0])}
        assert parts[-1]["end"] == len(request.text())
        for before, after in itertools.pairwise(parts):
            assert before["end"] == after["start"]
        s = request.segments
        first = {"system": 1, "l2": 1 + s.l1, "history": 1 + s.l1 + s.l2}
        text = request.text()
        for p in parts:
            if p["name"] in first:
                count = getattr(s, SEGMENT_OF[p["name"]])
                chunks = request.chunks[first[p["name"]] : first[p["name"]] + count]
                assert text[p["start"] : p["end"]] == "".join(chunks)
        if request.purpose == "summary":
            instruction = next(p for p in parts if p["name"] == "instruction")
            assert text[instruction["start"] : instruction["end"]] == request.chunks[-1]


def test_inspect_shows_the_code_law_break_and_the_compaction(recorded) -> None:
    session_dir, sent = recorded
    calls = json.loads(cli("inspect", session_dir, "--json").stdout)
    breaks = [(c["call"], c["break"]["cause"]) for c in calls if c["break"]]
    causes = [cause for _, cause in breaks]
    assert causes[0] == "l2_changed" and "compaction" in causes
    l2_call = breaks[0][0]
    one = json.loads(cli("inspect", session_dir, "--call", l2_call, "--json").stdout)
    text = sent[l2_call - 1].text()
    l2 = next(p for p in one["parts"] if p["name"] == "l2")
    assert "always verify twice" in text[l2["start"] : l2["end"]]
    assert l2["start"] <= one["break"]["position"] < l2["end"]
    assert "twice" in one["break"]["new"]
    summary_calls = [c["call"] for c in calls if c["purpose"] == "summary"]
    assert summary_calls and breaks[1][0] > summary_calls[0]


def test_inspect_one_call_for_people_shows_parts_break_and_diff(recorded) -> None:
    session_dir, _ = recorded
    calls = json.loads(cli("inspect", session_dir, "--json").stdout)
    l2_call = next(c["call"] for c in calls if c["break"])
    done = cli("inspect", session_dir, "--call", l2_call)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "cache break: l2_changed" in out
    assert f"diff vs call {l2_call - 1}: first difference at char" in out and "(in l2)" in out
    assert "chars folded" in out  # the tools JSON is long
    table = cli("inspect", session_dir)
    assert table.returncode == 0 and "l2_changed" in table.stdout and "compaction" in table.stdout


def test_inspect_mistakes_are_one_line(recorded, tmp_path: Path) -> None:
    session_dir, sent = recorded
    done = cli("inspect", session_dir, "--call", len(sent) + 1)
    assert done.returncode == 2 and f"no call {len(sent) + 1}" in done.stderr
    missing = cli("inspect", tmp_path)
    assert missing.returncode == 2 and "no requests.jsonl" in missing.stderr
    assert "Traceback" not in done.stderr + missing.stderr


def test_a_torn_last_line_is_skipped_and_a_bad_reference_is_an_error(
    recorded, tmp_path: Path
) -> None:
    session_dir, sent = recorded
    lines = (session_dir / "requests.jsonl").read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines[:3]) + "\n" + lines[3][:50])
    assert len(list(read_requests(torn))) == 3
    bad = tmp_path / "bad.jsonl"
    second = json.loads(lines[1])
    second["chunks"][0] = 10_000
    bad.write_text("\n".join([lines[0], json.dumps(second), lines[2]]) + "\n")
    with pytest.raises(SessionLogError, match=r"bad\.jsonl:2"):
        list(read_requests(bad))


def test_record_requests_off_writes_no_request_log(tmp_path: Path) -> None:
    config = Config(record_requests=False, sandbox=False)
    agent = Agent(ScriptedProvider([{"content": "All done, nothing to change."}]), tmp_path, config)
    agent.run("hello")
    assert (agent.session_dir / "usage.jsonl").is_file()
    assert not (agent.session_dir / "requests.jsonl").exists()


def test_sessions_lists_searches_and_prints_json(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    for message, model in (("Fix the parser bug", "gpt-4o"), ("Write the release notes", "x")):
        agent = Agent(
            ScriptedProvider([{"content": "Done: it is handled and checked."}], model=model),
            workspace,
            Config(sandbox=False),
        )
        agent.run(message)
        agent.session.close()
    done = cli("sessions", workspace, "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert sorted(s["title"] for s in listed) == ["Fix the parser bug", "Write the release notes"]
    assert all(s["turns"] == 1 and s["calls"] == 1 for s in listed)
    costs = {s["title"]: s["cost_usd"] for s in listed}
    assert costs["Fix the parser bug"] > 0 and costs["Write the release notes"] is None
    assert "unknown" in cli("sessions", workspace).stdout  # "price unknown", wrapped
    assert listed[0]["created"] >= listed[1]["created"]
    found = json.loads(cli("sessions", workspace, "--search", "PARSER", "--json").stdout)
    assert [s["title"] for s in found] == ["Fix the parser bug"]
    table = cli("sessions", cwd=workspace)
    assert table.returncode == 0 and "release notes" in table.stdout
    set_title(Path(found[0]["directory"]), "Parser fix (renamed)")
    renamed = json.loads(cli("sessions", workspace, "--search", "renamed", "--json").stdout)
    assert [s["title"] for s in renamed] == ["Parser fix (renamed)"]
    empty = cli("sessions", workspace, "--search", "nothing like this")
    assert empty.returncode == 0 and "no sessions matching" in empty.stderr
