"""The ``replay`` and ``report`` commands of the CLI (registered in ``contextengine.cli``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from contextengine.prices import DEFAULT_FAMILY, FAMILY_MODELS, RECORDED, UNKNOWN_PRICE

if TYPE_CHECKING:  # the commands import the replay machinery only when they run
    from contextengine.measure.replay import BreakRow, ReplayResult, SideCallRow, StrategyResult
    from contextengine.measure.report import UsageReport
    from contextengine.untrusted import JSONObject

_PRICE_CHOICES = f"a family ({', '.join(FAMILY_MODELS)}) or any model name genai-prices knows"
REPORT_PRICES_HELP = f"Prices: {_PRICE_CHOICES} (default: by model, {DEFAULT_FAMILY})."
REPLAY_PRICES_HELP = (
    f"Prices: {_PRICE_CHOICES}, or {RECORDED} (the default): the recorded run's own model, "
    f"{DEFAULT_FAMILY} where genai-prices does not know it."
)


TrajectoryArgument = Annotated[
    Path,
    typer.Argument(
        help="A recorded run (bench TRAJECTORY_FORMAT), a Claude Code session transcript "
        "(~/.claude/projects/PROJECT/SESSION.jsonl), a Codex rollout "
        "(~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) or a Gemini CLI chat recording "
        "(~/.gemini/tmp/PROJECT_HASH/chats/session-*.json)."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
DumpOption = Annotated[
    Path | None,
    typer.Option(help="Write request-%04d.json per step and side-%04d.json per side call."),
]
FlagsOption = Annotated[
    str, typer.Option(help="Settings as name=value, comma-separated: diversity=off,...")
]
HistoryModeOption = Annotated[
    str | None, typer.Option(help="compressed, full or round_scratchpad.")
]
ContextWindowOption = Annotated[
    int | None, typer.Option(help="Context window in tokens (compaction trigger).")
]
ReplayPricesOption = Annotated[str, typer.Option(help=REPLAY_PRICES_HELP)]
ConfigFileOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Config file (TOML or YAML).", dir_okay=False),
]


def replay_command(
    trajectory: TrajectoryArgument,
    as_json: JsonOption = False,
    dump: DumpOption = None,
    flags: FlagsOption = "",
    history_mode: HistoryModeOption = None,
    context_window: ContextWindowOption = None,
    prices: ReplayPricesOption = RECORDED,
    config: ConfigFileOption = None,
) -> None:
    """Replay a recorded run through the engine and compare it with the baselines."""
    from contextengine.agent.parts import AgentRecipe
    from contextengine.measure.replay import replay
    from contextengine.measure.trajectory import load_trajectory
    from contextengine.prices import prices_fell_back, prices_for, replay_prices

    recording = load_trajectory(trajectory)
    priced_as = replay_prices(prices, recording.model)
    prices_for(priced_as)  # one line, before any work
    recipe = AgentRecipe.load(
        config, flags, history_mode=history_mode, context_window=context_window
    )
    if prices_fell_back(prices, recording.model):  # said once the inputs are known good
        sys.stderr.write(
            f"contextengine: no known price for model {recording.model!r}: "
            f"priced as {priced_as} (choose with --prices)\n"
        )
    if as_json:
        result = replay(recording, recipe, name=str(trajectory), prices=prices, dump=dump)
        sys.stdout.write(json.dumps(result.as_dict(), ensure_ascii=False) + "\n")
        return
    replay_at = partial(replay, recording, recipe, name=str(trajectory), prices=prices, dump=dump)
    result = _with_progress(replay_at, len(recording.steps))
    out = Console(highlight=False, soft_wrap=True)
    out.print(_replay_table(result))
    out.print(_policies_table(result))
    if result.recorded is not None:
        out.print(_recorded_line(result.recorded, result.baselines["full_history"]))


def _with_progress(replay_at: Callable[..., ReplayResult], steps: int) -> ReplayResult:
    """``replay_at(on_step=...)`` with a progress bar per replayed run on stderr."""
    console = Console(stderr=True, highlight=False)
    with Progress(
        TextColumn("{task.description:<13}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    ) as progress:
        bars = {name: progress.add_task(name, total=steps) for name in ("engine", "full_history")}
        return replay_at(on_step=lambda name, step: progress.update(bars[name], completed=step + 1))


_ROWS = (
    ("steps", "{:,}"),
    ("cost_usd", "${:.4f}"),
    ("input_cost_usd", "${:.4f}"),
    ("floor_usd", "${:.4f}"),
    ("input_tokens", "{:,}"),
    ("cached_tokens", "{:,}"),
    ("cache_write_tokens", "{:,}"),
    ("uncached_tokens", "{:,}"),
    ("output_tokens", "{:,}"),
    ("content_tokens", "{:,}"),
    ("prefix_reuse", "{:.1%}"),
    ("ideal_prefix_reuse", "{:.1%}"),
    ("reference_recall", "{:.3f}"),
)


# the baselines beside the engine in the main table; the policies get a table of their own
_COLUMNS = ("full_history", "sliding_window")


def _replay_table(result: ReplayResult) -> Table:
    full = result.baselines["full_history"].rounded()
    columns = {
        "engine": result.engine.rounded(),
        **{n: result.baselines[n].rounded() for n in _COLUMNS},
    }
    table = Table(
        title=f"replay {result.trajectory} ({result.recipe.history_mode} history, "
        f"{result.prices} prices)",
        title_justify="left",
    )
    table.add_column("")
    for name in columns:
        table.add_column(name, justify="right")
    for key, fmt in _ROWS:
        table.add_row(key, *(_cell(fmt, getattr(col, key)) for col in columns.values()))
    for key, label in (("cost_usd", "cost"), ("input_cost_usd", "input cost")):
        base = getattr(full, key)
        table.add_row(
            f"{label} vs full_history",
            *(f"{getattr(col, key) / base:.3f}x" if base else "-" for col in columns.values()),
        )
    table.add_row("cache breaks", *(_breaks(col.cache_breaks) for col in columns.values()))
    table.add_row("side calls", *(_sides(col.side_calls) for col in columns.values()))
    return table


def _policies_table(result: ReplayResult) -> Table:
    """The production policies (docs/baselines.md), one row each, against full history."""
    full = result.baselines["full_history"].rounded()
    table = Table(title="production policies on the same recording", title_justify="left")
    table.add_column("policy", no_wrap=True)
    for header in ("input cost", "vs full", "recall", "breaks", "side calls"):
        table.add_column(header, justify="right", no_wrap=True)
    for name, baseline in result.baselines.items():
        if name in _COLUMNS:
            continue
        col = baseline.rounded()
        ratio = col.input_cost_usd / full.input_cost_usd if full.input_cost_usd else 0
        table.add_row(
            name,
            f"${col.input_cost_usd:.4f}",
            f"{ratio:.3f}x",
            _cell("{:.3f}", col.reference_recall),
            str(len(col.cache_breaks)),
            str(len(col.side_calls)),
        )
    return table


def _recorded_line(recorded: JSONObject, full: StrategyResult) -> str:
    """What the agent's own log says it was billed for, beside full history as replayed."""
    tokens = recorded["input_tokens"]
    cached = recorded["cached_tokens"]
    share = cached / tokens if isinstance(tokens, int) and tokens and isinstance(cached, int) else 0
    return (
        f"as the session log records it: {recorded['requests']:,} model calls, "
        f"{tokens:,} input tokens ({share:.1%} cached), input cost "
        f"${recorded['input_cost_usd']:.4f}; full_history as replayed: "
        f"{full.input_tokens:,} input tokens, ${full.input_cost_usd:.4f} (the log's figures "
        "include the system prompt and tool schemas, which it does not record)"
    )


