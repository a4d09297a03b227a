"""The numbered event record: exact reads after any id, torn lines cut, ids never reused."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from contextengine.server.eventlog import EventLog

payloads = st.lists(
    st.tuples(
        st.sampled_from(["thinking", "tool_call", "done", 'odd "name"']),
        st.dictionaries(st.text(max_size=5), st.text(max_size=30), max_size=3),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(events=payloads, after=st.integers(min_value=0, max_value=35), reopen=st.booleans())
def test_read_after_returns_exactly_the_later_events(
    events: list[tuple[str, dict[str, str]]], after: int, reopen: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        log = EventLog(path)
        written = [log.append(name, json.dumps(data)) for name, data in events]
        if reopen:
            log.close()
            log = EventLog(path)
        assert log.last_id == len(events)
        found, offset = log.read_after(after)
        assert found == written[after:]
        assert [json.loads(e.data) for e in found] == [d for _, d in events[after:]]
        assert log.read_after(after, offset) == ([], offset)
        log.close()


def test_a_torn_last_line_is_cut_and_its_id_given_again(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append("thinking", '{"text": "a"}')
    log.append("thinking", '{"text": "' + "b" * 20_000 + '"}')
    log.close()
    intact = path.read_bytes()
    with open(path, "ab") as fh:
        fh.write(b'{"id": 3, "event": "thin')
    log = EventLog(path)
    assert path.read_bytes() == intact
    assert log.last_id == 2
    assert log.append("done", "{}").id == 3
    assert [e.id for e in log.read_after(0)[0]] == [1, 2, 3]


def test_a_line_being_written_is_not_read_yet(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append("thinking", '{"text": "a"}')
    with open(path, "ab") as fh:
        fh.write(b'{"id": 2, "event": "thinking", "data": {"te')
    found, offset = log.read_after(0)
    assert [e.id for e in found] == [1]
    with open(path, "ab") as fh:
        fh.write(b'xt": "b"}}\n')
    rest, _ = log.read_after(0, offset)
    assert [(e.id, e.data) for e in rest] == [(2, '{"text": "b"}')]


def test_a_log_without_any_complete_line_starts_at_one(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"id": 1, "ev')
    log = EventLog(path)
    assert log.last_id == 0
    assert path.read_bytes() == b""
    assert log.append("done", "{}").id == 1
