"""How the command line shows a run: agent events rendered for a terminal."""

from __future__ import annotations

import re
import shlex

from rich.console import Console
from rich.markdown import Markdown

from contextengine.agent.events import (
    AgentEvent,
    CompactionEvent,
    Done,
    ErrorEvent,
    HumanQuestion,
    MemoryUpdate,
    PruneEvent,
    Thinking,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from contextengine.text import clip

RESULT_LINES = 3
_TAG = re.compile(r"^</?[A-Za-z_][\w-]*>$")


class EventPrinter:
    """Renders agent events for a terminal.

    A step's text is held until the step shows what it was: thinking before tool calls
    (printed dim), or the final answer (printed once, as markdown). Memory updates are
    gathered into one line per step, naming only files whose content changed.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self._reasoning = False
        self._text: list[str] = []
        self._memory: dict[str, str] = {}
        self._changed: list[str] = []

    def __call__(self, event: AgentEvent) -> None:
        """Print one event."""
        c = self.console
        if isinstance(event, Thinking):
            if event.reasoning:
                c.print(event.text, end="", style="dim italic", markup=False)
                self._reasoning = True
            else:
                self._text.append(event.text)
            return
        if self._reasoning:
            c.print()
            self._reasoning = False
        if isinstance(event, MemoryUpdate):
            if self._memory.get(event.file) != event.content:
                self._memory[event.file] = event.content
                if event.file not in self._changed:
                    self._changed.append(event.file)
            return
        self._flush_memory()
        if isinstance(event, UsageEvent):
            hit = event.cached_tokens / event.input_tokens if event.input_tokens else 0.0
            brk = f"  [yellow]cache break: {event.cache_break}[/]" if event.cache_break else ""
            c.print(
                f"  [dim]{event.purpose}: {event.input_tokens:,} in, {event.cached_tokens:,} cached "
                f"({hit:.0%}), {event.output_tokens:,} out, {event.latency_s:.2f}s[/]{brk}"
            )
            return
        if isinstance(event, Done):
            self._done(event)
            return
        self._flush_text()
        if isinstance(event, ToolCallEvent):
            c.print(f"[cyan]→ {event.name}[/] {_escape(clip(event.arguments, 160))}")
        elif isinstance(event, ToolResultEvent):
            style = "green" if event.status == "success" else "red"
            lines = _first_lines(event.preview)
            c.print(f"  [{style}]{event.status}[/] {_escape(lines[0] if lines else '')}")
            for line in lines[1:]:
                c.print(f"    [dim]{_escape(line)}[/]")
        elif isinstance(event, ErrorEvent):
            c.print(f"  [red]error ({event.error_class}):[/] {_escape(clip(event.message, 300))}")
        elif isinstance(event, CompactionEvent):
            c.print(f"  [yellow]compaction {event.stage}:[/] {_escape(event.message)}")
        elif isinstance(event, HumanQuestion):
            c.print(f"\n[bold yellow]The agent asks you:[/] {_escape(event.question)}")
        elif isinstance(event, PruneEvent):
            c.print(
                f"  [yellow]pruned {event.results} old entries:[/] {event.saved_tokens:,} "
                f"tokens fewer per call, pays back in {event.payback_steps:g} calls"
            )

    def _done(self, event: Done) -> None:
        r = event.result
        if r.status == "completed":
            self._text.clear()  # the answer's own streamed text: shown once, below
            self.console.print()
            self.console.print(Markdown(r.final_answer))
        elif r.status == "needs_human":
            self._flush_text()
            self.console.print(
                "\n[yellow]The turn ended waiting for your answer.[/] Answer with: "
                f'contextengine run --resume {_escape(shlex.quote(str(r.session_dir)))} "YOUR ANSWER"'
            )
        else:
            self._flush_text()
            self.console.print(f"\n[red]run ended: {r.status}[/] {_escape(r.error or '')}")
        self.console.print(f"[dim]session: {_escape(str(r.session_dir))}[/]")

    def _flush_text(self) -> None:
        text = "".join(self._text).strip()
        self._text.clear()
        if text:
            self.console.print(text, style="dim", markup=False)

    def _flush_memory(self) -> None:
        if self._changed:
            self.console.print(f"  [magenta]memory: {', '.join(self._changed)} updated[/]")
            self._changed.clear()


def _first_lines(text: str, count: int = RESULT_LINES) -> list[str]:
    """The first non-blank lines of a tool result, without bare wrapper tags (``<stderr>``)."""
    lines = [line for line in text.splitlines() if line.strip() and not _TAG.match(line.strip())]
    return [clip(line, 150) for line in lines[:count]]


def _escape(text: str) -> str:
    return text.replace("[", "\\[")
