"""Working memory (R8): ``task_plan.md``, ``findings.md`` and ``progress.md`` of one session.

A plan change replaces ``task_plan.md`` atomically (temp file, fsync, rename, fsync of
the folder), so a crash leaves the old file or the new one, never half of one. Progress
entries and findings are appended (and fsynced): a long log is never written again whole. The files may
also be edited by hand or by the model's file tools; every read notices that, so the
files stay the truth. Each change, ours or external, is queued as a ``FileChange`` for
the harness to emit (R8.7). Without a folder the memory lives in this process only and
queues no changes (there are no files to show).

Writes go through a ``MemoryFiles`` keeper: the folder itself by default, the session's
store when given (PostgreSQL keeps the files as rows and the folder as their working copy;
a file missing from the folder is restored from the store).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from contextengine.memory.plan import (
    Plan,
    PlanUpdate,
    TodoStatus,
    apply_todos,
    apply_update,
    parse_plan,
    render_plan,
)
from contextengine.memory.templates import (
    FINDINGS_TEMPLATE,
    PROGRESS_TEMPLATE,
    Clock,
    finding_section,
    section,
    utc_now,
)
from contextengine.session.store.files import FolderFiles

MemoryFile = Literal["task_plan.md", "findings.md", "progress.md"]
PLAN: MemoryFile = "task_plan.md"
FINDINGS: MemoryFile = "findings.md"
PROGRESS: MemoryFile = "progress.md"
MEMORY_FILES: tuple[MemoryFile, ...] = (PLAN, FINDINGS, PROGRESS)


@dataclass(frozen=True)
class FileChange:
    """A memory file's new content."""

    file: MemoryFile
    content: str


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash never leaves a partial file."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


_Stamp = tuple[int, int, int]


class MemoryFiles(Protocol):
    """Where memory files are kept (a ``StoredSession`` is one)."""

    def save_memory(self, name: str, text: str) -> None:
        """Keep ``text`` as file ``name``'s content."""
        ...

    def append_memory(self, name: str, text: str) -> None:
        """Add ``text`` at the end of file ``name``."""
        ...

    def load_memory(self, name: str) -> str | None:
        """File ``name``'s content, or ``None`` when it was never kept."""
        ...


class WorkingMemory:
    """The three memory files of one session (or an in-process stand-in)."""

    def __init__(
        self,
        directory: Path | None = None,
        clock: Clock = utc_now,
        files: MemoryFiles | None = None,
    ) -> None:
        self.directory = directory
        self.clock = clock
        # without a folder the memory is in-process only: nothing is kept anywhere
        self._files = (files or FolderFiles(directory)) if directory is not None else None
        self._texts: dict[MemoryFile, str] = {}
        self._stamps: dict[MemoryFile, _Stamp | None] = {}
        self._plan: tuple[str, Plan] | None = None
        self._changes: list[FileChange] = []
        templates = {PLAN: render_plan(Plan()), FINDINGS: FINDINGS_TEMPLATE}
        templates[PROGRESS] = PROGRESS_TEMPLATE
        for name in MEMORY_FILES:
            path = self.path(name)
            if path is not None and path.exists():
                self._texts[name] = self._read_disk(name)
            else:
                kept = self._files.load_memory(name) if self._files is not None else None
                self._write(name, templates[name] if kept is None else kept)

    def path(self, name: MemoryFile) -> Path | None:
        """Where ``name`` lives on disk (``None`` for an in-process memory)."""
        return self.directory / name if self.directory is not None else None

    def read(self, name: MemoryFile) -> str:
        """The file's current text (an external edit is noticed and queued as a change)."""
        path = self.path(name)
        if path is not None and self._stat(path) != self._stamps.get(name):
            text = self._read_disk(name)
            if text != self._texts.get(name):
                self._texts[name] = text
                self._changes.append(FileChange(name, text))
                if self._files is not None:
                    self._files.save_memory(name, text)
        return self._texts[name]

    def plan(self) -> Plan:
        """The plan as ``task_plan.md`` says now."""
        text = self.read(PLAN)
        if self._plan is None or self._plan[0] != text:
            self._plan = (text, parse_plan(text))
        return self._plan[1]

    def update_plan(self, update: PlanUpdate) -> Plan:
        """Apply ``update`` to the plan and save it; raises ``PlanUpdateError``."""
        return self._save_plan(apply_update(self.plan(), update))

    def apply_todos(self, todos: Iterable[tuple[str, TodoStatus]]) -> Plan:
        """Make a complete todo list (``todo_write``) the plan's steps."""
        return self._save_plan(apply_todos(self.plan(), todos))

    def add_finding(self, title: str, content: str, source: str | None = None) -> str:
        """Append a timestamped finding; returns the section written."""
        entry = finding_section(self.clock(), " ".join(title.split()), content, source)
        self._append(FINDINGS, entry)
        return entry

    def log(self, title: str, body: str = "") -> None:
        """Append a timestamped section to ``progress.md``."""
        entry = section(self.clock(), title, body)
        self._append(PROGRESS, entry)

    def drain(self) -> list[FileChange]:
        """The changes since the last call, oldest first (external edits noticed now too)."""
        for name in MEMORY_FILES:
            self.read(name)
        changes, self._changes = self._changes, []
        return changes

    def _save_plan(self, plan: Plan) -> Plan:
        text = render_plan(plan)
        if text != self.read(PLAN):
            self._write(PLAN, text)
        self._plan = (text, plan)
        return plan

    def _write(self, name: MemoryFile, text: str) -> None:
        path = self.path(name)
        if path is not None and self._files is not None:
            self._files.save_memory(name, text)
            self._stamps[name] = self._stat(path)
            self._changes.append(FileChange(name, text))
        self._texts[name] = text

    def _append(self, name: MemoryFile, entry: str) -> None:
        """Add ``entry`` after the file's last line; a file that does not end in exactly one
        newline (edited by hand) is rewritten, so the text is the same either way."""
        text = self.read(name)
        new = text.rstrip("\n") + "\n" + entry
        path = self.path(name)
        if path is None or self._files is None or not new.startswith(text):
            self._write(name, new)
            return
        self._files.append_memory(name, new[len(text) :])
        self._stamps[name] = self._stat(path)
        self._changes.append(FileChange(name, new))
        self._texts[name] = new

    def _read_disk(self, name: MemoryFile) -> str:
        path = self.path(name)
        assert path is not None
        stamp = self._stat(path)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            text = ""
        self._stamps[name] = stamp
        return text

    @staticmethod
    def _stat(path: Path) -> _Stamp | None:
        try:
            st = path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)
