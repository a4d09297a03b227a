"""``Agent.context_parts``: the next request by part (the CLI's ``/context``)."""

from __future__ import annotations

from pathlib import Path

from contextengine import Agent, Config, ScriptedProvider
from contextengine.agent.events import CompactionEvent

ANSWER = {"content": "Done: I looked and everything in the workspace is in order."}


def test_each_part_and_its_cached_share_after_the_last_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "CODE_LAW.md").write_text("Always write tests first.\n")
    agent = Agent(ScriptedProvider([ANSWER] * 8), tmp_path, Config(overhead_share=None))
    before = {p.name: p for p in agent.context_parts()}
    assert {"tools", "system", "CODE_LAW", "tail"} <= set(before)
    assert all(p.cached_tokens == 0 for p in before.values()), "no call yet: nothing cached"
    agent.run("Check the workspace.")
    after = {p.name: p for p in agent.context_parts()}
    assert after["history"].tokens > 0
    for name in ("tools", "system", "CODE_LAW"):
        assert after[name].cached_tokens == after[name].tokens > 0
    assert after["tail"].cached_tokens < after["tail"].tokens


def test_a_compaction_summary_is_its_own_part(tmp_path: Path) -> None:
    summary = {"content": "## Summary\nThe user asked three times; all was in order."}
    config = Config(overhead_share=None, keep_rounds=1)
    agent = Agent(ScriptedProvider([ANSWER, ANSWER, ANSWER, summary]), tmp_path, config)
    for n in range(3):
        agent.run(f"Check the workspace, round {n}.")
    stages = [e.stage for e in agent.compact() if isinstance(e, CompactionEvent)]
    assert "done" in stages, stages
    parts = {p.name: p for p in agent.context_parts()}
    assert parts["summary"].tokens > 0
