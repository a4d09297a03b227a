"""How the command line shows a run: agent events rendered for a terminal, or as JSON lines.

Everything a model or a tool produced (text, file names, command output) passes
``terminal_safe`` before it is printed, so it cannot move the cursor, clear the screen or
retitle the terminal.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from contextengine.agent.context_view import ContextPart
from contextengine.agent.events import (
    AgentEvent,
    CompactionEvent,
    Done,
    ErrorEvent,
    HumanQuestion,
    MemoryUpdate,
    ModelCallEvent,
    PruneEvent,
    Thinking,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from contextengine.context.tokens import shared_counter
from contextengine.prices import Prices
from contextengine.text import clip
from contextengine.untrusted import terminal_safe

RESULT_LINES = 3
STREAM_LINES = 12
"""The most lines of a streaming reply the live view shows (its end); all print after."""
_TAG = re.compile(r"^</?[A-Za-z_][\w-]*>$")
_BUSY_STAGES = frozenset({"started", "summarizing"})


class EventPrinter:
    """Renders agent events for a terminal.

    A step's text streams into a live view under which a status line names what runs
    (the model call with its elapsed time and tokens so far, a tool, a compaction). When
    the step shows what its text was, the text prints for good: thinking before tool calls
    (dim), or the final answer (once, as markdown). Memory updates are gathered into one
    line per step, naming only files whose content changed. ``prices`` adds each call's
    cost to its usage line; ``cost_usd`` and ``calls`` add them up.
    """

    def __init__(self, console: Console, prices: Prices | None = None) -> None:
        self.console = console
        self.prices = prices
        self.cost_usd = 0.0
        self.calls = 0
        self._reasoning: list[str] = []
        self._text: list[str] = []
        self._memory: dict[str, str] = {}
        self._changed: list[str] = []
        self._live: Live | None = None
        self._activity: str | None = None
        self._since = time.monotonic()
        self._call_in = 0
        self._call_out = 0

    def __call__(self, event: AgentEvent) -> None:
        """Print one event."""
        if isinstance(event, Thinking):
            (self._reasoning if event.reasoning else self._text).append(event.text)
            # deltas rarely repeat: counted without filling the shared counter's cache
            self._call_out += shared_counter().count_uncached(event.text)
            self._show_live(refresh=False)  # the live view redraws itself 8 times a second
            return
        self._flush_reasoning()
        if isinstance(event, MemoryUpdate):
            if self._memory.get(event.file) != event.content:
                self._memory[event.file] = event.content
                if event.file not in self._changed:
                    self._changed.append(event.file)
            return
        self._flush_memory()
        if isinstance(event, ModelCallEvent):
            self._flush_text()
            self._call_in, self._call_out = event.input_tokens, 0
            self._busy(f"{event.purpose} call")
        elif isinstance(event, UsageEvent):
            self._usage(event)
        elif isinstance(event, Done):
            self.stop()
            self._done(event)
        else:
            self._flush_text()
            self._step_event(event)

    def stop(self) -> None:
        """Take the live view down (before the terminal asks the user something)."""
        self._activity = None
        if self._live is not None:
            self._live.stop()
            self._live = None

    def interrupted(self, session_dir: object) -> None:
        """The user stopped the turn: print what streamed so far and how to go on."""
        self.stop()
        self._flush_reasoning()
        self._flush_text()
        resume = shlex.quote(terminal_safe(str(session_dir)))
        self.console.print(
            f"\n[yellow]Stopped.[/] Continue with: {escape(f'contextengine run --resume {resume}')}"
        )

    def _step_event(self, event: AgentEvent) -> None:
        c = self.console
        if isinstance(event, ToolCallEvent):
            c.print(f"[cyan]→ {_safe(event.name)}[/] {_safe(clip(event.arguments, 160))}")
            self._busy(f"running {terminal_safe(event.name)}")
        elif isinstance(event, ToolResultEvent):
            took = time.monotonic() - self._since
            self._idle()
            style = "green" if event.status == "success" else "red"
            lines = _first_lines(event.preview)
            first = _safe(lines[0]) if lines else ""
            c.print(f"  [{style}]{_safe(event.status)}[/] {first} [dim]({took:.1f}s)[/]")
            for line in lines[1:]:
                c.print(f"    [dim]{_safe(line)}[/]")
        elif isinstance(event, ErrorEvent):
            c.print(
                f"  [red]error ({_safe(event.error_class)}):[/] {_safe(clip(event.message, 300))}"
            )
        elif isinstance(event, CompactionEvent):
            c.print(f"  [yellow]compaction {_safe(event.stage)}:[/] {_safe(event.message)}")
            if event.stage in _BUSY_STAGES:
                self._busy("compacting")
            else:
                self._idle()
        elif isinstance(event, HumanQuestion):
            self.stop()
            c.print(f"\n[bold yellow]The agent asks you:[/] {_safe(event.question)}")
        elif isinstance(event, PruneEvent):
            c.print(
                f"  [yellow]pruned {event.results} old entries:[/] {event.saved_tokens:,} "
                f"tokens fewer per call, pays back in {event.payback_steps:g} calls"
            )

    def _usage(self, event: UsageEvent) -> None:
        self._idle()
        self.calls += 1
        hit = event.cached_tokens / event.input_tokens if event.input_tokens else 0.0
        cost = ""
        if self.prices is not None:
            uncached = max(0, event.input_tokens - event.cached_tokens - event.cache_write_tokens)
            usd = self.prices.cost(
                uncached, event.cached_tokens, event.cache_write_tokens, event.output_tokens
            )
            self.cost_usd += usd
            cost = f", ${usd:.4f}"
        brk = f"  [yellow]cache break: {_safe(event.cache_break)}[/]" if event.cache_break else ""
        self.console.print(
            f"  [dim]{_safe(event.purpose)}: {event.input_tokens:,} in, {event.cached_tokens:,} "
            f"cached ({hit:.0%}), {event.output_tokens:,} out, {event.latency_s:.2f}s{cost}[/]{brk}"
        )

    def _done(self, event: Done) -> None:
        r = event.result
        c = self.console
        if r.status == "completed":
            self._text.clear()  # the answer's own streamed text: shown once, below
            c.print()
            c.print(Markdown(terminal_safe(r.final_answer)))
        elif r.status == "needs_human":
            self._flush_text()
            c.print(
                "\n[yellow]The turn ended waiting for your answer.[/] Answer with: "
                + escape(_resume_command(r.session_dir, "YOUR ANSWER"))
            )
        elif r.status == "max_steps":
            self._flush_text()
            c.print(
                f"\n[yellow]The turn stopped after {r.steps} model calls (max_steps) without a "
                "final answer.[/] Go on with: "
                + escape(_resume_command(r.session_dir, "Continue."))
            )
        else:
            self._flush_text()
            c.print(f"\n[red]run ended: {_safe(r.status)}[/] {_safe(r.error or '')}")
        c.print(f"[dim]session: {_safe(str(r.session_dir))}[/]")

    def _busy(self, activity: str) -> None:
        self._activity = activity
        self._since = time.monotonic()
        self._show_live()

    def _idle(self) -> None:
        self._activity = None
        self._show_live()

    def _show_live(self, refresh: bool = True) -> None:
        """Start the live view on a terminal (a pipe gets the lines alone), or redraw it."""
        if not self.console.is_terminal:
            return
        if self._live is None:
            self._live = Live(
                get_renderable=self._view,
                console=self.console,
                refresh_per_second=8,
                transient=True,
            )
            self._live.start()
        elif refresh:
            self._live.refresh()

    def _view(self) -> RenderableType:
        """The live view: the end of the streaming text, then the status line."""
        parts: list[RenderableType] = []
        held = "".join(self._reasoning) + "".join(self._text)
        if held.strip():
            lines = terminal_safe(held.strip()).splitlines()[-STREAM_LINES:]
            parts.append(Text("\n".join(lines), style="dim"))
        if self._activity is not None:
            elapsed = time.monotonic() - self._since
            status = f"{self._activity} · {elapsed:.1f}s"
            if self._activity.endswith(" call"):
                status += f" · ~{self._call_in:,} tokens in, {self._call_out:,} out so far"
            parts.append(Spinner("dots", Text(status, style="cyan")))
        return Group(*parts)

    def _flush_reasoning(self) -> None:
        text = "".join(self._reasoning).strip()
        self._reasoning.clear()
        if text:
            self.console.print(terminal_safe(text), style="dim italic", markup=False)

    def _flush_text(self) -> None:
        text = "".join(self._text).strip()
        self._text.clear()
        if text:
            self.console.print(terminal_safe(text), style="dim", markup=False)

    def _flush_memory(self) -> None:
        if self._changed:
            names = _safe(", ".join(self._changed))
            self.console.print(f"  [magenta]memory: {names} updated[/]")
            self._changed.clear()


class JsonLinePrinter:
    """``--output-format stream-json``: one JSON object a line per event, the server's
    event shape (its ``type`` beside the fields of its payload), flushed at once."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def stop(self) -> None:
        """Nothing is live on a stream of lines."""

    def interrupted(self, session_dir: object) -> None:
        """The user stopped the turn: say how to go on, on stderr (stdout holds events)."""
        resume = shlex.quote(terminal_safe(str(session_dir)))
        sys.stderr.write(
            f"contextengine: stopped; continue with: contextengine run --resume {resume}\n"
        )

    def __call__(self, event: AgentEvent) -> None:
        """Write one event as a line."""
        # ASCII only: every control character of model or tool text is a \\u escape
        line = json.dumps({"type": event.type, **event.payload()}, default=str)
        self.stream.write(line + "\n")
        self.stream.flush()


