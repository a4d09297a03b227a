"""Replay every public trajectory cut short: runs that end earlier than the recorded ones.

The engine's choices (when to prune, what to externalize, when the 3-strike rule stops the
work) see only the steps so far, never how many follow. The recorded runs all end where
their agent stopped; a run of the same kind can stop at any step. So each file is replayed
again with only its first fraction of steps (at least 3), under the default config, and
compared with ``full_history`` over the same steps. Rows: the fraction; the input cost over
all files relative to ``full_history``; mean and lowest reference recall; prunes paid back
within the (cut) run; the runs above 1.02x and what each costs.

    python benchmarks/replay_cut.py [--fractions 0.1 0.2 0.3 0.5 0.7 0.85 1] [--trajectories DIR]
                                    [--prices FAMILY|MODEL|recorded]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from replay_all import DEFAULT_DIR, check_prices, load_all, paid_back

from contextengine.agent.parts import AgentRecipe
from contextengine.measure.replay import Replayer, StrategyResult
from contextengine.measure.tokens import TokenCounter
from contextengine.measure.trajectory import Trajectory
from contextengine.prices import RECORDED

MIN_STEPS = 3
LIMIT = 1.02


def cut(trajectory: Trajectory, fraction: float) -> Trajectory:
    """The run's first ``fraction`` of steps (at least ``MIN_STEPS``)."""
    keep = max(MIN_STEPS, int(len(trajectory.steps) * fraction))
    return trajectory.model_copy(update={"steps": trajectory.steps[:keep]})


def row(fraction: float, runs: list[tuple[str, StrategyResult, StrategyResult]]) -> str:
    """One markdown row: the totals over ``runs`` (name, engine, full history)."""
    engine = sum(e.input_cost_usd for _, e, _ in runs)
    full = sum(f.input_cost_usd for _, _, f in runs)
    recalls = [e.reference_recall for _, e, _ in runs if e.reference_recall is not None]
    paid = [(paid_back(e.prunes), len(e.prunes)) for _, e, _ in runs]
    over = [
        f"`{name}` {e.input_cost_usd / f.input_cost_usd:.3f}x"
        for name, e, f in runs
        if e.input_cost_usd > LIMIT * f.input_cost_usd
    ]
    return (
        f"| {fraction:g} | {engine / full:.3f}x | {sum(recalls) / len(recalls):.3f} | "
        f"{min(recalls):.3f} | {sum(p for p, _ in paid)} of {sum(n for _, n in paid)} | "
        f"{len(over)} | {', '.join(over) or '-'} |"
    )


def main() -> None:
    """Replay each file at each fraction, then print the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=Path, default=DEFAULT_DIR)
    parser.add_argument(
        "--fractions", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0]
    )
    parser.add_argument("--prices", default=RECORDED, help=f"a family, a model, or {RECORDED}")
    args = parser.parse_args()
    check_prices(args.prices)
    if any(not 0 < f <= 1 for f in args.fractions):
        sys.exit("error: --fractions must be in (0, 1]")
    counter = TokenCounter()
    trajectories = [(path.stem, run) for path, run in load_all(args.trajectories)]
    print(
        "| fraction of steps | input vs full_history | mean recall | lowest recall "
        f"| prunes paid back | runs above {LIMIT}x | those runs |"
    )
    print("|---|---|---|---|---|---|---|")
    for fraction in args.fractions:
        runs = []
        for k, (name, trajectory) in enumerate(trajectories, 1):
            print(f"[{fraction:g}] {k}/{len(trajectories)} {name}", file=sys.stderr, flush=True)
            replayer = Replayer(cut(trajectory, fraction), prices=args.prices, counter=counter)
            full = replayer.baselines()["full_history"]
            runs.append((name, replayer.engine(AgentRecipe()), full))
        print(row(fraction, runs), flush=True)


if __name__ == "__main__":
    main()