def _cell(fmt: str, value: Any) -> str:
    return "-" if value is None else fmt.format(value)


def _breaks(breaks: Sequence[BreakRow]) -> str:
    if not breaks:
        return "0"
    causes: dict[str, int] = {}
    for brk in breaks:
        causes[brk["cause"]] = causes.get(brk["cause"], 0) + 1
    return ", ".join(f"{n} {cause}" for cause, n in causes.items())


def _sides(sides: Sequence[SideCallRow]) -> str:
    if not sides:
        return "0"
    return ", ".join(f"{s['purpose']} {s['cached_share']:.0%} cached" for s in sides)


def report_command(
    session_dir: Annotated[Path, typer.Argument(help="A session folder (holds usage.jsonl).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    plot: Annotated[
        Path | None, typer.Option(help="Write a PNG of per-call input tokens (cached/uncached).")
    ] = None,
    prices: Annotated[str | None, typer.Option(help=REPORT_PRICES_HELP)] = None,
) -> None:
    """Report tokens, cache hits, cost, savings and cache breaks of a session."""
    from contextengine.measure.report import load_usage, plot_usage, usage_report
    from contextengine.prices import prices_for

    if prices is not None:
        prices_for(prices)
    records = load_usage(session_dir)
    report = usage_report(session_dir, records, prices)
    if plot is not None:
        plot_usage(records, plot, title=f"{session_dir.name}: input tokens per call")
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), ensure_ascii=False) + "\n")
        return
    console = Console(highlight=False, soft_wrap=True)
    console.print(_usage_table(session_dir, report))
    for line in _report_lines(report):
        console.print(line, markup=False)
    if plot is not None:
        console.print(f"plot: {plot}", markup=False)


