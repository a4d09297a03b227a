"""The three memory files: templates, atomic plan writes, appended logs, external edits,
change events."""

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextengine.memory.plan import PlanUpdate
from contextengine.memory.working_memory import (
    FINDINGS,
    MEMORY_FILES,
    PLAN,
    PROGRESS,
    FileChange,
    WorkingMemory,
)

FIXED = datetime(2026, 1, 12, 10, 30, tzinfo=UTC)


def test_files_are_created_with_templates_and_reported_once(tmp_path: Path) -> None:
    memory = WorkingMemory(tmp_path)
    assert (tmp_path / PLAN).read_text().startswith("# Task Plan\n\n## Goal\n")
    assert (tmp_path / FINDINGS).read_text() == "# Research Findings\n"
    assert (tmp_path / PROGRESS).read_text() == "# Execution Progress Log\n"
    assert [c.file for c in memory.drain()] == list(MEMORY_FILES)
    assert memory.drain() == []


def test_existing_files_are_kept(tmp_path: Path) -> None:
    (tmp_path / PLAN).write_text("# Task Plan: mine\n")
    memory = WorkingMemory(tmp_path)
    assert memory.plan().title == "mine"
    assert [c.file for c in memory.drain()] == [FINDINGS, PROGRESS]


def test_findings_and_progress_append_timestamped_sections(tmp_path: Path) -> None:
    memory = WorkingMemory(tmp_path, clock=lambda: FIXED)
    memory.drain()
    memory.add_finding("Async  tips", "use gather()", source="docs.python.org")
    memory.log("[*] Tool Call: file_read", "**Status**: [x] Success")
    assert (tmp_path / FINDINGS).read_text() == (
        "# Research Findings\n\n## [2026-01-12 10:30:00 UTC] Async tips\n"
        "**Source**: docs.python.org\nuse gather()\n"
    )
    assert (
        (tmp_path / PROGRESS)
        .read_text()
        .endswith(
            "\n## [2026-01-12 10:30:00 UTC] [*] Tool Call: file_read\n**Status**: [x] Success\n"
        )
    )
    changes = memory.drain()
    assert [c.file for c in changes] == [FINDINGS, PROGRESS]
    assert changes[1] == FileChange(PROGRESS, (tmp_path / PROGRESS).read_text())


def test_an_external_edit_is_noticed_and_becomes_the_plan(tmp_path: Path) -> None:
    memory = WorkingMemory(tmp_path)
    memory.drain()
    (tmp_path / PLAN).write_text("# Task Plan\n\n## Goal\nEdited by hand\n")
    assert memory.plan().goal == "Edited by hand"
    assert memory.drain() == [FileChange(PLAN, "# Task Plan\n\n## Goal\nEdited by hand\n")]
    memory.update_plan(PlanUpdate(title="T"))
    assert "Edited by hand" in (tmp_path / PLAN).read_text()


def test_a_failed_write_leaves_the_old_file_whole(tmp_path: Path, monkeypatch) -> None:
    memory = WorkingMemory(tmp_path)
    before = (tmp_path / PLAN).read_text()

    def crash(src, dst):  # the rename is the commit point: fail right before it
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        memory.update_plan(PlanUpdate(goal="never written"))
    assert (tmp_path / PLAN).read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(MEMORY_FILES)


def test_progress_grows_by_appends_and_never_rewrites_what_is_there(tmp_path: Path) -> None:
    memory = WorkingMemory(tmp_path, clock=lambda: FIXED)
    path = tmp_path / PROGRESS
    before = path.read_bytes()
    inode = path.stat().st_ino
    for n in range(3):
        memory.log(f"entry {n}", "- body")
    assert path.stat().st_ino == inode, "the file was replaced, not appended to"
    assert path.read_bytes().startswith(before)
    assert memory.read(PROGRESS) == path.read_text()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(by_hand=st.text(alphabet="ab #\n", max_size=30))
def test_an_entry_reads_the_same_whatever_the_file_ended_with(tmp_path: Path, by_hand: str) -> None:
    folder = tmp_path / str(abs(hash(by_hand)))
    folder.mkdir(exist_ok=True)
    (folder / PROGRESS).write_text(by_hand)
    memory = WorkingMemory(folder, clock=lambda: FIXED)
    memory.log("entry", "- body")
    expected = by_hand.rstrip("\n") + "\n" + "\n## [2026-01-12 10:30:00 UTC] entry\n- body\n"
    assert (folder / PROGRESS).read_text() == expected
    assert memory.drain()[-1] == FileChange(PROGRESS, expected)


def test_without_a_folder_memory_stays_in_the_process() -> None:
    memory = WorkingMemory(None)
    memory.update_plan(PlanUpdate(goal="in memory"))
    memory.log("a line")
    assert memory.plan().goal == "in memory"
    assert "a line" in memory.read(PROGRESS)
    assert memory.drain() == []