def _first_lines(text: str, count: int = RESULT_LINES) -> list[str]:
    """The first non-blank lines of a tool result, without bare wrapper tags (``<stderr>``)."""
    lines = [line for line in text.splitlines() if line.strip() and not _TAG.match(line.strip())]
    return [clip(line, 150) for line in lines[:count]]


def _resume_command(session_dir: Path, message: str) -> str:
    """The command that continues the session in ``session_dir`` with ``message``."""
    resume = shlex.quote(terminal_safe(str(session_dir)))
    return f'contextengine run --resume {resume} "{message}"'


def _safe(text: str) -> str:
    """Model or tool text for a markup string: no terminal controls, no markup."""
    return escape(terminal_safe(text))


def context_table(parts: Sequence[ContextPart]) -> Table:
    """``/context``: each part of the next request in tokens, with its cached share."""
    table = Table(title="the next request", title_justify="left")
    table.add_column("part")
    table.add_column("tokens", justify="right")
    table.add_column("cached", justify="right")
    for part in parts:
        table.add_row(part.name, f"{part.tokens:,}", _share(part.cached_tokens, part.tokens))
    tokens = sum(p.tokens for p in parts)
    cached = sum(p.cached_tokens for p in parts)
    table.add_row("total", f"{tokens:,}", _share(cached, tokens), style="bold")
    return table


def cost_lines(stats: Mapping[str, Any], cost_usd: float | None) -> list[str]:
    """``/cost``: the session's calls, tokens, cache hits and cost so far (``None``: the
    model has no known price)."""
    priced = "price unknown" if cost_usd is None else f"${cost_usd:.4f}"
    return [
        f"{stats['calls_total']} model calls, {priced}",
        f"{stats['input_tokens']:,} input tokens, {stats['cached_tokens']:,} cached "
        f"({stats['cache_hit_rate']:.0%}), {stats['cache_write_tokens']:,} cache writes, "
        f"{stats['output_tokens']:,} output tokens",
        f"{stats['compactions']} compactions, {stats['prunes']} prunes, "
        f"{stats['tool_calls']} tool calls",
    ]


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"
