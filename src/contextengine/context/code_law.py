"""Layer L2: the project's ``CODE_LAW.md`` (any letter case), read at every build (R7.1).

The file is opened through ``confine`` like every tool path: a symlink may point to
another file inside the project, but one that leads outside it (or a FIFO, device or
other non-regular file) is not read; a warning names it once. Bytes that are not UTF-8
read as U+FFFD, and rules longer than their share of the window are cut (``fit_rules``),
each with a warning once: a broken or huge rules file must not stop every turn.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from contextengine.context.tokens import count_tokens, cut_at_line
from contextengine.toolkit.confine import ConfinedRoot, PathRefused, open_regular, read_all

CODE_LAW_NAME = "code_law.md"
RULES_MAX_SHARE = 0.25  # of the context window: what project rules may take of every request
RULES_CUT = (
    "[{name} is cut here: it is {tokens:,} tokens, more than the {limit:,} (a quarter of the "
    "context window) project rules may take. Read the rest with file_read.]"
)

log = logging.getLogger(__name__)


class CodeLawReader:
    """Finds and reads the project-root rules file; the only I/O the context package does."""

    def __init__(self, project_root: Path | None) -> None:
        self._tree = ConfinedRoot(project_root, "the project") if project_root else None
        self._name: str | None = None
        self._dir_mtime: int | None = None
        self._warned: set[str] = set()

    def read(self) -> tuple[str, str] | None:
        """``(file name, text)`` of the rules file, or ``None`` when there is none."""
        if self._tree is None:
            return None
        if self._name is not None:
            text = self._read(self._tree, self._name)
            if text is not None:
                return self._name, text
            self._name = None
        self._rescan(self._tree.root)
        if self._name is None:
            return None
        text = self._read(self._tree, self._name)
        return None if text is None else (self._name, text)

    def _read(self, tree: ConfinedRoot, name: str) -> str | None:
        try:
            with tree.locate(name, [name]) as spot, open_regular(spot, name) as (fd, _):
                raw = read_all(fd)
        except FileNotFoundError:
            return None
        except (PathRefused, OSError) as problem:
            missing = isinstance(problem, PathRefused) and problem.code == "not_found"
            if not missing and name not in self._warned:
                self._warned.add(name)
                log.warning("%s is not used as the code law: %s", name, problem)
            return None
        self._warned.discard(name)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as problem:
            self._warn_once(
                f"{name} is not UTF-8 ({problem.reason} at byte {problem.start}): "
                "those bytes read as U+FFFD",
            )
            return raw.decode("utf-8", errors="replace")

    def fit(self, name: str, text: str, context_window: int) -> str:
        """``text`` cut to the project rules' share of ``context_window`` (``fit_rules``),
        with a warning once a file when it had to be cut."""
        limit = int(RULES_MAX_SHARE * context_window)
        fitted = fit_rules(name, text, limit)
        if fitted != text:
            self._warn_once(f"{name} is over {limit:,} tokens: only its start is used")
        return fitted

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)

    def _rescan(self, root: Path) -> None:
        # Listing the root costs more than a read; redo it only when the folder changed.
        try:
            mtime = os.stat(root).st_mtime_ns
        except FileNotFoundError:
            return
        if mtime == self._dir_mtime:
            return
        self._dir_mtime = mtime
        with os.scandir(root) as it:
            names = sorted(
                e.name
                for e in it
                if e.name.lower() == CODE_LAW_NAME and (e.is_file() or e.is_symlink())
            )
        self._name = names[0] if names else None


def fit_rules(name: str, text: str, limit_tokens: int) -> str:
    """``text`` when it is at most ``limit_tokens`` BPE tokens, else its first whole lines
    that fit with a last line saying where it was cut and why."""
    total = count_tokens(text)
    if total <= limit_tokens:
        return text
    return cut_at_line(
        text, limit_tokens, RULES_CUT.format(name=name, tokens=total, limit=limit_tokens)
    )
