"""The terminal printer: the answer once as markdown, result lines, one memory line per step."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from contextengine.agent.events import (
    Done,
    ErrorEvent,
    MemoryUpdate,
    ModelCallEvent,
    RunResult,
    Thinking,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from contextengine.agent.usage_log import UsageRecord
from contextengine.cli_printer import EventPrinter, JsonLinePrinter
from contextengine.measure.report import call_events
from contextengine.untrusted import terminal_safe

ANSWER = "Fixed **greet.py**:\n\n- the typo\n- the test"


def printed(*events: object) -> str:
    console = Console(record=True, width=100, color_system=None)
    printer = EventPrinter(console)
    for event in events:
        printer(event)  # type: ignore[arg-type]
    return console.export_text()


def usage() -> UsageEvent:
    return UsageEvent("main", 100, 80, 0, 10, 0.1, 200, None)


def test_the_final_answer_prints_once_rendered_as_markdown() -> None:
    out = printed(
        Thinking("Fixed **greet.py**:"),
        Thinking("\n\n- the typo\n- the test"),
        usage(),
        Done(RunResult(ANSWER, Path("/tmp/s"))),
    )
    assert out.count("Fixed") == 1
    assert "**" not in out and "Fixed greet.py:" in out
    assert "• the typo" in out


def test_step_text_before_tool_calls_is_kept_and_results_show_their_first_lines() -> None:
    out = printed(
        Thinking("Running it."),
        usage(),
        ToolCallEvent("c1", "shell_exec", '{"command": "python3 greet.py"}'),
        ToolResultEvent(
            "c1",
            "shell_exec",
            "success",
            "<stderr>\nhello, world\nsecond\nthird\nfourth\n</stderr>\n[exit code 0]",
        ),
    )
    assert "Running it." in out
    assert "success hello, world" in out and "second" in out
    assert "<stderr>" not in out and "third" in out and "fourth" not in out


def test_memory_updates_print_once_per_change_and_step() -> None:
    out = printed(
        MemoryUpdate("progress.md", "a"),
        MemoryUpdate("task_plan.md", "plan"),
        MemoryUpdate("progress.md", "ab"),
        usage(),
        MemoryUpdate("task_plan.md", "plan"),  # unchanged: not printed again
        usage(),
    )
    assert out.count("memory:") == 1
    assert "memory: progress.md, task_plan.md updated" in out


def test_call_events_label_side_calls_and_breaks() -> None:
    def record(purpose: str, prefix: dict) -> UsageRecord:
        return UsageRecord(1, purpose, "m", 10, 0, 0, 1, 0.1, prefix)

    assert call_events(record("main", {})) == []
    assert call_events(record("summary", {})) == ["compaction"]
    broken = record("main", {"break": {"cause": "l2_changed"}})
    assert call_events(broken) == ["break: l2_changed"]


CLEAR = "\x1b[2J"
TITLE = "\x1b]0;pwned\x07"


def test_terminal_controls_from_the_model_and_tools_are_shown_not_obeyed() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None, force_terminal=False)
    printer = EventPrinter(console)
    for event in (
        Thinking(f"Let me clear {CLEAR} the screen."),
        ToolCallEvent("c1", f"shell{CLEAR}", f'{{"command": "printf {TITLE}"}}'),
        ToolResultEvent("c1", "shell_exec", "success", f"{TITLE} out\x9b2J c1"),
        MemoryUpdate(f"notes{CLEAR}.md", "x"),
        ErrorEvent("tool_error", f"bad {TITLE}"),
        usage(),
        Done(RunResult(f"Done {CLEAR} and {TITLE} titled.", Path(f"/tmp/s{CLEAR}"))),
    ):
        printer(event)
    out = buffer.getvalue()
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "\\x1b[2J" in out and "\\x1b]0;pwned\\x07" in out and "\\x9b2J" in out
    assert "Done \\x1b[2J and" in out  # the final answer too


def test_terminal_safe_keeps_newlines_and_tabs() -> None:
    assert terminal_safe("a\tb\nc\rd\x00\x7f") == "a\tb\nc\\x0dd\\x00\\x7f"


def test_the_live_view_shows_the_streaming_text_and_what_runs() -> None:
    console = Console(file=io.StringIO(), width=100, color_system=None, force_terminal=True)
    printer = EventPrinter(console)
    printer(ModelCallEvent("main", 1200))
    printer(Thinking("first words "))
    view = _text_of(console, printer)
    assert "first words" in view and "main call · " in view and "1,200 tokens in" in view
    printer(usage())
    printer(ToolCallEvent("c1", "shell_exec", '{"command": "sleep 5"}'))
    assert "running shell_exec · 0." in _text_of(console, printer)
    printer(ToolResultEvent("c1", "shell_exec", "success", "done"))
    assert "running" not in _text_of(console, printer)
    printer.stop()


def _text_of(console: Console, printer: EventPrinter) -> str:
    with console.capture() as captured:
        console.print(printer._view())
    return captured.get()


def test_stream_json_lines_are_the_servers_event_shapes() -> None:
    buffer = io.StringIO()
    printer = JsonLinePrinter(buffer)
    printer(Thinking(f"a {CLEAR}"))
    printer(Done(RunResult("ok", Path("/tmp/s"))))
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert lines[0] == {"type": "thinking", "text": f"a {CLEAR}", "reasoning": False}
    assert lines[1]["type"] == "done" and lines[1]["result"]["session_dir"] == "/tmp/s"
    assert "\x1b" not in buffer.getvalue()


def test_session_titles_are_listed_terminal_safe(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from contextengine import Agent, Config, ScriptedProvider
    from contextengine.cli import app

    answer = {"content": "Nothing to clear here, the screen stays as it is."}
    with Agent(ScriptedProvider([answer]), tmp_path, Config()) as agent:
        agent.run(f"Please {CLEAR} the screen {TITLE}")
    done = CliRunner().invoke(app, ["sessions", str(tmp_path)], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "\x1b" not in done.output and "Please \\x1b[2J" in done.output
