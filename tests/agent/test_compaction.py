"""Compaction: round-aligned plans, archive, cached summary request, timeout, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from hypothesis import given
from hypothesis import strategies as st

from contextengine import Config, ScriptedProvider, Session, SummaryEntry, UserEntry
from contextengine.agent.events import CompactionEvent
from contextengine.agent.loop import Agent
from contextengine.compress.compaction import (
    SUMMARY_HEADING,
    TIMEOUT_MESSAGE,
    clip_summary,
    plan_compaction,
    record_tokens,
    summary_entry,
)
from contextengine.errors import ProviderError
from contextengine.session.entries import AssistantEntry, ToolResultEntry
from support.strategies import steps


def _round_of(live, index):
    rounds, current = {}, -1
    for r in live:
        if isinstance(r.entry, UserEntry):
            current += 1
        rounds[r.index] = current
    return rounds.get(index)


@given(st.lists(steps(), min_size=1, max_size=25), st.integers(1, 4), st.integers(2, 3))
def test_plans_never_split_pairs_or_rounds_and_absorb_earlier_summaries(
    tmp_path_factory, plan, keep, compactions
):
    session = Session.create(tmp_path_factory.mktemp("c") / "s", durable=False)
    for step in plan:
        for entry in step:
            session.append(entry)
    for _ in range(compactions):
        live = list(session.live)
        before_users = [r for r in live if isinstance(r.entry, UserEntry)]
        cut = plan_compaction(live, keep, context_window=50)
        if cut is None:
            continue
        removed_ids = {r.index for r in cut.removed}
        assert not any(isinstance(r.entry, SummaryEntry) for r in cut.removed)
        assert list(cut.absorbed) == [r for r in live if isinstance(r.entry, SummaryEntry)]
        expected = [
            r
            for r in live
            if cut.first_index <= r.index < cut.end_index
            and not isinstance(r.entry, SummaryEntry)
            and not (cut.scope == "steps" and isinstance(r.entry, UserEntry))
        ]
        assert list(cut.removed) == expected
        owner = None
        for r in live:
            if isinstance(r.entry, AssistantEntry):
                owner = r
            elif isinstance(r.entry, ToolResultEntry):
                assert owner is not None
                assert (r.index in removed_ids) == (owner.index in removed_ids), (
                    "a call and its result were split"
                )
        if cut.scope == "rounds":
            assert len([u for u in before_users if u.index not in removed_ids]) >= keep
            boundary = next(r for r in live if r.index == cut.end_index)
            assert isinstance(boundary.entry, UserEntry)
        else:
            assert len(before_users) <= keep
            assert not any(isinstance(r.entry, UserEntry) for r in cut.removed)
            assert isinstance(
                next(r for r in live if r.index == cut.end_index).entry, AssistantEntry
            )
        session.append(summary_entry(cut, "summary", "archive.jsonl"))
        assert not any(r.index in removed_ids for r in session.live)
        kept_users = [u for u in before_users if u.index not in removed_ids]
        assert [r for r in session.live if isinstance(r.entry, UserEntry)] == kept_users
        assert sum(isinstance(r.entry, SummaryEntry) for r in session.live) == 1


@given(
    st.lists(steps(), min_size=1, max_size=25),
    st.integers(1, 4),
    st.floats(0, 1),
    st.booleans(),
)
def test_plans_fit_the_room_they_are_given_unless_only_the_open_step_is_left(
    tmp_path_factory, plan, keep, share, turn_open
):
    """Whatever the sizes, the records a plan keeps fit ``keep_tokens``; when they cannot,
    only the open round's message and its newest step stay (between turns no round is
    open). The summary entry archives exactly what the plan removes, user messages of the
    rounds that left included."""
    session = Session.create(tmp_path_factory.mktemp("c") / "s", durable=False)
    for step in plan:
        for entry in step:
            session.append(entry)
    live = list(session.live)
    size = {r.index: record_tokens(r) for r in live}
    room = int(share * sum(size.values()))
    cut = plan_compaction(live, keep, context_window=10_000, keep_tokens=room, turn_open=turn_open)
    if cut is None:
        return
    removed = {r.index for r in cut.removed}
    kept = [r for r in live if r.index not in removed]
    session.append(summary_entry(cut, "summary", "archive.jsonl"))
    assert [r for r in session.live if not isinstance(r.entry, SummaryEntry)] == kept
    for r in live:
        if isinstance(r.entry, ToolResultEntry):
            owner = next(
                a for a in reversed(live[: live.index(r)]) if isinstance(a.entry, AssistantEntry)
            )
            assert (r.index in removed) == (owner.index in removed)
    open_round = _last_round(live) if turn_open else []
    for r in open_round:
        if isinstance(r.entry, UserEntry):
            assert r.index not in removed, "the open round's message left"
    if sum(size[r.index] for r in kept) > room:
        newest = _last_step(live)
        assert all(r in open_round or r in newest for r in kept)


def _last_round(live):
    starts = [k for k, r in enumerate(live) if isinstance(r.entry, UserEntry)]
    return live[starts[-1] if starts else 0 :]


def _last_step(live):
    starts = [k for k, r in enumerate(live) if isinstance(r.entry, AssistantEntry)]
    return live[starts[-1] :] if starts else []


def test_long_pasted_messages_leave_with_their_rounds_and_requests_stay_in_the_window(tmp_path):
    """Rounds whose user messages are each a large share of the window: older messages are
    archived with their steps, so every request stays inside the window."""
    script = iter(_filler_script(12, 1, big=300))

    def respond(request):
        if request.purpose == "summary":
            return {"content": f"{SUMMARY_HEADING}\n\nShort."}
        return next(script)

    provider = ScriptedProvider(respond)
    agent = Agent(provider, tmp_path / "ws", Config(context_window=6000))
    for r in range(12):
        assert agent.run(f"Round {r}: " + "pasted log line\n" * 600).status == "completed"
    sizes = [sum(len(c) for c in q.chunks) // 3 for q in provider.requests]
    assert max(sizes) <= 6000
    assert sum(q.purpose == "summary" for q in provider.requests) >= 5


def test_a_message_too_long_for_the_window_does_not_block_the_turns_after_it(tmp_path):
    """A turn whose message the provider refused (too long) leaves it in the log; the next
    turn archives it instead of sending it again and again."""
    script = iter(_filler_script(3, 1, big=300))

    def respond(request):
        if request.purpose == "summary":
            return {"content": f"{SUMMARY_HEADING}\n\nA paste was too long."}
        if sum(len(c) for c in request.chunks) // 3 > 6000:
            raise ProviderError("context_length_exceeded: the request is too long")
        return next(script)

    agent = Agent(ScriptedProvider(respond), tmp_path / "ws", Config(context_window=6000))
    assert agent.run("Round 0").status == "completed"
    assert agent.run("Look: " + "pasted log line\n" * 2000).status == "error"
    for r in (1, 2):
        assert agent.run(f"Round {r}").status == "completed"


def test_a_summary_overrunning_its_budget_is_cut_to_it(tmp_path):
    """A model that ignores the summary budget gets its summary cut at whole lines, with a
    line saying so, and the requests after it stay inside the window."""
    script = iter(_filler_script(20, 2, big=600))
    wordy = f"{SUMMARY_HEADING}\n\n" + "".join(
        f"* fact {n}: kept the build green\n" for n in range(3000)
    )

    def respond(request):
        return {"content": wordy} if request.purpose == "summary" else next(script)

    provider = ScriptedProvider(respond)
    agent = Agent(provider, tmp_path / "ws", Config(context_window=6000))
    for r in range(20):
        assert agent.run(f"Round {r}").status == "completed"
    summaries = [r.entry for r in agent.session.records if isinstance(r.entry, SummaryEntry)]
    assert summaries and all(s.text.endswith("600-token budget]") for s in summaries)
    assert all(s.text.startswith(wordy[:200]) for s in summaries)
    assert max(sum(len(c) for c in q.chunks) // 3 for q in provider.requests) <= 6000


def test_clip_summary_keeps_whole_lines_within_the_overrun():
    """Within 1.5x the budget a summary is kept whole; beyond, whole first lines and the
    cut line stay within it."""
    text = "\n".join(f"line {n} " + "word " * 5 for n in range(100))
    assert clip_summary(text, int(len(text) / 1.5) + 1, len) == text
    clipped = clip_summary(text, 400, len)
    assert len(clipped) <= 600 and clipped.endswith("400-token budget]")
    assert text.startswith(clipped.rsplit("\n", 1)[0] + "\n")


def _filler_script(rounds: int, steps_per_round: int, big: int = 900):
    """Every round reads a file a few times, then answers."""
    script = []
    for r in range(rounds):
        for s in range(steps_per_round):
            script.append(
                {
                    "content": f"round {r} step {s}",
                    "tool_calls": [
                        {
                            "name": "shell_exec",
                            "arguments": {"command": f"printf '%{big}s' r{r}s{s}"},
                        }
                    ],
                }
            )
        script.append({"content": f"Round {r} is finished and verified."})
    return script


def _answer_summaries(script):
    items = iter(script)

    def respond(request):
        if request.purpose == "summary":
            return {
                "content": f"{SUMMARY_HEADING}\n*(Contains context from a to b)*\n\nThe user ran printf rounds."
            }
        return next(items)

    return respond


def test_compaction_archives_summarizes_from_the_cached_prefix_and_keeps_recent_rounds(tmp_path):
    (tmp_path / "CODE_LAW.md").write_text("Rule: always verify.")
    config = Config(context_window=9000, keep_rounds=2)
    provider = ScriptedProvider(_answer_summaries(_filler_script(8, 2)))
    agent = Agent(provider, tmp_path, config)
    events = []
    for r in range(8):
        events += list(agent.stream(f"Round {r}: print things."))
    stages = [e.stage for e in events if isinstance(e, CompactionEvent)]
    assert "done" in stages and "started" in stages
    summary_requests = [k for k, r in enumerate(provider.requests) if r.purpose == "summary"]
    assert summary_requests
    for k in summary_requests:
        previous, summary = provider.requests[k - 1], provider.requests[k]
        persisted = "".join(previous.chunks[: previous.persisted_chunks])
        # the history up to the last archived record: a prefix of the cached request
        head = "".join(summary.chunks[:-1])
        assert persisted.startswith(head) and len(summary.chunks) > 4, (
            "the summary request must reuse the cached prefix"
        )
        assert (
            summary.messages[-1]["role"] == "user"
            and "Archived Session Summary" in summary.messages[-1]["content"]
        )
        assert summary.tools == provider.requests[0].tools
    summaries = [r for r in agent.session.records if isinstance(r.entry, SummaryEntry)]
    for s in summaries:
        archive = agent.workspace / s.entry.archive
        lines = archive.read_text().splitlines()
        archived = [json.loads(line)["i"] for line in lines]
        assert archived == [
            *s.entry.absorbs,
            *(
                r.index
                for r in agent.session.records
                if s.entry.first_index <= r.index < s.entry.end_index
                and not isinstance(r.entry, SummaryEntry)
                and r.index in archived
            ),
        ], "the absorbed summaries, then the archived records"
        assert [json.loads(line) for line in lines] == [
            json.loads(agent.session.records[i].to_json()) for i in archived
        ]
    last = [r for r in provider.requests if r.purpose == "main"][-1]
    text = last.text()
    assert "Rule: always verify." in text
    assert "Round 7: print things." in text and "Round 6: print things." in text
    assert text.count(SUMMARY_HEADING) == 1, "the newest summary absorbed the earlier ones"
    usage = [
        json.loads(line) for line in (agent.session_dir / "usage.jsonl").read_text().splitlines()
    ]
    summary_usage = [u for u in usage if u["purpose"] == "summary"]
    assert len(summary_usage) == len(summary_requests)
    for u, k in zip(summary_usage, summary_requests):
        summary = provider.requests[k]
        head = len("".join(summary.chunks[:-1]))
        assert u["cached_tokens"] >= head // 3, (
            "the history before the instruction is read back from the cache"
        )


def test_one_long_round_is_compacted_between_step_groups(tmp_path):
    config = Config(context_window=9000, keep_rounds=10)
    provider = ScriptedProvider(_answer_summaries(_filler_script(1, 40, big=600)))
    agent = Agent(provider, tmp_path, config)
    result = agent.run("One long task.")
    assert result.status == "completed"
    summaries = [r.entry for r in agent.session.records if isinstance(r.entry, SummaryEntry)]
    assert summaries
    last = [r for r in provider.requests if r.purpose == "main"][-1]
    assert "One long task." in last.text(), "the round's user message is never archived"
    assert len(summaries) > 1
    assert last.text().count(SUMMARY_HEADING) == 1


def test_summary_timeout_keeps_recent_rounds_with_the_exact_message(tmp_path):
    config = Config(context_window=5000, keep_rounds=1, summary_timeout_s=0.2)
    script = iter(_filler_script(4, 2))

    def slow(request):
        if request.purpose == "summary":
            time.sleep(1.0)
            return {"content": "late"}
        return next(script)

    agent = Agent(ScriptedProvider(slow), tmp_path, config)
    events = []
    for r in range(4):
        events += list(agent.stream(f"Round {r}"))
    timed_out = [e for e in events if isinstance(e, CompactionEvent) and e.stage == "timed_out"]
    assert timed_out and timed_out[0].message == TIMEOUT_MESSAGE
    entry = next(r.entry for r in agent.session.records if isinstance(r.entry, SummaryEntry))
    assert entry.timed_out and entry.text == TIMEOUT_MESSAGE


KILL_SCRIPT = textwrap.dedent(
    """
    import sys, time, pathlib
    from contextengine import Config, ScriptedProvider
    from contextengine.agent.loop import Agent
    workspace, flag = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    steps = iter([{"content": f"round {r}", "tool_calls": [{"name": "shell_exec", "arguments": {"command": f"printf '%900s' {r}"}}]} if k == 0 else {"content": f"Round {r} is finished and verified."} for r in range(10) for k in range(2)])
    def respond(request):
        if request.purpose == "summary":
            flag.write_text("summarizing")
            time.sleep(60)
        return next(steps)
    agent = Agent(ScriptedProvider(respond), workspace, Config(context_window=6000, keep_rounds=1), session_id="killed")
    print(agent.session_dir, flush=True)
    for r in range(10):
        agent.run(f"Round {r}")
    """
)


def test_kill_during_compaction_loses_nothing_and_resume_compacts_later(tmp_path):
    flag = tmp_path / "flag"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, str(tmp_path / "ws"), str(flag)],
        stdout=subprocess.PIPE,
        text=True,
    )
    session_dir = proc.stdout.readline().strip()
    deadline = time.time() + 60
    while not flag.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert flag.exists(), "the run never reached a compaction"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = Session.open(session_dir)
    assert before.load_report.clean
    assert not any(isinstance(r.entry, SummaryEntry) for r in before.records)
    users = [r.entry.text for r in before.records if isinstance(r.entry, UserEntry)]
    assert users[0] == "Round 0" and len(users) >= 2
    script = iter(
        [
            {
                "content": "resumed",
                "tool_calls": [
                    {"name": "shell_exec", "arguments": {"command": "printf '%900s' x"}}
                ],
            },
            {"content": "Resumed round is finished."},
        ]
    )

    def respond(request):
        if request.purpose == "summary":
            return {"content": f"{SUMMARY_HEADING}\nsummary after resume"}
        return next(script)

    agent = Agent.resume(
        session_dir, ScriptedProvider(respond), Config(context_window=6000, keep_rounds=1)
    )
    agent.last_input_tokens = 10_000
    result = agent.run("Round after resume")
    assert result.status == "completed"
    after = Session.open(session_dir)
    assert [r.entry for r in after.records[: len(before.records)]] == [
        r.entry for r in before.records
    ]
    assert any(isinstance(r.entry, SummaryEntry) for r in after.records)
