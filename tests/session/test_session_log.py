import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from contextengine import (
    AssistantEntry,
    Session,
    SessionLogError,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _fill(session: Session, n: int) -> None:
    for i in range(n):
        session.append(UserEntry(text=f"question {i} — é"))
        call = ToolCallRecord(id=f"c{i}", name="file_read", arguments_json=f'{{"path":"f{i}.py"}}')
        session.append(AssistantEntry(text="reading", tool_calls=(call,)))
        session.append(
            ToolResultEntry(
                call_id=f"c{i}", tool_name="file_read", status="success", content=f"line {i}"
            )
        )


def test_resume_restores_records_exactly(tmp_path):
    s = Session.create(tmp_path / "s", session_id="fixed-id")
    _fill(s, 3)
    again = Session.open(tmp_path / "s")
    assert again.id == "fixed-id"
    assert [r.entry for r in again.records] == [r.entry for r in s.records]
    assert [r.messages for r in again.records] == [r.messages for r in s.records]
    assert again.load_report.clean


def test_entries_are_frozen_and_records_read_only(tmp_path):
    s = Session.create(tmp_path / "s")
    record = s.append(UserEntry(text="hi"))
    with pytest.raises(ValidationError):
        record.entry.text = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        record.index = 5  # type: ignore[misc]
    records = s.records
    assert not hasattr(records, "append") and not hasattr(records, "__setitem__")
    assert not hasattr(records, "__delitem__")
    public = {n for n in dir(s) if not n.startswith("_")}
    assert not public & {
        "delete",
        "remove",
        "edit",
        "replace",
        "pop",
        "insert",
        "clear",
        "truncate",
    }


def test_create_refuses_to_overwrite_a_log(tmp_path):
    Session.create(tmp_path / "s")
    with pytest.raises(SessionLogError, match="already exists"):
        Session.create(tmp_path / "s")


@given(cut=st.integers(min_value=1, max_value=10_000))
def test_torn_write_at_any_byte_keeps_every_complete_record(tmp_path_factory, cut):
    base = tmp_path_factory.mktemp("torn")
    s = Session.create(base / "s", session_id="torn")
    _fill(s, 4)
    s.close()
    log = base / "s" / "session.jsonl"
    data = log.read_bytes()
    header_end = data.index(b"\n") + 1
    cut = header_end + cut % (len(data) - header_end)
    log.write_bytes(data[:cut])
    complete_lines = data[:cut].count(b"\n") - 1
    again = Session.open(base / "s")
    assert len(again.records) in (complete_lines, complete_lines + 1)
    assert [r.entry for r in again.records] == [r.entry for r in s.records[: len(again.records)]]
    if len(again.records) == complete_lines and data[:cut][-1:] != b"\n":
        assert again.load_report.torn_line == complete_lines + 2
        assert (base / "s" / "session.jsonl.torn").exists()
    again.append(UserEntry(text="after the crash"))
    third = Session.open(base / "s")
    assert third.records[-1].entry == UserEntry(text="after the crash")
    assert third.load_report.clean


def test_corrupt_line_in_the_middle_names_file_and_line(tmp_path):
    s = Session.create(tmp_path / "s")
    _fill(s, 2)
    s.close()
    log = tmp_path / "s" / "session.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = "{not json}\n"
    log.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(SessionLogError, match=r"session\.jsonl:3: corrupt line"):
        Session.open(tmp_path / "s")


def test_bad_entry_field_is_named(tmp_path):
    s = Session.create(tmp_path / "s")
    _fill(s, 2)
    s.close()
    log = tmp_path / "s" / "session.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    obj = json.loads(lines[2])
    obj["entry"]["tool_calls"] = "oops"
    lines[2] = json.dumps(obj) + "\n"
    log.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(SessionLogError, match=r":3: bad entry field 'assistant.tool_calls'"):
        Session.open(tmp_path / "s")


def test_missing_log_and_foreign_file_are_clear_errors(tmp_path):
    with pytest.raises(SessionLogError, match="no session log"):
        Session.open(tmp_path / "nothing")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "session.jsonl").write_text('{"hello": 1}\n')
    with pytest.raises(SessionLogError, match=r":1: bad header"):
        Session.open(tmp_path / "x")


def test_version_1_fixture_still_loads(tmp_path):
    shutil.copytree(FIXTURES / "session_v1", tmp_path / "v1")
    s = Session.open(tmp_path / "v1")
    assert s.id == "20260101-000000-fixture"
    kinds = [r.entry.kind for r in s.records]
    assert kinds == ["user", "assistant", "tool_result", "assistant"]
    assert s.records[2].messages[0]["role"] == "tool"
