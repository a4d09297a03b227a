"""Layer L2: the project's ``CODE_LAW.md`` (any letter case), read at every build (R7.1)."""

from __future__ import annotations

import os
from pathlib import Path

CODE_LAW_NAME = "code_law.md"


class CodeLawReader:
    """Finds and reads the project-root rules file; the only I/O the context package does."""

    def __init__(self, project_root: Path | None) -> None:
        self._root = project_root
        self._name: str | None = None
        self._dir_mtime: int | None = None

    def read(self) -> tuple[str, str] | None:
        """``(file name, text)`` of the rules file, or ``None`` when there is none."""
        if self._root is None:
            return None
        if self._name is not None:
            try:
                return self._name, (self._root / self._name).read_text(encoding="utf-8")
            except FileNotFoundError:
                self._name = None
        self._rescan()
        if self._name is None:
            return None
        try:
            return self._name, (self._root / self._name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def _rescan(self) -> None:
        # Listing the root costs more than a read; redo it only when the folder changed.
        try:
            mtime = os.stat(self._root).st_mtime_ns  # type: ignore[arg-type]
        except FileNotFoundError:
            return
        if mtime == self._dir_mtime:
            return
        self._dir_mtime = mtime
        with os.scandir(self._root) as it:  # type: ignore[arg-type]
            names = sorted(e.name for e in it if e.name.lower() == CODE_LAW_NAME and e.is_file())
        self._name = names[0] if names else None
