"""``agent.stats()``: in-process counters checked against a scripted session's own records."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from contextengine import Config, ScriptedProvider, SummaryEntry
from contextengine.agent.events import CompactionEvent, PruneEvent, ToolResultEvent, UsageEvent
from contextengine.agent.loop import Agent
from contextengine.agent.stats import AgentStats
from contextengine.session.entries import ToolResultEntry

SUMMARY = "## Archived Session Summary\n*(Contains context from a to b)*\n\nRounds of printf."


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def step(*calls: dict, content: str = "Working.") -> dict:
    return {"content": content, "tool_calls": list(calls)}


def session_script() -> list[dict]:
    """Round 0: a write, three NameErrors (a 3-strike reboot), an answer. Rounds 1-5: large
    outputs that make the small window compact. Round 6 (CHAT mode): a refused write."""
    failing = call("shell_exec", command="python3 -c 'print(undefined_name)'")
    script = [
        step(call("file_write", path="a.txt", content="a")),
        step(failing),
        step(failing),
        step(failing),
        {
            "content": "1. Probe.\n2. Three runs.\n3. Undefined name.\n4. Stop.\n5. No.\nHUMAN_HELP: no"
        },
        {"content": "The name is undefined; a.txt was written and the probe stopped."},
    ]
    for r in range(1, 6):
        big = [call("shell_exec", command=f"printf '%1500s' round{r}-{k}") for k in (1, 2)]
        script += [step(big[0]), step(big[1]), {"content": f"Round {r} is finished and verified."}]
    script += [
        step(call("file_write", path="b.txt", content="b")),
        {"content": "Chat mode: nothing can be written now, so b.txt was not created."},
    ]
    return script


def run_session(tmp_path: Path) -> tuple[Agent, list]:
    replies = iter(session_script())

    def respond(request):
        return {"content": SUMMARY} if request.purpose == "summary" else next(replies)

    workspace = tmp_path / "ws"
    config = Config(overhead_share=None, context_window=9000, keep_rounds=2, sandbox=False)
    agent = Agent(ScriptedProvider(respond), workspace, config)
    events = list(agent.stream("Probe python and write a.txt."))
    for r in range(1, 6):
        events += agent.stream(f"Round {r}: print things.")
    (workspace / "CODE_LAW.md").write_text("Rule: verify.")  # L2 changes: one cache break
    agent.set_mode("CHAT")
    events += agent.stream("Write b.txt.")
    return agent, events


def test_stats_count_the_session_as_its_records_do(tmp_path: Path) -> None:
    agent, events = run_session(tmp_path)
    stats = agent.stats()
    json.dumps(stats)  # plain values only

    usage = [json.loads(line) for line in agent.session.layout.usage_log.read_text().splitlines()]
    assert stats["calls"] == dict(Counter(u["purpose"] for u in usage))
    assert stats["calls_total"] == len(usage)
    for key in ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens"):
        assert stats[key] == sum(u[key] for u in usage), key
    assert stats["input_tokens"] > 0
    assert stats["cache_hit_rate"] == stats["cached_tokens"] / stats["input_tokens"]
    breaks = Counter(u["prefix"]["break"]["cause"] for u in usage if "break" in u["prefix"])
    assert stats["cache_breaks"] == dict(breaks)
    assert stats["cache_breaks"]["l2_changed"] == 1
    assert stats["cache_breaks"]["compaction"] >= 1

    summaries = [r for r in agent.session.records if isinstance(r.entry, SummaryEntry)]
    assert stats["compactions"] == len(summaries) >= 1
    assert stats["calls"]["summary"] == stats["compactions"]
    assert stats["strikes"] == stats["calls"]["reboot"] == 1
    assert stats["prunes"] == sum(isinstance(e, PruneEvent) for e in events)

    results = [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]
    assert stats["tool_calls"] == len(results) == 2 + 3 + 10
    assert stats["tool_calls_by_name"] == {"file_write": 2, "shell_exec": 13}
    assert stats["tool_errors"] == {"NameError": 3, "masked_tool": 1}
    assert not (tmp_path / "ws" / "b.txt").exists()


def test_counters_follow_single_events() -> None:
    stats = AgentStats()
    stats.observe(UsageEvent("main", 100, 80, 10, 5, 0.1, 300, None))
    stats.observe(UsageEvent("summary", 50, 40, 0, 20, 0.1, 150, "compaction"))
    stats.observe(CompactionEvent("started", "Compacting."))
    stats.observe(CompactionEvent("done", "Archived."))
    stats.observe(PruneEvent(3, 900, 2.0))
    stats.observe(ToolResultEvent("c1", "file_read", "error", "…", "not_found"))
    stats.observe(ToolResultEvent("c2", "file_read", "success", "…"))
    assert stats.as_dict() == {
        "calls": {"main": 1, "summary": 1},
        "calls_total": 2,
        "input_tokens": 150,
        "cached_tokens": 120,
        "cache_write_tokens": 10,
        "output_tokens": 25,
        "cache_hit_rate": 0.8,
        "cache_breaks": {"compaction": 1},
        "compactions": 1,
        "prunes": 1,
        "pruned_results": 3,
        "strikes": 0,
        "tool_calls": 2,
        "tool_calls_by_name": {"file_read": 2},
        "tool_errors": {"not_found": 1},
    }


def test_a_new_agent_starts_at_zero(tmp_path: Path) -> None:
    agent = Agent(ScriptedProvider([]), tmp_path / "ws", Config(overhead_share=None))
    stats = agent.stats()
    assert stats["calls_total"] == 0 and stats["cache_hit_rate"] == 0.0
    assert stats["tool_errors"] == {} and stats["strikes"] == 0
