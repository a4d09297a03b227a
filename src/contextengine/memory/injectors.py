"""Context injectors (R9.1, seed 001 "上下文注入管道").

Once per user turn the harness asks every injector for text on a hint (the task
objective, else the last messages). Each non-empty answer is appended once as a
``NoteEntry`` (so later requests read it from the cache), unless the same note is already
in view. An injector that raises is logged and skipped: injection never breaks a turn.

Built-ins and where they read:

* ``lessons``           resolved lessons of other sessions (``<root>/memory.sqlite3``)
* ``long_term_memory``  findings, summaries and answers of other sessions (same file, FTS5)
* ``preferences``       ``<root>/<org>/<team>/preferences.md``, written by people
* ``project_knowledge`` ``PROJECT_KNOWLEDGE.md`` (any letter case) in the workspace root
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from contextengine.memory.lessons import LessonStore
from contextengine.memory.longterm import LongTermMemory
from contextengine.session.entries import NoteEntry

logger = logging.getLogger(__name__)

PROJECT_KNOWLEDGE_NAME = "project_knowledge.md"
FILE_CHARS = 6000
HIT_CHARS = 600


class Injector(Protocol):
    """A source of context for the current turn; ``name`` becomes the note's source."""

    name: str

    def inject(self, hint: str) -> str | None:
        """Text worth adding for ``hint``, or ``None``."""
        ...


@dataclass(frozen=True)
class InjectionFailure:
    """An injector that raised, and the error's one-line description."""

    injector: str
    error: str


@dataclass(frozen=True)
class Injection:
    """What one injection pass produced."""

    notes: tuple[NoteEntry, ...]
    failures: tuple[InjectionFailure, ...]


def run_injectors(
    injectors: Sequence[Injector], hint: str, seen: Collection[tuple[str, str]] = ()
) -> Injection:
    """Ask each injector in order; notes already ``seen`` (source, text) are not repeated."""
    notes, failures = [], []
    for injector in injectors:
        try:
            text = injector.inject(hint)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            logger.warning("injector %s failed and was skipped: %s", injector.name, error)
            failures.append(InjectionFailure(injector.name, error))
            continue
        if text and text.strip() and (injector.name, text.strip()) not in seen:
            notes.append(NoteEntry(source=injector.name, text=text.strip()))
    return Injection(tuple(notes), tuple(failures))


def _clip(text: str, limit: int, where: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f"\n[... {len(text) - limit} more characters in {where}]"


class LessonsInjector:
    """Resolved lessons from past sessions (seed 001 error learning)."""

    name = "lessons"

    def __init__(self, store: LessonStore, limit: int = 5) -> None:
        self.store = store
        self.limit = limit

    def inject(self, hint: str) -> str | None:
        """The lessons that best match ``hint``, one block each."""
        lessons = self.store.relevant(hint, self.limit)
        if not lessons:
            return None
        lines = ["Lessons from past sessions (errors and what resolved them):"]
        for lesson in lessons:
            what = f"{lesson.tool} `{lesson.action}`" if lesson.action else lesson.tool
            lines.append(
                f"- [{lesson.error_class}] {what}: {_clip(lesson.message, HIT_CHARS, 'the lesson')}"
            )
            lines.append(f"  Resolution: {lesson.resolution}")
        return "\n".join(lines)


class LongTermMemoryInjector:
    """Findings, summaries and answers of past sessions that match the hint."""

    name = "long_term_memory"

    def __init__(self, memory: LongTermMemory, limit: int = 3) -> None:
        self.memory = memory
        self.limit = limit

    def inject(self, hint: str) -> str | None:
        """The best matches, clipped."""
        hits = self.memory.search(hint, self.limit)
        if not hits:
            return None
        lines = ["From past sessions (long-term memory):"]
        for hit in hits:
            body = _clip(hit.body.strip(), HIT_CHARS, f"session {hit.session}")
            lines.append(f"- [{hit.kind}, session {hit.session}] {hit.title}\n  {body}")
        return "\n".join(lines)


class FileInjector:
    """The text of one file, when it exists (user preferences)."""

    def __init__(self, name: str, path: Path, heading: str) -> None:
        self.name = name
        self.path = path
        self.heading = heading

    def inject(self, hint: str) -> str | None:
        """The file's text under a heading, clipped; ``None`` when there is no file."""
        if not self.path.exists():
            return None
        text = self.path.read_text(encoding="utf-8").strip()
        return f"{self.heading}\n{_clip(text, FILE_CHARS, str(self.path))}" if text else None


class ProjectKnowledgeInjector:
    """``PROJECT_KNOWLEDGE.md`` (any letter case) at the workspace root."""

    name = "project_knowledge"

    def __init__(self, workspace_root: Path) -> None:
        self.root = workspace_root

    def inject(self, hint: str) -> str | None:
        """The project knowledge file's text, clipped."""
        with os.scandir(self.root) as scan:
            names = sorted(
                e.name for e in scan if e.name.lower() == PROJECT_KNOWLEDGE_NAME and e.is_file()
            )
        if not names:
            return None
        return FileInjector(
            self.name, self.root / names[0], f"Project knowledge ({names[0]}):"
        ).inject(hint)


def default_injectors(
    lessons: LessonStore, memory: LongTermMemory, preferences: Path, workspace_root: Path
) -> list[Injector]:
    """The four built-in injectors, in the seed's order (lessons, memory, preferences, project)."""
    return [
        LessonsInjector(lessons),
        LongTermMemoryInjector(memory),
        FileInjector("preferences", preferences, "User preferences:"),
        ProjectKnowledgeInjector(workspace_root),
    ]
