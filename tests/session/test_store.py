"""The same store tests against the file store and PostgreSQL (the ``store`` fixture)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextengine import Agent, Config, ScriptedProvider, Session, UserEntry
from contextengine.errors import AppendConflictError, SessionLogError
from contextengine.memory.working_memory import MEMORY_FILES, WorkingMemory
from contextengine.session.layout import SessionLayout
from contextengine.session.log import LogRecord
from contextengine.session.render import render_entry
from contextengine.session.session import RenderStyle
from contextengine.session.store.protocol import Archive, SessionStore, archive_name
from support.postgres import Postgres

WRITER = Path(__file__).with_name("store_writer.py")


def _record(session: Session, index: int, text: str) -> LogRecord:
    entry = UserEntry(text=text)
    return LogRecord.make(index, entry, render_entry(entry, index, session.id, RenderStyle()))


def _texts(session: Session) -> list[str]:
    return [r.entry.text for r in session.records]  # type: ignore[union-attr]


def test_appends_read_back_in_order(store: SessionStore, tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", session_id="s1", store=store)
    for i in range(30):
        session.append(UserEntry(text=f"question {i} — é"))
    session.close()
    again = Session.open(tmp_path / "s", store)
    assert again.id == "s1"
    assert _texts(again) == [f"question {i} — é" for i in range(30)]
    assert [r.index for r in again.records] == list(range(30))
    assert [r.chunks for r in again.records] == [r.chunks for r in session.records]
    again.close()


def test_creating_twice_is_refused(store: SessionStore, tmp_path: Path) -> None:
    Session.create(tmp_path / "s", store=store).close()
    with pytest.raises(SessionLogError, match="already exists"):
        Session.create(tmp_path / "s", store=store)


def test_reappending_the_same_record_is_a_no_op(store: SessionStore, tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", store=store)
    session.append(UserEntry(text="one"))
    session.append(UserEntry(text="two"))
    assert session.stored.append(_record(session, 1, "two")) is False
    assert session.stored.append(_record(session, 2, "three")) is True
    session.close()
    assert _texts(Session.open(tmp_path / "s", store)) == ["one", "two", "three"]


def test_a_different_entry_at_a_held_index_is_an_error(store: SessionStore, tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", store=store)
    session.append(UserEntry(text="one"))
    with pytest.raises(AppendConflictError, match="index 0 already holds a different entry"):
        session.stored.append(_record(session, 0, "other"))
    with pytest.raises(SessionLogError, match="append of index 5, expected 1"):
        session.stored.append(_record(session, 5, "gap"))
    session.close()
    assert _texts(Session.open(tmp_path / "s", store)) == ["one"]


# (index offset from the end, text): offset < 0 re-appends a held index, > 0 leaves a gap
_ATTEMPTS = st.lists(st.tuples(st.integers(-3, 1), st.sampled_from("ab")), max_size=25)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempts=_ATTEMPTS)
def test_any_append_sequence_keeps_an_ordered_gapless_record(
    store: SessionStore, tmp_path: Path, attempts: list[tuple[int, str]]
) -> None:
    folder = tmp_path / f"s{len(list(tmp_path.iterdir()))}"
    session = Session.create(folder, store=store)
    model: list[str] = []
    for offset, text in attempts:
        index = len(model) + offset
        if index < 0:
            continue
        record = _record(session, index, f"{text}{index}")
        if index > len(model):
            with pytest.raises(SessionLogError, match="expected"):
                session.stored.append(record)
        elif index == len(model):
            assert session.stored.append(record) is True
            model.append(f"{text}{index}")
        elif model[index] == f"{text}{index}":
            assert session.stored.append(record) is False
        else:
            with pytest.raises(AppendConflictError):
                session.stored.append(record)
    session.close()
    again = Session.open(folder, store)
    assert _texts(again) == model
    assert [r.index for r in again.records] == list(range(len(model)))
    again.close()


class _CrashingRecord(LogRecord):
    """A record whose write fails: a crash between the archive and the record."""

    def to_json(self) -> str:
        raise RuntimeError("crash mid-compaction")


def test_a_compaction_failing_mid_way_leaves_no_record_then_completes(
    store: SessionStore, tmp_path: Path
) -> None:
    session = Session.create(tmp_path / "s", store=store)
    for i in range(4):
        session.append(UserEntry(text=f"q{i}"))
    archive = Archive(archive_name(1), tuple(session.records[:2]))
    good = _record(session, 4, "summary")
    crashing = _CrashingRecord(good.index, good.entry, good.messages, good.chunks, good.ts)
    with pytest.raises(RuntimeError, match="crash mid-compaction"):
        session.stored.append(crashing, archive)
    session.close()
    again = Session.open(tmp_path / "s", store)
    assert _texts(again) == ["q0", "q1", "q2", "q3"]
    assert again.stored.append(good, archive) is True
    again.close()
    last = Session.open(tmp_path / "s", store)
    assert _texts(last)[-1] == "summary"
    archived = last.stored.read_archive(archive.name)
    assert [r.entry for r in archived] == [r.entry for r in session.records[:2]]
    assert (tmp_path / "s" / archive.name).is_file()  # the copy file tools read


def test_an_agent_compaction_archives_through_the_store(store_setting: str, tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    config = Config(store=store_setting, context_window=3000, keep_rounds=1, working_memory=False)
    reply = {"content": "done " + "x" * 1200}
    provider = ScriptedProvider(lambda request: reply)
    with Agent(provider, workspace, config) as agent:
        for i in range(6):
            agent.run(f"task {i} " + "y" * 600)
        session = agent.session
        summaries = [r for r in session.records if r.entry.kind == "summary"]
        assert summaries, "the scripted turns should have reached the compaction trigger"
        archived = session.stored.read_archive(archive_name(1))
        assert archived and all(r.entry.kind != "summary" for r in archived)
        folder = agent.session_dir
    resumed = Session.open(folder, agent.session.store)
    assert len(resumed.records) == len(session.records)
    assert resumed.epoch == session.epoch
    resumed.close()


def test_two_processes_appending_keep_one_ordered_record(
    store_setting: str, store: SessionStore, tmp_path: Path
) -> None:
    Session.create(tmp_path / "s", session_id="shared", store=store).close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def writers(tags: tuple[str, str], start: int) -> list[dict[str, int]]:
        folder = str(tmp_path / "s")
        procs = [
            subprocess.Popen(
                [sys.executable, str(WRITER), store_setting, folder, tag, str(start), "40"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for tag in tags
        ]
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-3000:]
            results.append(json.loads(out))
        return results

    same = writers(("same", "same"), 0)
    texts = _texts(Session.open(tmp_path / "s", store))
    assert texts == [f"same-{i}" for i in range(40)]
    assert sum(r["written"] for r in same) == 40
    assert all(r["written"] + r["repeated"] == 40 for r in same)

    rival = writers(("a", "b"), 40)
    texts = _texts(Session.open(tmp_path / "s", store))[40:]
    assert len(texts) == 40
    assert all(t in {f"a-{40 + i}", f"b-{40 + i}"} for i, t in enumerate(texts))
    assert sum(r["written"] for r in rival) == 40
    assert all(r["written"] + r["conflicts"] == 40 for r in rival)


def test_an_agent_session_resumes_from_the_store(store_setting: str, tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    config = Config(store=store_setting)
    first = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"name": "file_write", "arguments": {"path": "a.txt", "content": "A"}}
                ]
            },
            {"content": "wrote a.txt"},
        ]
    )
    with Agent(first, workspace, config) as agent:
        assert agent.run("write a.txt").final_answer == "wrote a.txt"
        folder = agent.session_dir
        kept = [r.entry for r in agent.session.records]
    second = ScriptedProvider([{"content": "it holds A"}])
    with Agent.resume(folder, second, config) as resumed:
        assert [r.entry for r in resumed.session.records] == kept
        assert resumed.run("what is in a.txt?").final_answer == "it holds A"
        shown = json.dumps(second.requests[0].messages)
        assert "write a.txt" in shown and "wrote a.txt" in shown
        usage = [json.loads(line) for line in resumed.session.stored.usage_lines()]
    assert [u["purpose"] for u in usage].count("main") == 3
    postgres = store_setting.startswith("postgresql://")
    assert SessionLayout(folder).log.is_file() is not postgres


def test_memory_files_are_kept_by_the_store(store: SessionStore, tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", store=store)
    memory = WorkingMemory(session.directory, files=session.stored)
    memory.add_finding("cache", "the prefix is stable", source="docs")
    memory.log("step one", "read the code")
    memory.log("step two")
    session.close()
    again = Session.open(tmp_path / "s", store)
    for name in MEMORY_FILES:
        kept = again.stored.load_memory(name)
        assert kept == (session.directory / name).read_text(encoding="utf-8")
    assert "step two" in (again.stored.load_memory("progress.md") or "")


def test_an_edit_by_hand_reaches_the_store(store: SessionStore, tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", store=store)
    memory = WorkingMemory(session.directory, files=session.stored)
    (session.directory / "findings.md").write_text("# Findings\n\nedited by hand\n")
    memory.drain()
    assert session.stored.load_memory("findings.md") == "# Findings\n\nedited by hand\n"


def test_postgres_restores_memory_files_into_an_empty_folder(
    postgres: Postgres, tmp_path: Path
) -> None:
    from contextengine.session.store.choice import open_store

    url = postgres.new_database("restore")
    store = open_store(Config(store=url))
    session = Session.create(tmp_path / "s", store=store)
    WorkingMemory(session.directory, files=session.stored).log("kept in the database")
    text = (session.directory / "progress.md").read_text(encoding="utf-8")
    for name in MEMORY_FILES:
        (session.directory / name).unlink()
    restored = WorkingMemory(session.directory, files=session.stored)
    assert restored.read("progress.md") == text
    assert (session.directory / "progress.md").read_text(encoding="utf-8") == text
