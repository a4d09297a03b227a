"""Lessons, long-term memory, and the injection pipeline."""

import logging
from pathlib import Path

from contextengine import Session
from contextengine.memory.injectors import (
    FileInjector,
    LessonsInjector,
    LongTermMemoryInjector,
    ProjectKnowledgeInjector,
    run_injectors,
)
from contextengine.memory.lessons import LessonStore
from contextengine.memory.longterm import LongTermMemory, MemoryDoc, session_documents
from contextengine.memory.scope import SessionScope
from contextengine.session.entries import AssistantEntry, UserEntry


def scope(root: Path, session: str, org: str = "acme", team: str = "core") -> SessionScope:
    return SessionScope(root, org, team, "ws", session)


def test_scope_of_a_session_folder(tmp_path: Path) -> None:
    found = SessionScope.of(tmp_path / "root" / "o" / "t" / "w" / "s1")
    assert found == SessionScope((tmp_path / "root").resolve(), "o", "t", "w", "s1")
    assert found.database == (tmp_path / "root" / "memory.sqlite3").resolve()
    assert found.preferences == (tmp_path / "root" / "o" / "t" / "preferences.md").resolve()


def test_resolved_lessons_reach_other_sessions_of_the_same_team_only(tmp_path: Path) -> None:
    first = LessonStore(scope(tmp_path, "s1"))
    lesson = first.record_error(
        "NameError", "name 'nme' is not defined", tool="shell_exec", action="python greet.py"
    )
    unresolved = first.record_error("ImportError", "No module named yaml", tool="shell_exec")
    assert [x.id for x in first.open_lessons()] == [lesson, unresolved]
    first.resolve_error(lesson, "fixed the typo nme -> name")
    assert [x.id for x in first.open_lessons()] == [unresolved]
    assert first.relevant("greet") == [], "a session never gets its own lessons back"

    later = LessonStore(scope(tmp_path, "s2"))
    found = later.relevant("make greet.py print a greeting")
    assert [(x.error_class, x.resolution) for x in found] == [
        ("NameError", "fixed the typo nme -> name")
    ]
    assert later.relevant("something unrelated") == found, "recent lessons are the fallback"
    assert LessonStore(scope(tmp_path, "s3", team="other")).relevant("greet") == []


def test_long_term_memory_finds_other_sessions_documents(tmp_path: Path) -> None:
    one = LongTermMemory(scope(tmp_path, "s1"))
    one.index_session(
        [MemoryDoc("finding", "Postgres index", "A partial index made the report fast")]
    )
    one.index_session([MemoryDoc("finding", "Postgres index", "BRIN index on created_at")])
    two = LongTermMemory(scope(tmp_path, "s2"))
    hits = two.search("speed up the report with an index")
    assert [(h.session, h.body) for h in hits] == [("s1", "BRIN index on created_at")]
    assert two.search('"; DROP TABLE memory_fts; --') == []
    assert LongTermMemory(scope(tmp_path, "s3", org="other")).search("index") == []


def test_session_documents_are_findings_summaries_and_answered_requests(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", session_id="docs")
    session.append(UserEntry(text="Why is the build slow?"))
    session.append(AssistantEntry(text="The cache was off; I turned it on."))
    findings = "# Research Findings\n\n## [2026-01-12 10:30:00 UTC] Cache\nccache was disabled\n"
    docs = session_documents(session.records, findings)
    assert docs == [
        MemoryDoc("finding", "Cache", "ccache was disabled"),
        MemoryDoc("answer", "Why is the build slow?", "The cache was off; I turned it on."),
    ]


class Boom:
    name = "boom"

    def inject(self, hint: str) -> str | None:
        raise RuntimeError("index is locked")


class Echo:
    name = "echo"

    def inject(self, hint: str) -> str | None:
        return f"hint was: {hint}"


def test_a_failing_injector_is_logged_and_skipped(caplog) -> None:
    with caplog.at_level(logging.WARNING):
        result = run_injectors([Boom(), Echo()], "the hint")
    assert [(n.source, n.text) for n in result.notes] == [("echo", "hint was: the hint")]
    assert [(f.injector, f.error) for f in result.failures] == [
        ("boom", "RuntimeError: index is locked")
    ]
    assert "injector boom failed and was skipped: RuntimeError: index is locked" in caplog.text


def test_a_note_already_in_view_is_not_repeated() -> None:
    result = run_injectors([Echo()], "h", seen={("echo", "hint was: h")})
    assert result.notes == ()


def test_built_in_injectors(tmp_path: Path) -> None:
    s = scope(tmp_path, "s2")
    past = LessonStore(scope(tmp_path, "s1"))
    past.resolve_error(
        past.record_error("test_failure", "1 failed", tool="shell_exec", action="pytest -q"),
        "ran pytest from the repo root",
    )
    LongTermMemory(scope(tmp_path, "s1")).index_session(
        [MemoryDoc("answer", "deploy", "use make deploy")]
    )
    lessons = LessonsInjector(LessonStore(s)).inject("run the tests")
    assert lessons is not None and "[test_failure] shell_exec `pytest -q`: 1 failed" in lessons
    assert "Resolution: ran pytest from the repo root" in lessons
    memory = LongTermMemoryInjector(LongTermMemory(s)).inject("how do we deploy")
    assert memory is not None and "use make deploy" in memory and "session s1" in memory
    prefs = tmp_path / "preferences.md"
    assert FileInjector("preferences", prefs, "User preferences:").inject("x") is None
    prefs.write_text("Answer in French.\n")
    assert FileInjector("preferences", prefs, "User preferences:").inject("x") == (
        "User preferences:\nAnswer in French."
    )
    project = tmp_path / "project"
    project.mkdir()
    assert ProjectKnowledgeInjector(project).inject("x") is None
    (project / "Project_Knowledge.md").write_text("The API lives in api/.")
    assert ProjectKnowledgeInjector(project).inject("x") == (
        "Project knowledge (Project_Knowledge.md):\nThe API lives in api/."
    )
