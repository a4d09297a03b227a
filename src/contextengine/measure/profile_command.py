"""The ``profile`` command of the CLI (registered in ``contextengine.cli``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from contextengine.prices import UNKNOWN_PRICE, usd

if TYPE_CHECKING:  # the command imports the profiler only when it runs
    from contextengine.measure.profile import ProfileSummary, RequestFigures

SNIPPET_LINE = 70


def profile_command(
    capture: Annotated[
        Path,
        typer.Argument(help='JSONL: one request body a line, or {"request": BODY, "usage": ...}.'),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML report here.")
    ] = None,
) -> None:
    """Profile any agent's captured requests: reusable prefix per request, causes of cache breaks."""
    from contextengine.measure.capture import load_capture
    from contextengine.measure.profile import profile_requests

    profiler = profile_requests(load_capture(capture))
    requests = [r.as_dict() for r in profiler.requests]
    summary = profiler.summary()
    if html is not None:
        from contextengine.measure.profile_html import profile_html

        html.write_text(profile_html(requests, summary, capture.name), encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps({"requests": requests, "summary": summary}) + "\n")
        return
    console = Console(highlight=False, soft_wrap=True)
    console.print(_table(requests, capture))
    console.print(_summary_line(summary), markup=False)
    for request in requests:
        brk = request["break"]
        if brk:
            console.print(
                f"\nrequest {request['index']}: {brk['description']}\n"
                f"{_clip_lines(brk['snippet'])}\n"
                f"  cost: {brk['lost_tokens']:,} tokens re-read, {usd(brk['cost_usd'])}\n"
                f"  fix: {brk['fix']}",
                markup=False,
            )
    if html is not None:
        console.print(f"\nreport: {html}", markup=False)


def _table(requests: list[RequestFigures], capture: Path) -> Table:
    table = Table(title=f"cache profile of {capture}", title_justify="left")
    for name in ("#", "conv", "tokens", "reusable", "share", "break"):
        table.add_column(name, justify="left" if name == "break" else "right")
    for r in requests:
        share = r["reusable_tokens"] / r["total_tokens"] if r["total_tokens"] else 0.0
        brk = r["break"]
        where = (
            "" if not brk or brk["message_index"] is None else f" at message {brk['message_index']}"
        )
        table.add_row(
            str(r["index"]),
            str(r["conversation"]),
            f"{r['total_tokens']:,}",
            f"{r['reusable_tokens']:,}",
            f"{share:.0%}",
            f"[yellow]{brk['cause']}{where}[/]" if brk else "",
        )
    return table


def _summary_line(summary: ProfileSummary) -> str:
    line = (
        f"{summary['requests']} requests in {summary['conversations']} conversation(s): "
        f"{summary['hit_rate']:.1%} of tokens in a reusable prefix, {summary['breaks']} breaks "
        f"({summary['lost_tokens']:,} tokens re-read, ${summary['break_cost_usd']:.4f})"
    )
    if summary["measured_hit_rate"] is not None:
        line += (
            f"; measured: {summary['measured_hit_rate']:.1%} cached, "
            f"${summary['measured_cost_usd']:.4f}"
        )
    if summary["unpriced_models"]:
        line += f"; {UNKNOWN_PRICE} for {', '.join(summary['unpriced_models'])}"
    return line + "."


def _clip_lines(snippet: str) -> str:
    return "\n".join(
        "  " + (line if len(line) <= SNIPPET_LINE else line[: SNIPPET_LINE - 1] + "…")
        for line in snippet.splitlines()
    )
