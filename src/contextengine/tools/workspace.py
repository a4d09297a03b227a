"""The workspace: the one folder tree the tools may touch (R3.1).

Every path a tool gets is resolved here with symlinks followed, so ``..`` escapes and
links pointing outside are refused. Extra roots keep the session folder readable when
sessions live outside the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path

from contextengine.errors import WorkspaceError


class OutsideWorkspace(WorkspaceError):
    """A path that resolves outside the workspace and its extra roots."""

    def __init__(self, path: str, workspace: Path) -> None:
        super().__init__(f"path {path!r} is outside the workspace {workspace}")
        self.path = path
        self.workspace = workspace


class Workspace:
    """A root folder (and optional extra roots) that confine every tool path."""

    def __init__(self, root: Path, extra_roots: tuple[Path, ...] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.extra_roots = tuple(Path(os.path.realpath(r)) for r in extra_roots)

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (relative to the root); raises ``OutsideWorkspace``."""
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        real = Path(os.path.realpath(candidate))
        if not any(real.is_relative_to(r) for r in (self.root, *self.extra_roots)):
            raise OutsideWorkspace(path, self.root)
        return real

    def contains(self, path: Path) -> bool:
        """Whether the real path of ``path`` lies inside the root or an extra root."""
        real = Path(os.path.realpath(path))
        return any(real.is_relative_to(r) for r in (self.root, *self.extra_roots))

    def display(self, path: Path) -> str:
        """``path`` relative to the root when inside it (``.`` for the root), else absolute."""
        absolute = Path(os.path.abspath(path))
        for candidate in (absolute, Path(os.path.realpath(absolute))):
            if candidate.is_relative_to(self.root):
                return candidate.relative_to(self.root).as_posix()
        return absolute.as_posix()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, extra_roots={tuple(map(str, self.extra_roots))!r})"
