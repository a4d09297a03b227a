"""Rule predicates and the fold over the session log."""

from pathlib import Path

import pytest

from contextengine import Session
from contextengine.memory.rules import (
    RuleState,
    is_high_risk,
    is_info_gathering,
    is_inspection,
    plan_reminder_text,
)
from contextengine.session.entries import (
    AssistantEntry,
    ReminderEntry,
    SummaryEntry,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.tools.memory import with_memory_tools
from contextengine.tools.registry import default_toolset


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la src", True),
        ("cat a.py | grep foo | wc -l", True),
        ("cd src && git log --oneline -5", True),
        ("sed -n 1,20p a.py", True),
        ("grep -rn x . 2>&1 | head", True),
        ("git commit -m x", False),
        ("python test.py", False),
        ("cat a > b", False),
        ("sed -i s/a/b/ f", False),
        ("ls && rm -rf build", False),
        ("echo 'unclosed", False),
    ],
)
def test_inspection_commands(command: str, expected: bool) -> None:
    assert is_inspection(command) is expected


def test_information_gathering_and_high_risk() -> None:
    traits = with_memory_tools(default_toolset()).traits
    assert is_info_gathering(traits("file_grep"), {"pattern": "x"})
    assert is_info_gathering(traits("shell_exec"), {"command": "ls"})
    assert not is_info_gathering(traits("shell_exec"), {"command": "pytest"})
    assert not is_info_gathering(traits("file_write"), {"path": "a"})
    assert not is_info_gathering(traits("web_fetch"), {"url": "http://x"})
    assert is_high_risk(traits("shell_exec"), False)
    assert is_high_risk(traits("file_write"), target_exists=True)
    assert not is_high_risk(traits("file_write"), target_exists=False)
    assert is_high_risk(traits("file_delete"), False)
    assert not is_high_risk(traits("file_edit"), True)
    assert not is_high_risk(traits("memory_plan_update"), False)
    # Names say nothing: a tool that declares no traits is neither info nor high-risk.
    assert not is_high_risk(traits("delete_everything"), True)
    assert not is_info_gathering(traits("file_read_more"), {})


def test_reminder_text_carries_the_plan_and_where_the_memory_is() -> None:
    text = plan_reminder_text("periodic", "# Task Plan\n\n## Goal\nx\n", ".ce/s1")
    assert "<task_plan>\n# Task Plan\n\n## Goal\nx\n</task_plan>" in text
    assert "Memory files: .ce/s1/ task_plan.md" in text


def _session(tmp_path: Path) -> Session:
    return Session.create(tmp_path / "s", session_id="rules")


def _fail(session: Session, n: int, error_class: str) -> None:
    for _ in range(n):
        call = ToolCallRecord(id=f"c{len(session.records)}", name="shell_exec", arguments_json="{}")
        session.append(AssistantEntry(text="try", tool_calls=(call,)))
        session.append(
            ToolResultEntry(
                call_id=call.id,
                tool_name="shell_exec",
                status="error",
                content="x",
                error_class=error_class,
            )
        )


def _fold(session: Session) -> RuleState:
    state = RuleState(with_memory_tools(default_toolset()).traits)
    for record in session.records:
        state.observe(record)
    return state


def test_strikes_count_per_class_and_a_reboot_resets_the_struck_class(tmp_path: Path) -> None:
    session = _session(tmp_path)
    _fail(session, 3, "NameError")
    _fail(session, 2, "ImportError")
    state = _fold(session)
    assert state.struck() == ["NameError"] and state.batch_done
    session.append(ReminderEntry(rule="3-strike", text="reboot"))
    state = _fold(session)
    assert state.struck() == [] and state.awaiting_reboot
    assert state.strikes["ImportError"] == 2 and state.strikes["NameError"] == 0
    assert not state.plan_due() and not state.two_action_due()


def test_plan_is_due_only_while_it_is_not_in_view(tmp_path: Path) -> None:
    session = _session(tmp_path)
    state = _fold(session)
    assert state.plan_due(), "never recited"
    session.append(ReminderEntry(rule="plan", text=plan_reminder_text("periodic", "P1", ".ce/s1")))
    state = _fold(session)
    assert not state.plan_due(), "a changed plan is recited by the tail, not stored again"
    for _ in range(10):
        state.observe(session.append(AssistantEntry(text="step")))
    assert not state.plan_due()


def _run(session: Session, command: str, status: str, content: str) -> None:
    call = ToolCallRecord(
        id=f"c{len(session.records)}",
        name="shell_exec",
        arguments_json=f'{{"command":"{command}"}}',
    )
    session.append(AssistantEntry(text="run", tool_calls=(call,)))
    session.append(
        ToolResultEntry(
            call_id=call.id,
            tool_name="shell_exec",
            status=status,  # type: ignore[arg-type]
            content=content,
            error_class="nonzero_exit" if status == "error" else None,
        )
    )


def test_recent_errors_are_kept_until_the_same_action_succeeds(tmp_path: Path) -> None:
    session = _session(tmp_path)
    _run(session, "make test", "error", "\nFAILED test_a - assert 1 == 2\nmore")
    _run(session, "make lint", "error", '{"error":{"code":"x","message":"E501 line too long"}}')
    state = _fold(session)
    assert [str(e) for e in state.recent_errors] == [
        "shell_exec make test: FAILED test_a - assert 1 == 2",
        "shell_exec make lint: E501 line too long",
    ]
    _run(session, "make test", "success", "ok")
    assert [str(e) for e in _fold(session).recent_errors] == [
        "shell_exec make lint: E501 line too long"
    ]


def test_history_chars_is_the_rendered_history_in_view(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.append(UserEntry(text="Fix it."))
    call = ToolCallRecord(id="c1", name="file_read", arguments_json="{}")
    session.append(AssistantEntry(text="Looking.", tool_calls=(call,)))
    session.append(
        ToolResultEntry(call_id="c1", tool_name="file_read", status="success", content="x" * 500)
    )
    session.append(AssistantEntry(text="Done reading."))
    sizes = [sum(len(c) for c in record.chunks) for record in session.records]
    assert _fold(session).history_chars == sum(sizes) > 500
    summary = SummaryEntry(text="Earlier: a read.", archive="a.md", first_index=1, end_index=3)
    session.append(summary)
    state = _fold(session)
    kept = sizes[0] + sizes[3] + sum(len(c) for c in session.records[-1].chunks)
    assert state.history_chars == kept < 500, "the summary replaces the read and its call"
