"""The overhead allowance (#38): the tail and 3-strike reboots wait until a run affords them."""

from __future__ import annotations

from pathlib import Path

from contextengine import Config, ScriptedProvider
from contextengine.agent.allowance import Allowance
from contextengine.agent.loop import Agent
from contextengine.memory.status import NO_PLAN
from contextengine.types import Usage

TAIL_HEADING = "## Task status"


def usage(input_tokens: int, cached: int = 0, written: int = 0) -> Usage:
    return Usage(input_tokens=input_tokens, cached_tokens=cached, cache_write_tokens=written)


def test_costs_are_priced_per_token_kind() -> None:
    allowance = Allowance(0.01, read=0.1, write=1.25)
    assert allowance.cost(usage(1000, cached=600, written=200)) == 200 + 60 + 250


def test_an_overhead_fits_within_its_share_of_what_the_calls_cost_without_overheads() -> None:
    allowance = Allowance(0.01, read=0.1, write=1.25)
    assert not allowance.affords(1)  # nothing spent yet: nothing to pay it from
    allowance.observe("main", usage(10_000))
    assert allowance.affords(100) and not allowance.affords(101)
    allowance.pay(60)  # a tail: the next main call's usage will count its tokens as spent
    assert allowance.affords(39) and not allowance.affords(40)


def test_a_reboot_call_is_an_overhead_and_a_summary_is_not() -> None:
    allowance = Allowance(0.01, read=0.1, write=1.25)
    allowance.observe("main", usage(20_000))
    allowance.observe("summary", usage(1_000))
    allowance.observe("reboot", usage(100))
    assert allowance.spent == 21_100 and allowance.paid == 100
    assert allowance.affords(110) and not allowance.affords(111)


def test_no_share_is_no_limit() -> None:
    assert Allowance(None, read=0.1, write=1.25).affords(10**9)


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def failing() -> dict:
    return {
        "content": "Trying.",
        # a read, not a high-risk call: R8.2's status after those is paid whatever the cost
        "tool_calls": [call("file_read", path="missing.py")],
    }


def run(tmp_path: Path, config: Config) -> ScriptedProvider:
    script = [failing(), failing(), failing(), {"content": "The name is undefined; done."}]
    provider = ScriptedProvider(script)
    agent = Agent(provider, tmp_path / "ws", config)
    assert agent.run("Probe python.").status == "completed"
    return provider


def test_a_short_failing_run_has_no_tail_and_no_reboot_with_an_allowance(tmp_path: Path) -> None:
    provider = run(tmp_path / "capped", Config(sandbox=False, overhead_share=0.01))
    assert [r.purpose for r in provider.requests] == ["main"] * 4
    assert not any(TAIL_HEADING in str(r.messages[-1]) for r in provider.requests)


def test_by_default_the_same_run_recites_and_reboots(tmp_path: Path) -> None:
    answer = {"content": "The name is undefined; done."}
    provider = ScriptedProvider(
        [failing(), failing(), failing(), {"content": "HUMAN_HELP: no"}, answer]
    )
    agent = Agent(provider, tmp_path / "ws", Config(sandbox=False))
    assert agent.run("Probe python.").status == "completed"
    assert [r.purpose for r in provider.requests] == ["main"] * 3 + ["reboot", "main"]
    mains = [r for r in provider.requests if r.purpose == "main"]
    # a short history's tail is the focus line (Config.recite_after_chars), on every request
    assert [r.messages[-1]["content"] for r in mains[:3]] == [NO_PLAN] * 3


def test_the_tail_comes_once_the_run_has_cost_enough(tmp_path: Path) -> None:
    listing = "\n".join(f"src/module_{i}/file_{i}.py" for i in range(400))
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "sources.txt").write_text(listing)
    script = [
        {"content": "Listing.", "tool_calls": [call("file_read", path="sources.txt")]}
        for _ in range(6)
    ] + [{"content": "Listed them all, done."}]
    provider = ScriptedProvider(script)
    agent = Agent(provider, tmp_path / "ws", Config(sandbox=False, overhead_share=0.01))
    assert agent.run("List the sources.").status == "completed"
    last = [r.messages[-1] for r in provider.requests]
    tails = [m["content"] == NO_PLAN or TAIL_HEADING in str(m["content"]) for m in last]
    assert not tails[0] and any(tails)
