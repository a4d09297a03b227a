"""Production policies as replay baselines: triggers, moves, pricing and the JSON shape."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from contextengine.agent.parts import AgentRecipe
from contextengine.measure.accounting import CacheAccountant
from contextengine.measure.playback import ReplayCall
from contextengine.measure.policies import POLICIES, SUMMARY_BUDGET_TOKENS, Policy, Preview
from contextengine.measure.policy_replay import is_result, policy_calls, summary_text
from contextengine.measure.replay import Replayer, replay_engine
from contextengine.measure.tokens import TokenCounter
from contextengine.measure.trajectory import parse_trajectory

from .conftest import cli, write_json

NAMES = {
    "full_history",
    "sliding_window",
    "anthropic_context_editing",
    "anthropic_compaction",
    "claude_code",
    "codex",
    "gemini_cli",
    "deepagents",
    "openhands_condenser",
    "observation_masking",
}
COUNTER = TokenCounter()


def policy(name: str) -> Policy:
    return next(p for p in POLICIES if p.name == name)


def run(
    steps: int, lines: int, users: tuple[int, ...] = (), big: dict[int, int] | None = None
) -> dict[str, Any]:
    """A native run: step j reads part_j (``lines`` lines of distinct names; ``big[j]``
    characters instead when given); ``users`` steps start a new round."""
    big = big or {}
    recorded = []
    for j in range(steps):
        text = "\n".join(f"name_{j}_{i} = value_{j}_{i}" for i in range(lines))
        if j in big:
            text = ("x" * 99 + "\n") * (big[j] // 100)
        step: dict[str, Any] = {
            "assistant": f"Reading part_{j}.",
            "tool_calls": [{"id": f"c{j}", "name": "bash", "arguments": {"command": f"cat {j}"}}],
            "observation": text,
        }
        if j in users:
            step["user"] = f"Now look at part_{j} too."
        recorded.append(step)
    return {
        "task": "Fix the bug.",
        "system": "You are a coding agent.",
        "tools": [{"name": "bash", "parameters": {"type": "object", "properties": {}}}],
        "steps": recorded,
    }


@cache
def plain_calls(data: str) -> tuple[ReplayCall, ...]:
    return tuple(
        replay_engine(parse_trajectory(json.loads(data)), AgentRecipe.plain_chat(), COUNTER)
    )


def play(name: str, data: dict[str, Any], window: int = 200_000) -> list[ReplayCall]:
    plain = plain_calls(json.dumps(data))
    return policy_calls(policy(name), plain, CacheAccountant(COUNTER), window)


def mains(calls: list[ReplayCall]) -> list[ReplayCall]:
    return [c for c in calls if c.step is not None]


def sides(calls: list[ReplayCall]) -> list[ReplayCall]:
    return [c for c in calls if c.step is None]


def results(call: ReplayCall) -> list[str]:
    return [str(m["content"]) for m in call.request.messages if is_result(m)]


def breaks(calls: list[ReplayCall]) -> list[tuple[int | None, str]]:
    return [(c.step, b.cause) for c in mains(calls) if (b := c.cost.cache_break) is not None]


def test_every_policy_of_a_run_below_its_triggers_costs_exactly_full_history(
    multi_round: dict[str, Any],
) -> None:
    baselines = Replayer(parse_trajectory(multi_round), counter=COUNTER).baselines()
    assert set(baselines) == NAMES
    full = baselines["full_history"].as_dict()
    for policy_ in POLICIES:
        assert baselines[policy_.name].as_dict() == full, policy_.name


def test_replay_json_reports_every_policy_with_full_historys_keys(
    multi_round: dict[str, Any], tmp_path: Path
) -> None:
    done = cli("replay", write_json(tmp_path / "run.json", multi_round), "--json")
    assert done.returncode == 0, done.stderr
    baselines = json.loads(done.stdout)["baselines"]
    assert set(baselines) == NAMES
    for figures in baselines.values():
        assert set(figures) == set(baselines["full_history"])
        assert {"input_cost_usd", "cost_usd", "cached_tokens", "uncached_tokens"} <= set(figures)


def test_anthropic_context_editing_clears_all_but_three_results_past_100k_tokens() -> None:
    calls = play("anthropic_context_editing", run(steps=30, lines=500))
    full = plain_calls(json.dumps(run(steps=30, lines=500)))
    first = next(k for k, c in enumerate(full) if c.cost.input_tokens >= 100_000)
    for k, call in enumerate(mains(calls)):
        shown = results(call)
        if k < first:
            assert call.request.chunks == full[k].request.chunks
        else:
            assert shown[:-3] == ["[cleared]"] * (len(shown) - 3)
            assert "[cleared]" not in shown[-3:]
    # the API edits the prompt: the cache breaks where the newly cleared result sits
    assert breaks(calls)[0] == (first, "prune")
    assert not sides(calls)


def test_anthropic_compaction_summarizes_at_150k_reading_the_cached_prefix() -> None:
    data = run(steps=40, lines=500)
    calls = play("anthropic_compaction", data)
    (summary,) = sides(calls)
    assert summary.request.purpose == "summary"
    assert summary.cost.cached_tokens > 0.9 * summary.cost.input_tokens
    assert summary.cost.input_tokens >= 150_000
    after = mains(calls)[summary.after_step + 1]
    assert [m["role"] for m in after.request.messages[:2]] == ["system", "user"]
    assert after.request.messages[1]["content"] == summary.reply.content
    # the optimistic summary names what it replaced, newest first
    assert summary.reply.content.split("\n")[1].startswith(f"value_{summary.after_step}_499 ")
    assert breaks(calls) == [(summary.after_step + 1, "compaction")]


def test_claude_code_spills_big_results_when_they_appear_and_compacts_near_the_window() -> None:
    data = run(steps=16, lines=200, big={2: 60_000})
    calls = play("claude_code", data, window=60_000)
    spilled = results(mains(calls)[3])[2]
    assert spilled.startswith("<persisted-output>") and "tool-results/" in spilled
    assert len(spilled) < 2_300
    # a stub from its first request on is no rewrite: no break before the compaction
    summaries = sides(calls)
    assert summaries
    first = summaries[0].after_step + 1
    assert all(step >= first for step, _ in breaks(calls))
    assert summaries[0].cost.input_tokens >= 60_000 - 33_000


def test_codex_truncates_results_and_keeps_user_messages_over_its_summary() -> None:
    data = run(steps=14, lines=300, users=(5,), big={1: 50_000})
    calls = play("codex", data, window=40_000)
    truncated = results(mains(calls)[2])[1]
    assert "... [truncated] ..." in truncated and len(truncated) < 41_000
    (summary, *_) = sides(calls)
    assert summary.cost.input_tokens >= 0.9 * 40_000
    after = mains(calls)[summary.after_step + 1].request.messages
    assert [m["content"] for m in after[1:4]] == [
        "Fix the bug.",
        "Now look at part_5 too.",
        summary.reply.content,
    ]


def test_gemini_cli_masks_old_results_in_batches_beyond_the_newest_50k_tokens() -> None:
    calls = play("gemini_cli", run(steps=30, lines=500))
    masked_steps = [
        c.step for c in mains(calls) if any("<tool_output_masked>" in r for r in results(c))
    ]
    assert masked_steps
    cuts = breaks(calls)
    # a batch at a time (30k tokens at least), not one break per step
    assert 0 < len(cuts) < len(masked_steps)
    last = mains(calls)[-1]
    assert "<tool_output_masked>" not in results(last)[-1]
    # a single-round run has no user message to split at: compression does nothing
    assert not sides(calls)


def test_gemini_cli_compresses_at_half_the_window_from_a_user_message() -> None:
    data = run(steps=16, lines=150, users=(12,))
    calls = play("gemini_cli", data, window=40_000)
    summary, verification = sides(calls)[:2]
    assert summary.cost.cached_tokens < 10  # its own prompt: nothing of the agent's cached
    assert verification.cost.cached_tokens > 0  # the verification pass reads the first
    after = mains(calls)[summary.after_step + 1].request.messages
    assert after[1]["content"] == summary.reply.content
    assert after[2]["content"] == "Now look at part_12 too."


def test_deepagents_evicts_results_over_20k_tokens_and_keeps_a_tenth_of_the_window() -> None:
    data = run(steps=14, lines=300, big={1: 90_000})
    calls = play("deepagents", data, window=40_000)
    evicted = results(mains(calls)[2])[1]
    assert evicted.startswith("Tool result too large") and "lines truncated" in evicted
    summary = sides(calls)[0]
    assert summary.cost.cached_tokens < 10
    assert summary.cost.input_tokens >= (0.85 - 0.10) * 40_000
    after = mains(calls)[summary.after_step + 1]
    assert after.request.messages[1]["content"] == summary.reply.content
    assert after.cost.input_tokens < 0.85 * 40_000


def test_openhands_condenser_keeps_the_task_and_half_of_240_events() -> None:
    data = run(steps=125, lines=1)
    calls = play("openhands_condenser", data)
    (summary,) = sides(calls)
    step = summary.after_step + 1
    full = plain_calls(json.dumps(data))
    assert len(full[step].request.messages) > 240 >= len(full[step - 1].request.messages)
    after = mains(calls)[step].request.messages
    assert after[1]["content"] == "Fix the bug."
    assert after[2]["content"] == summary.reply.content
    assert len(after) - 3 <= 240 // 2 - 2 - 1
    assert after[3]["role"] != "tool"


def test_observation_masking_keeps_the_last_ten_observations() -> None:
    calls = play("observation_masking", run(steps=14, lines=3))
    for call in mains(calls):
        shown = results(call)
        masked = [r for r in shown if r.startswith("Old environment output: (3 lines omitted)")]
        assert len(masked) == max(0, len(shown) - 10)
        assert shown[len(masked) :] == [r for r in shown if r.startswith("name_")]
    assert [step for step, _ in breaks(calls)] == list(range(11, 14))


def test_the_summary_names_the_span_newest_first_within_its_budget() -> None:
    span = [
        {"role": "tool", "content": "old_name_1 then shared_name"},
        {"role": "tool", "content": "new_name_2 and shared_name"},
    ]
    text = summary_text(span, CacheAccountant(COUNTER))
    assert text.split("\n")[1].split() == ["shared_name", "new_name_2", "old_name_1"]
    many = [{"role": "tool", "content": " ".join(f"ident_{i}" for i in range(5_000))}]
    assert COUNTER.count(summary_text(many, CacheAccountant(COUNTER))) <= SUMMARY_BUDGET_TOKENS + 5


@pytest.mark.parametrize(
    ("preview", "text", "expected"),
    [
        (Preview(head_chars=3, tail_chars=2), "abcdefgh", "abc\n... [truncated] ...\ngh"),
        (Preview(head_chars=3, tail_chars=2), "abcde", "abcde"),
        (Preview(head_lines=1, tail_lines=1), "a\nb\nc\nd", "a\n... [2 lines truncated] ...\nd"),
    ],
)
def test_previews_keep_head_and_tail(preview: Preview, text: str, expected: str) -> None:
    assert preview.of(text) == expected


def test_the_human_table_lists_every_policy_against_full_history(
    multi_round: dict[str, Any], tmp_path: Path
) -> None:
    done = cli("replay", write_json(tmp_path / "run.json", multi_round))
    assert done.returncode == 0, done.stderr
    assert "production policies" in done.stdout
    for policy_ in POLICIES:
        assert policy_.name in done.stdout
