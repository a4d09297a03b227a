"""Replay every public trajectory under the engine's defaults and each ablation (R11.2).

Rows: the default config; each component off in turn; every component off (which is the
``full_history`` baseline, so it reads 1.00x); each history mode; the defaults with a small
context window (compaction at work); and the baselines: ``full_history``,
``sliding_window`` and each production policy (``docs/baselines.md``). Columns: in total over the files,
cost relative to ``full_history`` (sum of costs / sum of ``full_history`` costs), cost
relative to the floor (every content token paid once, uncached), mean reference recall (over
files), cache breaks outside compaction / caused by compaction, the least-cached compaction
summary request; then per file, cost relative to ``full_history`` / reference recall, for
the default config and the sliding window, and for every production policy.
Costs are input costs (cache reads + writes + uncached): the output tokens are the
recorded model's and the same under every strategy; the all-in ratio is shown beside.

Targets (issue 9): total input cost <= 0.5x ``full_history``, no run above 1.02x, mean
recall >= 0.95 and none below 0.90, no breaks outside compaction and pruning, every
pruning paid back within its run.

    python benchmarks/replay_all.py [--history-mode full] [--window 60000] [--trajectories DIR]
                                    [--prices FAMILY|MODEL|recorded]

``DIR`` may hold agents' own session logs too (``~/.claude/projects``, ``~/.codex/sessions``,
``~/.gemini/tmp``: each ``*.jsonl`` and ``*.json`` under it); a file that is not a recorded run
is named on stderr and left out.

Each file is priced at its recorded model's prices (``--prices recorded``, the default: the
issue's "model's prices"; claude-sonnet where genai-prices does not know the model), or
with ``--prices`` at one family's or model's for every file.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextengine.agent.parts import AgentRecipe
from contextengine.config import COMPONENT_FLAGS, Config
from contextengine.errors import ContextEngineError, TrajectoryError
from contextengine.measure.policies import POLICIES
from contextengine.measure.replay import Replayer, StrategyResult
from contextengine.measure.tokens import TokenCounter
from contextengine.measure.trajectory import Trajectory, load_trajectory
from contextengine.prices import RECORDED, prices_for

# The samples shipped with the repo; the 37 public runs the docs measure: --trajectories DIR.
DEFAULT_DIR = Path(__file__).resolve().parents[1] / "examples" / "trajectories"


def check_prices(choice: str) -> None:
    """Exit with one line when ``--prices`` names nothing priced."""
    if choice != RECORDED:
        try:
            prices_for(choice)
        except ContextEngineError as exc:
            sys.exit(f"error: {exc}")


def paid_back(prunes: Iterable[Mapping[str, Any]]) -> int:
    """How many of ``prunes`` (a result's ``prunes``) paid back their rewrite within the run."""
    return sum(1 for p in prunes if p["payback_steps"] <= p["remaining_steps"])


@dataclass
class Row:
    """One configuration's results over every file."""

    label: str
    results: list[StrategyResult] = field(default_factory=list)


def configs(window: int, history_mode: str | None) -> list[tuple[str, Config | None]]:
    """The configurations to replay (``None`` marks a baseline); ``history_mode`` replaces
    the default history mode under every engine row."""
    default = Config() if history_mode is None else Config(history_mode=history_mode)
    rows: list[tuple[str, Config | None]] = [(f"engine ({default.history_mode} history)", default)]
    rows += [(f"{flag} off", default.with_flags(**{flag: False})) for flag in COMPONENT_FLAGS]
    rows.append(("all off (enabled=false)", default.with_flags(enabled=False)))
    rows += [
        (f"history_mode={mode}", default.with_flags(history_mode=mode))
        for mode in ("compressed", "full", "round_scratchpad")
        if mode != default.history_mode
    ]
    rows.append((f"engine, window {window:,}", default.with_flags(context_window=window)))
    rows.append(("baseline full_history", None))
    rows.append(("baseline sliding_window", None))
    rows += [(f"baseline {policy.name}", None) for policy in POLICIES]
    return rows


def main() -> None:
    """Replay, then print the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--window", type=int, default=60_000, help="small-window row (tokens)")
    parser.add_argument("--prices", default=RECORDED, help=f"a family, a model, or {RECORDED}")
    parser.add_argument(
        "--history-mode",
        choices=("compressed", "full", "round_scratchpad"),
        help="base history mode for every engine row (default: the config's default)",
    )
    args = parser.parse_args()
    check_prices(args.prices)
    runs = load_all(args.trajectories)
    files = [path for path, _ in runs]
    counter = TokenCounter()
    plan = configs(args.window, args.history_mode)
    rows = [Row(label) for label, _ in plan]
    started = time.perf_counter()
    for path, trajectory in runs:
        replayer = Replayer(trajectory, prices=args.prices, counter=counter)
        baselines = replayer.baselines()
        for row, (label, config) in zip(rows, plan, strict=True):
            if config is None:
                row.results.append(baselines[label.removeprefix("baseline ")])
            else:
                row.results.append(replayer.engine(AgentRecipe(config)))
        print(f"replayed {path.name} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    full = next(r for r in rows if r.label == "baseline full_history").results
    print(table(files, rows, full))


def load_all(directory: Path) -> list[tuple[Path, Trajectory]]:
    """Every recorded run under ``directory``: trajectories (``*.json``) and agents' own
    session logs (``*.jsonl``, a Gemini CLI recording's ``*.json``); a file that is neither
    is named on stderr with why, and left out."""
    runs: list[tuple[Path, Trajectory]] = []
    for path in sorted([*directory.rglob("*.json"), *directory.rglob("*.jsonl")]):
        try:
            runs.append((path, load_trajectory(path)))
        except TrajectoryError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
    if not runs:
        sys.exit(f"error: no trajectories in {directory}")
    return runs


def table(files: list[Path], rows: list[Row], full: list[StrategyResult]) -> str:
    """Two markdown tables: every configuration in total, then the default config per file."""
    header = [
        "config",
        "input cost / full",
        "all-in cost / full",
        "cost / floor",
        "recall (mean / min)",
        "runs > 1.02x",
        "worst run",
        "breaks (other / compaction / prune)",
        "prunes paid back",
        "summary cached (min)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    full_total = sum(r.cost_usd for r in full)
    full_input = sum(r.input_cost_usd for r in full)
    for row in rows:
        cost = sum(r.cost_usd for r in row.results)
        input_cost = sum(r.input_cost_usd for r in row.results)
        floor = sum(r.floor_usd for r in row.results)
        recalls = [r.reference_recall for r in row.results if r.reference_recall is not None]
        ratios = [
            r.input_cost_usd / f.input_cost_usd for r, f in zip(row.results, full, strict=True)
        ]
        breaks = [b["cause"] for r in row.results for b in r.cache_breaks]
        rewrites = {cause: breaks.count(cause) for cause in ("compaction", "prune")}
        prunes = [p for r in row.results for p in r.prunes]
        paid = paid_back(prunes)
        summaries = [
            s["cached_share"]
            for r in row.results
            for s in r.side_calls
            if s["purpose"] == "summary"
        ]
        cells = [
            row.label,
            f"{input_cost / full_input:.3f}x",
            f"{cost / full_total:.3f}x",
            f"{cost / floor:.2f}x",
            f"{sum(recalls) / len(recalls):.3f} / {min(recalls):.2f}" if recalls else "-",
            str(sum(1 for x in ratios if x > 1.02)),
            f"{max(ratios):.2f}x",
            f"{len(breaks) - sum(rewrites.values())} / {rewrites['compaction']} / "
            f"{rewrites['prune']}",
            f"{paid} / {len(prunes)}",
            f"{min(summaries):.0%} ({len(summaries)})" if summaries else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", per_file(files, rows, full), "", per_file_policies(files, rows, full)]
    return "\n".join(lines)


def per_file(files: list[Path], rows: list[Row], full: list[StrategyResult]) -> str:
    """The default config and the sliding window, file by file, against full history."""
    engine, window = rows[0].results, next(r for r in rows if "sliding" in r.label).results
    lines = [
        "| file | steps | full history (input) | engine input cost / full | recall | prunes "
        "| sliding input cost / full | recall |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path, e, w, f in zip(files, engine, window, full, strict=True):
        lines.append(
            f"| {path.stem} | {e.steps} | ${f.input_cost_usd:.3f} "
            f"| {e.input_cost_usd / f.input_cost_usd:.3f}x | {_recall(e)} | {len(e.prunes)} "
            f"| {w.input_cost_usd / f.input_cost_usd:.3f}x | {_recall(w)} |"
        )
    return "\n".join(lines)


def per_file_policies(files: list[Path], rows: list[Row], full: list[StrategyResult]) -> str:
    """Each production policy, file by file: input cost / full history and recall."""
    names = [policy.name for policy in POLICIES]
    found = {row.label.removeprefix("baseline "): row.results for row in rows}
    lines = [
        "| file | " + " | ".join(f"{name} (input / full, recall)" for name in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for k, (path, f) in enumerate(zip(files, full, strict=True)):
        cells = [
            f"{r.input_cost_usd / f.input_cost_usd:.3f}x, {_recall(r)}"
            for r in (found[name][k] for name in names)
        ]
        lines.append(f"| {path.stem} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _recall(result: StrategyResult) -> str:
    return "-" if result.reference_recall is None else f"{result.reference_recall:.2f}"


if __name__ == "__main__":
    main()
