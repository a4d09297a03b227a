"""The coding task every framework runs: instructions, seed files and the six baseline tools.

Stdlib (and typing_extensions) only: the peer drivers (``drivers/``) import this file from another venv and wrap
these functions in their framework's native tool API, so every peer's tools behave and
describe themselves identically. contextengine's "peer tools" configuration wraps them too.
"""

from __future__ import annotations

import inspect
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

# pydantic (in both venvs) needs this TypedDict on Python < 3.12.
from typing_extensions import TypedDict

TASK = (
    "In this folder, build the word-frequency tool described in notes.md: the module, "
    "unit tests that pass, and a README. Keep a todo list as you go."
)
INSTRUCTIONS = (
    "You are a coding agent working in a project folder. Use the tools to inspect, write, "
    "edit and run files. Run the tests before you finish, then answer with a short report."
)
SEED_FILES = {
    "notes.md": (
        "# wordfreq\n\n"
        "Write `wordfreq.py` with `top_words(text, n)`: the n most common words of a text,\n"
        "lower-cased, punctuation stripped, ties broken alphabetically, as (word, count)\n"
        "pairs. `python3 wordfreq.py FILE [--top N]` prints one `word count` line each.\n"
        "Add unittest tests in `test_wordfreq.py` and a README.md with usage.\n"
    ),
}
_CORPUS_TEXT = (
    "the river runs past the old mill where the miller counts sacks of grain and the wind "
    "turns the sails while children read stories about ships that sail to distant harbors"
)
_CORPUS_WORDS = _CORPUS_TEXT.split()
BIG_NOTES_APPENDIX = "\n## Sample corpus (for trying the tool)\n\n" + "".join(
    " ".join(_CORPUS_WORDS[(k * 7 + j) % len(_CORPUS_WORDS)] for j in range(12)).capitalize()
    + ".\n"
    for k in range(250)
)
"""The ``--big-notes`` variant's addition to ``notes.md``: about 16,000 chars of plain prose,
so the step that reads the spec returns one big output."""
SHELL_TIMEOUT_S = 60
TODO_STATUSES = ("pending", "in_progress", "done")

DESCRIPTIONS = {
    "ls": "List the entries of a folder in the workspace (folders end with /).",
    "read_file": "Read a text file of the workspace.",
    "write_file": "Create or overwrite a file of the workspace with the given content.",
    "edit_file": "Replace the one occurrence of old_text in a file with new_text.",
    "run_shell": "Run a bash command in the workspace; returns the exit code and the output.",
    "todo": "Replace the todo list; each item has content and status (pending, in_progress, done).",
}
PARAMETERS = {
    "path": "Path relative to the workspace.",
    "content": "The complete new content of the file.",
    "old_text": "Exact text to replace.",
    "new_text": "Replacement text.",
    "command": "The bash command line.",
    "todos": "The complete todo list, in order.",
}


class Workspace:
    """The six baseline tools over one folder; every result is a plain string."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self.todos: list[dict[str, str]] = []

    def _path(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if target != self.root and self.root not in target.parents:
            raise ValueError(f"{path}: outside the workspace")
        return target

    def ls(self, path: str = ".") -> str:
        """Entries of a folder, sorted, folders with a trailing slash."""
        folder = self._path(path)
        if not folder.is_dir():
            return f"error: {path} is not a folder"
        names = [p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()]
        return "\n".join(sorted(names)) or "(empty)"

    def read_file(self, path: str) -> str:
        """The text of a file."""
        target = self._path(path)
        if not target.is_file():
            return f"error: {path} not found"
        return target.read_text(encoding="utf-8")

    def write_file(self, path: str, content: str) -> str:
        """Write a whole file."""
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} chars to {path}"

    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        """Replace the single occurrence of ``old_text``."""
        target = self._path(path)
        if not target.is_file():
            return f"error: {path} not found"
        text = target.read_text(encoding="utf-8")
        found = text.count(old_text)
        if found != 1:
            return f"error: old_text occurs {found} times in {path}, expected once"
        target.write_text(text.replace(old_text, new_text), encoding="utf-8")
        return f"edited {path}"

    def run_shell(self, command: str) -> str:
        """Run ``command`` with bash in the workspace: exit code, then stdout and stderr."""
        try:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=self.root,
                capture_output=True,
                text=True,
                timeout=SHELL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return f"exit code: timeout after {SHELL_TIMEOUT_S} s"
        return f"exit code: {done.returncode}\n{done.stdout}{done.stderr}".rstrip("\n")

    def todo(self, todos: list[dict[str, Any]]) -> str:
        """Replace the todo list and show it."""
        items = [{"content": str(t["content"]), "status": str(t["status"])} for t in todos]
        bad = [t["status"] for t in items if t["status"] not in TODO_STATUSES]
        if bad:
            return f"error: unknown status {bad[0]!r}; use one of {', '.join(TODO_STATUSES)}"
        self.todos = items
        return "\n".join(f"[{t['status']}] {t['content']}" for t in items)


class TodoItem(TypedDict):
    """One todo item."""

    content: str
    status: Literal["pending", "in_progress", "done"]


def tool_functions(workspace: Workspace) -> list[Callable[..., str]]:
    """The six tools as plain annotated functions with Google-style docstrings (the
    description, then ``Args:``), for frameworks that build tools from a function."""

    def ls(path: str = ".") -> str:
        return workspace.ls(path)

    def read_file(path: str) -> str:
        return workspace.read_file(path)

    def write_file(path: str, content: str) -> str:
        return workspace.write_file(path, content)

    def edit_file(path: str, old_text: str, new_text: str) -> str:
        return workspace.edit_file(path, old_text, new_text)

    def run_shell(command: str) -> str:
        return workspace.run_shell(command)

    def todo(todos: list[TodoItem]) -> str:
        return workspace.todo(list(todos))

    functions = [ls, read_file, write_file, edit_file, run_shell, todo]
    for function in functions:
        params = inspect.signature(function).parameters
        args = "".join(f"\n    {p}: {PARAMETERS[p]}" for p in params)
        function.__doc__ = f"{DESCRIPTIONS[function.__name__]}\n\nArgs:{args}\n"
    return functions


def seed(root: str | Path, big_notes: bool = False) -> Path:
    """Create the task's workspace at ``root`` with its seed files (``big_notes``: with
    ``BIG_NOTES_APPENDIX`` at the end of ``notes.md``)."""
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in SEED_FILES.items():
        extra = BIG_NOTES_APPENDIX if big_notes and name == "notes.md" else ""
        (folder / name).write_text(text + extra, encoding="utf-8")
    return folder


def check(root: str | Path) -> list[str]:
    """What the finished workspace lacks: the tests must pass and the README must exist."""
    folder = Path(root)
    problems = [
        f"missing {n}"
        for n in ("wordfreq.py", "test_wordfreq.py", "README.md")
        if not (folder / n).is_file()
    ]
    if not problems:
        done = subprocess.run(
            ["python3", "-m", "unittest", "-q", "test_wordfreq"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=SHELL_TIMEOUT_S,
        )
        if done.returncode != 0:
            problems.append(f"tests fail: {done.stderr[-300:]}")
    return problems
