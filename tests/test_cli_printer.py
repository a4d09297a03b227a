"""The terminal printer: the answer once as markdown, result lines, one memory line per step."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from contextengine.agent.events import (
    Done,
    MemoryUpdate,
    RunResult,
    Thinking,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from contextengine.agent.usage_log import UsageRecord
from contextengine.cli_printer import EventPrinter
from contextengine.measure.report import call_events

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
