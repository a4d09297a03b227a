"""Tool calls a crash left open are closed with an explicit result, never re-run."""

from __future__ import annotations

import pytest

from contextengine import (
    AssistantEntry,
    Session,
    ToolCallRecord,
    ToolResultEntry,
    ToolStartEntry,
    UserEntry,
)
from contextengine.session.interrupted import (
    MAY_HAVE_RUN,
    NOT_RUN,
    close_interrupted_calls,
    interrupted_calls,
)
from contextengine.session.render import RenderStyle, render_entry


def _calls(n: int) -> tuple[ToolCallRecord, ...]:
    return tuple(
        ToolCallRecord(id=f"c{k}", name="shell_exec", arguments_json=f'{{"command":"echo {k}"}}')
        for k in range(n)
    )


def _result(call_id: str) -> ToolResultEntry:
    return ToolResultEntry(call_id=call_id, tool_name="shell_exec", status="success", content="ok")


@pytest.fixture
def session(tmp_path) -> Session:
    s = Session.create(tmp_path / "s", session_id="crash")
    s.append(UserEntry(text="run three commands"))
    s.append(AssistantEntry(text="Running.", tool_calls=_calls(3)))
    return s


def test_a_call_that_started_may_have_run_and_later_ones_were_not_run(session):
    session.append(ToolStartEntry(call_id="c0", tool_name="shell_exec"))
    session.append(_result("c0"))
    session.append(ToolStartEntry(call_id="c1", tool_name="shell_exec"))
    open_calls = interrupted_calls(session.records)
    assert [(c.call.id, c.started) for c in open_calls] == [("c1", True), ("c2", False)]

    appended = close_interrupted_calls(session)
    assert [r.entry.call_id for r in appended] == ["c1", "c2"]
    assert [r.entry.content for r in appended] == [MAY_HAVE_RUN, NOT_RUN]
    assert all(r.entry.status == "error" for r in appended)
    assert close_interrupted_calls(session) == []


def test_a_crash_right_after_the_reply_closes_every_call_as_not_run(session):
    appended = close_interrupted_calls(session)
    assert [(r.entry.call_id, r.entry.content) for r in appended] == [
        ("c0", NOT_RUN),
        ("c1", NOT_RUN),
        ("c2", NOT_RUN),
    ]
    # On the wire: the reply's calls, then exactly their results, in order.
    messages = [m for r in Session.open(session.directory).records for m in r.messages]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "tool"]
    assert [m["tool_call_id"] for m in messages[2:]] == ["c0", "c1", "c2"]


def test_a_finished_batch_or_a_final_answer_leaves_nothing_to_close(session):
    for k in range(3):
        session.append(ToolStartEntry(call_id=f"c{k}", tool_name="shell_exec"))
        session.append(_result(f"c{k}"))
    assert interrupted_calls(session.records) == []
    session.append(AssistantEntry(text="All three ran."))
    assert interrupted_calls(session.records) == []


def test_only_a_trailing_batch_is_closed(session):
    # A log from before version 2 that was resumed without repair: results appended now
    # could not follow their call, so nothing is appended.
    session.append(UserEntry(text="go on"))
    assert close_interrupted_calls(session) == []


def test_a_start_record_renders_to_no_message():
    entry = ToolStartEntry(call_id="c0", tool_name="shell_exec")
    assert render_entry(entry, 3, "sid", RenderStyle()) == ()
    assert render_entry(entry, 3, "sid", RenderStyle(protocol="text")) == ()
