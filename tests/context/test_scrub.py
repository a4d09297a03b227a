import pytest

from contextengine import scrub_dynamic, scrub_report


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Now: 2026-02-26T10:30:00Z.", "Now: [DATE]."),
        ("Now: 2026-02-26T10:30:00.123+08:00 ok", "Now: [DATE] ok"),
        ("Date 2026-02-26 10:30:00 local", "Date [DATE] local"),
        ("Day 2026-02-26.", "Day [DATE]."),
        ("at 10:30:00 sharp", "at [TIME] sharp"),
        ("at 9:05:59.5 sharp", "at [TIME] sharp"),
        ("id 550e8400-e29b-41d4-a716-446655440000 end", "id [UUID] end"),
        ("session_id: abc123, next", "session_id: [SESSION], next"),
        ("session-id=abc123", "session_id: [SESSION]"),
        ("sessionId: 'q-1'", "session_id: [SESSION]"),
        ("Session ID: 550e8400-e29b-41d4-a716-446655440000", "session_id: [SESSION]"),
        ("version 1.2.3, ratio 1:2, clock 12:30", "version 1.2.3, ratio 1:2, clock 12:30"),
        ("already session_id: [SESSION]", "already session_id: [SESSION]"),
    ],
)
def test_scrub_cases(text, expected):
    assert scrub_dynamic(text) == expected


def test_scrub_is_idempotent_and_reports_values():
    text = "Run 550e8400-e29b-41d4-a716-446655440000 at 2026-02-26T10:30:00Z, session_id: s-9"
    result = scrub_report(text)
    assert scrub_dynamic(result.text) == result.text
    kinds = sorted(f.kind for f in result.findings)
    assert kinds == ["date", "session_id", "uuid"]
    assert {f.value for f in result.findings} >= {"2026-02-26T10:30:00Z", "session_id: s-9"}


def test_plain_text_untouched():
    text = "You are a careful coding agent. Use tools."
    assert scrub_report(text).findings == ()
    assert scrub_dynamic(text) == text