def _usage_table(session_dir: Path, report: UsageReport) -> Table:
    """The report's totals as a two-column table."""
    table = Table(title=f"usage of {session_dir}", title_justify="left", show_header=False)
    table.add_column("")
    table.add_column("", justify="right")
    purposes = ", ".join(f"{n} {p}" for p, n in report.calls_by_purpose.items())
    table.add_row("model calls", f"{report.calls} ({purposes or 'none'})")
    table.add_row("models", ", ".join(report.models) or "-")
    for key in ("input_tokens", "cached_tokens", "cache_write_tokens", "uncached_tokens"):
        table.add_row(key.replace("_", " "), f"{getattr(report, key):,}")
    table.add_row("output tokens", f"{report.output_tokens:,}")
    table.add_row("cache hit rate", f"{report.hit_rate:.1%}")
    if report.unpriced_models and set(report.models) == set(report.unpriced_models):
        table.add_row("cost", f"{UNKNOWN_PRICE} ({', '.join(report.unpriced_models)})")
    else:
        unpriced = (
            f" + {UNKNOWN_PRICE} for {', '.join(report.unpriced_models)}"
            if report.unpriced_models
            else ""
        )
        table.add_row(f"cost ({report.prices or '-'})", f"${report.cost_usd:.4f}{unpriced}")
        table.add_row("cost without a cache", f"${report.cost_without_cache_usd:.4f}")
        table.add_row("savings", f"${report.savings_usd:.4f} ({report.savings_share:.1%})")
    table.add_row("cache breaks", str(len(report.cache_breaks)))
    if report.cache_diagnosed_calls:
        table.add_row(
            "provider/monitor disagreements",
            f"{len(report.cache_disagreements)} of {report.cache_diagnosed_calls} diagnosed calls",
        )
    table.add_row("sub-agents", str(len(report.sub_agents)))
    return table


def _report_lines(report: UsageReport) -> list[str]:
    """One line per cache break, provider/monitor disagreement and sub-agent."""
    found: list[str] = []
    for brk in report.cache_breaks:
        found.append(
            f"  call {brk['call']} ({brk['purpose']}): {brk.get('cause')} at char "
            f"{brk.get('position')}",
        )
    for odd in report.cache_disagreements:
        found.append(
            f"  call {odd['call']}: provider says {odd['reason']} "
            f"({odd['missed_input_tokens']:,} input tokens missed), monitor says {odd['monitor']}",
        )
    for child in report.sub_agents:
        found.append(
            f"  sub-agent {child['session']} ({child['status']}): {child['calls']} calls, "
            f"${child['cost_usd']:.4f} - report {child['folder']}",
        )
    return found
