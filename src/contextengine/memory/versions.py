"""Git history of the working-memory files (seed 004 4.2, setting ``memory_git``).

The three memory files of a session are committed to a git repository in the session
folder (``<session>/.git``); only those files are ever added, so the log, usage and
artifacts beside them stay untracked. A commit is made only when they changed, so a
session's ``git log`` is its plan, findings and progress turn by turn.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from contextengine.errors import ConfigError
from contextengine.memory.working_memory import MEMORY_FILES

GIT_TIMEOUT_S = 30.0

# Commits must not depend on the user's git setup: no identity to configure, no signing
# prompt, no hooks of theirs run inside a session folder.
_SETTINGS = (
    "-c",
    "user.name=contextengine",
    "-c",
    "user.email=contextengine@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "init.defaultBranch=main",
)


class MemoryRepo:
    """The git repository holding one session's memory files."""

    def __init__(self, folder: Path, git: str) -> None:
        self.folder = folder
        self._git = git

    @classmethod
    def open(cls, folder: Path) -> MemoryRepo:
        """The repository of ``folder`` (made at the first commit); ``ConfigError`` when
        git is not installed."""
        git = shutil.which("git")
        if git is None:
            raise ConfigError("memory_git is on but git was not found on PATH (install git)")
        return cls(folder, git)

    def commit(self, message: str) -> str | None:
        """Commit the memory files if they changed; the new commit's hash, else ``None``."""
        if not (self.folder / ".git").is_dir():
            self._run("init", "-q")
        present = [name for name in MEMORY_FILES if (self.folder / name).is_file()]
        if not present:
            return None
        self._run("add", "--", *present)
        staged = self._run("diff", "--cached", "--name-only").strip()
        if not staged:
            return None
        self._run("commit", "-q", "-m", message)
        return self._run("rev-parse", "HEAD").strip()

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self._git, *_SETTINGS, *args],
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=True,
        )
        return done.stdout
