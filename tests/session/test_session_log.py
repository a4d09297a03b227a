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
    ToolStartEntry,
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


def test_version_2_fixture_with_start_records_and_a_closed_call_loads(tmp_path):
    shutil.copytree(FIXTURES / "session_v2", tmp_path / "v2")
    s = Session.open(tmp_path / "v2")
    kinds = [r.entry.kind for r in s.records]
    assert kinds == [
        "user",
        "assistant",
        "tool_start",
        "tool_result",
        "tool_start",
        "tool_result",
        "user",
        "assistant",
    ]
    assert s.records[2].messages == ()
    assert "It may have run" in s.records[5].entry.content
    roles = [m["role"] for r in s.records for m in r.messages]
    assert roles == ["user", "assistant", "tool", "tool", "user", "assistant"]


def test_a_log_of_version_1_goes_on_with_version_2_records(tmp_path):
    shutil.copytree(FIXTURES / "session_v1", tmp_path / "v1")
    s = Session.open(tmp_path / "v1")
    s.append(ToolStartEntry(call_id="call_9_0", tool_name="file_read"))
    again = Session.open(tmp_path / "v1")
    assert again.records[-1].entry == ToolStartEntry(call_id="call_9_0", tool_name="file_read")
    assert again.load_report.clean


def test_creation_killed_before_the_log_appeared_leaves_no_session(tmp_path):
    # What a kill mid-creation can leave: the folder, a side file, a temp of the header.
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "session.json").write_text('{"works', encoding="utf-8")
    (folder / ".session.jsonl.abc123.tmp").write_text('{"format":', encoding="utf-8")
    with pytest.raises(SessionLogError, match="no session log"):
        Session.open(folder)
    s = Session.create(folder, session_id="again", files={"session.json": '{"ok": 1}'})
    s.append(UserEntry(text="hello"))
    assert Session.open(folder).id == "again"
    assert json.loads((folder / "session.json").read_text(encoding="utf-8")) == {"ok": 1}
    assert sorted(p.name for p in folder.iterdir()) == [
        ".session.jsonl.abc123.tmp",
        "artifacts",
        "session.json",
        "session.jsonl",
    ]


def test_create_over_an_existing_log_leaves_its_files_alone(tmp_path):
    Session.create(tmp_path / "s", files={"session.json": "first"})
    with pytest.raises(SessionLogError, match="already exists"):
        Session.create(tmp_path / "s", files={"session.json": "second"})
    assert (tmp_path / "s" / "session.json").read_text(encoding="utf-8") == "first"
    assert not [p for p in (tmp_path / "s").iterdir() if p.name.endswith(".tmp")]


def test_provider_items_are_logged_only_when_present_and_come_back_rendered(tmp_path):
    s = Session.create(tmp_path / "s", session_id="fixed-id")
    plain = AssistantEntry(text="plain")
    signed = {"type": "thinking", "thinking": "hm", "signature": "sig"}
    carried = AssistantEntry(text="with items", provider_items=(signed,))
    s.append(plain)
    s.append(carried)
    s.close()
    lines = (tmp_path / "s" / "session.jsonl").read_text().splitlines()
    assert "provider_items" not in lines[1]
    again = Session.open(tmp_path / "s")
    first, second = again.records
    assert first.entry == plain and "provider_items" not in first.messages[0]
    assert second.entry == carried
    assert second.messages[0]["provider_items"] == [signed]
