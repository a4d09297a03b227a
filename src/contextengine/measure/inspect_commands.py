"""The ``inspect`` and ``sessions`` commands of the CLI (registered in ``contextengine.cli``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contextengine.agent.usage_log import read_usage
from contextengine.errors import ContextEngineError
from contextengine.measure.inspector import CallView, first_difference, inspect_session
from contextengine.measure.report import usage_report
from contextengine.prices import usd
from contextengine.session.folders import workspace_sessions
from contextengine.session.layout import SessionLayout
from contextengine.session.listing import TITLE_CHARS, read_header, user_messages
from contextengine.session.manage import custom_title
from contextengine.session.store.choice import StoreSettings
from contextengine.untrusted import terminal_safe

TABLE_WIDTH = 150
FOLD_CHARS = 1200
FOLD_HEAD = 600
FOLD_END = 400
SNIPPET_CHARS = 80


def inspect_command(
    session_dir: Annotated[Path, typer.Argument(help="A session folder (holds requests.jsonl).")],
    call: Annotated[
        int | None, typer.Option("--call", help="Show this call's request (1 = first).", min=1)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the requests a session sent: parts, cached prefix (reported / predicted), breaks."""
    calls = inspect_session(session_dir)
    if call is not None and call > len(calls):
        raise ContextEngineError(f"{session_dir}: no call {call} (it recorded {len(calls)})")
    if as_json:
        data: Any = calls[call - 1].as_dict() if call else [c.as_dict() for c in calls]
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        return
    console = Console(highlight=False, soft_wrap=True)
    if call is None:
        if not console.is_terminal:  # a file or a pipe: room for every column
            console.width = max(console.width, TABLE_WIDTH)
        console.print(_calls_table(session_dir, calls))
    else:
        _print_call(console, calls[call - 1], calls[call - 2] if call > 1 else None)


def _calls_table(session_dir: Path, calls: list[CallView]) -> Table:
    names = ("system", "tools", "l2", "history", "live", "tail", "instruction")
    table = Table(
        title=f"requests of {session_dir}\n(sizes and predicted prefix in characters, "
        "reported cached prefix in tokens)",
        title_justify="left",
    )
    headers = ("#", "purpose", "sys", "tools", "l2", "hist", "live", "tail", "instr")
    for header in (*headers, "total", "cached", "predict", "break"):
        table.add_column(header, justify="left" if header in ("purpose", "break") else "right")
    for c in calls:
        sizes = {p.name: p.end - p.start for p in c.parts}
        row = c.as_dict()
        brk = c.cache_break
        table.add_row(
            str(c.call),
            c.purpose,
            *(str(sizes[n]) if n in sizes else "-" for n in names),
            str(row["request_chars"]),
            str(row["cached_prefix_reported"] or 0),
            str(row["cached_prefix_predicted"] or 0),
            f"[yellow]{brk['cause']}[/]" if brk else "",
        )
    return table


def _print_call(console: Console, view: CallView, previous: CallView | None) -> None:
    row = view.as_dict()
    text = view.request.text()
    console.print(
        f"[bold]call {view.call}[/] ({view.purpose}): {len(text):,} chars; cached prefix "
        f"reported {_number(row['cached_prefix_reported'])} tokens "
        f"(~{_number(row['cached_prefix_reported_chars'])} chars), predicted "
        f"{_number(row['cached_prefix_predicted'])} chars"
    )
    brk = view.cache_break
    if brk:
        console.print(
            f"[yellow]cache break: {brk['cause']} at char {brk['position']}[/]\n"
            f"  old: {escape(repr(brk['old']))}\n  new: {escape(repr(brk['new']))}"
        )
    for part in view.parts:
        console.print(f"\n[cyan]── {part.name} [{part.start:,}, {part.end:,})[/]")
        console.print(_fold(terminal_safe(text[part.start : part.end])), markup=False)
    console.print()
    if previous is None:
        console.print("[dim]first call: nothing to compare with[/]")
        return
    old = previous.request.text()
    at = first_difference(old, text)
    if at is None:
        console.print(f"[dim]identical to call {previous.call}[/]")
        return
    where = next((p.name for p in view.parts if p.start <= at < p.end), "end")
    start = max(0, at - 20)
    console.print(
        f"[bold]diff vs call {previous.call}:[/] first difference at char {at:,} (in {where}); "
        f"{len(old):,} -> {len(text):,} chars"
    )
    console.print(f"  old: {old[start : start + SNIPPET_CHARS]!r}", markup=False)
    console.print(f"  new: {text[start : start + SNIPPET_CHARS]!r}", markup=False)


def _fold(text: str) -> str:
    if len(text) <= FOLD_CHARS:
        return text
    hidden = len(text) - FOLD_HEAD - FOLD_END
    return f"{text[:FOLD_HEAD]}\n  ⋯ {hidden:,} chars folded ⋯\n{text[-FOLD_END:]}"


def _number(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "-"


def list_sessions(
    workspace: Path, settings: StoreSettings, search: str | None, as_json: bool
) -> None:
    """``contextengine sessions``: list a workspace's sessions (kept where ``settings``
    say), newest first; ``search`` keeps those whose id, title or messages hold it."""
    folder = workspace.resolve()
    if not folder.is_dir():
        raise ContextEngineError(f"{workspace}: not a folder")
    found = [_summary(directory) for directory in workspace_sessions(folder, settings).values()]
    needle = search.casefold() if search else None
    shown = sorted(
        (s for s in found if needle is None or _matches(s, needle)),
        key=lambda s: (s["created"], s["id"]),
        reverse=True,
    )
    for s in shown:
        s.pop("messages")
    if as_json:
        sys.stdout.write(json.dumps(shown, ensure_ascii=False) + "\n")
        return
    table = Table(title=f"sessions of {folder}", title_justify="left")
    for header in ("id", "created", "title", "turns", "calls", "cost"):
        table.add_column(
            header, justify="right" if header in ("turns", "calls", "cost") else "left"
        )
    for s in shown:
        table.add_row(
            s["id"],
            s["created"][:19].replace("T", " "),
            escape(terminal_safe(s["title"])),
            str(s["turns"]),
            str(s["calls"]),
            usd(s["cost_usd"]),
        )
    Console(highlight=False, soft_wrap=True).print(table)
    if not shown:
        Console(stderr=True).print("no sessions" + (f" matching {search!r}" if search else ""))


def _summary(directory: Path) -> dict[str, Any]:
    layout = SessionLayout(directory)
    messages = user_messages(layout.log)
    records = list(read_usage(layout.usage_log)) if layout.usage_log.is_file() else []
    first = messages[0].strip().splitlines()[0] if messages and messages[0].strip() else ""
    report = usage_report(directory, records)
    return {
        "id": directory.name,
        "directory": str(directory),
        "created": str(read_header(layout.log).get("created", "")),
        "title": custom_title(directory) or first[:TITLE_CHARS],
        "turns": len(messages),
        "calls": len(records),
        "cost_usd": None if report.unpriced_models else report.cost_usd,
        "messages": messages,
    }


def _matches(summary: dict[str, Any], needle: str) -> bool:
    texts = [summary["id"], summary["title"], *summary["messages"]]
    return any(needle in text.casefold() for text in texts)
