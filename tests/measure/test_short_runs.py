"""Short, error-heavy runs cost no more than a plain chat (#38): 12-19 steps of tiny
outputs and the same failing command, recorded without a system prompt or tools to cache.
Whole and cut to their first tenth and fifth (at least 3 steps), the engine's input cost
stays within 1.02x ``full_history`` with an overhead allowance (``overhead_share=0.01``;
unset by default): the tail and a 3-strike reboot wait until the run has cost enough to
carry them. At a small window the engine compacts; its replayed summary is simulated as
every policy's."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextengine import Config
from contextengine.agent.parts import AgentRecipe
from contextengine.compress.compaction import SUMMARY_HEADING, summary_tokens
from contextengine.measure.recall import request_text
from contextengine.measure.replay import Replayer, replay_engine
from contextengine.measure.tokens import TokenCounter
from contextengine.measure.trajectory import Trajectory, load_trajectory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "short_runs"
RUNS = sorted(FIXTURES.glob("*.json"))
LIMIT = 1.02
COUNTER = TokenCounter()


def cut(trajectory: Trajectory, fraction: float) -> Trajectory:
    """The run's first ``fraction`` of steps, at least 3 (as ``benchmarks/replay_cut.py``)."""
    keep = max(3, int(len(trajectory.steps) * fraction))
    return trajectory.model_copy(update={"steps": trajectory.steps[:keep]})


def ratio(trajectory: Trajectory, config: Config) -> float:
    replayer = Replayer(trajectory, counter=COUNTER)
    full = replayer.baselines()["full_history"]
    return replayer.engine(AgentRecipe(config)).input_cost_usd / full.input_cost_usd


def test_the_fixtures_are_short_error_heavy_runs_without_a_prompt_to_cache() -> None:
    assert len(RUNS) >= 3
    for path in RUNS:
        run = load_trajectory(path)
        errors = sum(step.is_error for step in run.steps)
        assert 12 <= len(run.steps) <= 19 and not run.system and not run.tools, path.name
        assert errors >= len(run.steps) // 2, path.name


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.stem)
@pytest.mark.parametrize("fraction", [1.0, 0.2, 0.1])
def test_a_short_error_heavy_run_costs_at_most_1_02x_full_history(
    path: Path, fraction: float
) -> None:
    assert ratio(cut(load_trajectory(path), fraction), Config(overhead_share=0.01)) <= LIMIT


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.stem)
def test_without_the_allowance_the_same_run_pays_its_reboots_and_tail(path: Path) -> None:
    # the fixtures are adversarial: with the overheads paid at once, each is far dearer
    assert ratio(load_trajectory(path), Config(overhead_share=None)) > 1.1


def test_the_engines_replayed_summary_is_the_archived_spans_identifiers_within_its_budget() -> None:
    sample = Path(__file__).resolve().parents[2] / "examples" / "trajectories"
    run = load_trajectory(sample / "msa1_gemini3pro_sympy__sympy-19637.json")
    config = Config(context_window=5000)
    calls = replay_engine(run, AgentRecipe(config), COUNTER)
    summaries = [c for c in calls if c.cost.purpose == "summary"]
    assert summaries
    for call in summaries:
        text = call.reply.content
        names = text.split("\n", 1)[1].split()
        archived = request_text(call.request.messages[1:-1], [])
        assert text.startswith(SUMMARY_HEADING) and names
        assert all(name in archived for name in names)
        assert COUNTER.count(text) <= summary_tokens(config.context_window)
