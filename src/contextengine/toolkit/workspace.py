"""The workspace: the one folder tree the tools may touch (R3.1).

Every path is opened through ``confine`` (descriptor walks, no-follow opens), never
checked and then reopened by name. Symlinks inside the workspace are followed only while
they stay inside it. The engine's own folder ``.contextengine`` and the session folder are
reserved: the tools can neither list nor search them, and reach only the entries named in
``session_access`` (the working-memory files, read and written by path as the prompt
says, and the artifacts, read only). ``.contextengine/artifacts/<name>`` is a short path to
the artifact ``<name>`` of the folder ``artifacts`` names, read only: the session's own, or
for a sub-agent its parent's, so a path the parent was shown opens in the child as it did in
the parent (the child's own artifacts go by their full path). When sessions live outside the
workspace, absolute paths under the session folder reach those same entries. ``private``
names further folders and files (the session tree's root: every other session and the
long-term memory) that no tool may list, read or write wherever they sit in the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from contextengine.toolkit.confine import (
    ConfinedRoot,
    OutsideWorkspace,
    PathRefused,
    Spot,
    split_path,
)

RESERVED_DIR = ".contextengine"
_ARTIFACTS = "artifacts"  # the session folder's artifacts folder (``SessionLayout.artifacts``)
ARTIFACTS_ALIAS = (RESERVED_DIR, _ARTIFACTS)
"""``.contextengine/artifacts/<name>`` opens the artifact ``<name>``, read only: the short path
pruning stubs show (``.contextengine`` is reserved, so no workspace file has it)."""

Access = Literal["read", "write"]

__all__ = [
    "ARTIFACTS_ALIAS",
    "RESERVED_DIR",
    "Located",
    "OutsideWorkspace",
    "PathRefused",
    "Workspace",
]


@dataclass(frozen=True)
class Located:
    """An opened place in the workspace: the walk's end, how to show it, its real path."""

    spot: Spot
    shown: str
    real: Path
    zone: _Zone


@dataclass(frozen=True)
class _Zone:
    """A confined tree and where the session folder sits in it (``None``: not in it)."""

    tree: ConfinedRoot
    session: tuple[str, ...] | None
    reserve_engine_dir: bool
    private: tuple[tuple[str, ...], ...] = ()
    read_only: bool = False


class Workspace:
    """A root folder that confines every tool path, with the session folder reserved.

    ``artifacts``: the folder ``.contextengine/artifacts/`` opens (default: the session's own).
    """

    def __init__(
        self,
        root: Path,
        session_dir: Path | None = None,
        session_access: Mapping[str, Access] | None = None,
        private: Sequence[Path] = (),
        artifacts: Path | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        tree = ConfinedRoot(self.root, f"the workspace {self.root}")
        self.session_dir = Path(os.path.realpath(session_dir)) if session_dir else None
        self.session_access = dict(session_access or {})
        session_parts: tuple[str, ...] | None = None
        self._session: _Zone | None = None
        if self.session_dir is not None and self.session_dir.is_relative_to(self.root):
            session_parts = self.session_dir.relative_to(self.root).parts
        elif self.session_dir is not None:
            self._session = _Zone(ConfinedRoot(self.session_dir, "the session folder"), (), False)
        private_parts = tuple(
            real.relative_to(self.root).parts
            for real in (Path(os.path.realpath(path)) for path in private)
            if real.is_relative_to(self.root) and real != self.root
        )
        self._main = _Zone(tree, session_parts, True, private_parts)
        own = self.session_dir / _ARTIFACTS if self.session_dir is not None else None
        self.artifacts = Path(os.path.realpath(artifacts)) if artifacts is not None else own
        self._shared: _Zone | None = None  # another session's artifacts, behind the alias
        if self.artifacts is not None and self.artifacts != own:
            label = f"the artifacts folder {self.artifacts}"
            self._shared = _Zone(ConfinedRoot(self.artifacts, label), None, False, read_only=True)

    @contextmanager
    def locate(self, path: str, access: Access, create_dirs: bool = False) -> Iterator[Located]:
        """Walk to ``path`` (relative, or absolute under the root or the session folder)."""
        zone, parts = self._zone_of(path)
        lexical = _normalized(parts)
        if lexical is not None:  # refuse a reserved path before touching the disk
            self._check(zone, lexical, access, path)
        mkdir = (lambda made: self._check(zone, made, "write", path)) if create_dirs else None
        with zone.tree.locate(path, parts, mkdir) as spot:
            real = zone.tree.root.joinpath(*spot.parts)
            self._check(zone, spot.parts, access, path)
            yield Located(spot, self._named_as(real, real.parent), real, zone)

    def resolve(self, path: str) -> Path:
        """The real path ``path`` leads to (symlinks resolved); raises ``PathRefused``."""
        with self.locate(path, "read") as where:
            return where.real

    def hidden(self, where: Located, parts: tuple[str, ...]) -> bool:
        """Whether ``parts`` (below ``where``'s tree) is reserved and not readable."""
        return not self._allowed(where.zone, parts, "read")

    def display(self, path: Path) -> str:
        """``path`` relative to the root when inside it (``.`` for the root), else absolute."""
        absolute = Path(os.path.abspath(path))
        for candidate in (absolute, Path(os.path.realpath(absolute))):
            if candidate.is_relative_to(self.root):
                return candidate.relative_to(self.root).as_posix()
        return absolute.as_posix()

    def artifact_path(self, path: Path) -> str:
        """How the tools name ``path``: ``.contextengine/artifacts/<name>`` for a file of
        the ``artifacts`` folder, else as ``display`` shows it."""
        return self._named_as(path, Path(os.path.realpath(path.parent)))

    def _named_as(self, path: Path, folder: Path) -> str:
        """``artifact_path`` of ``path``, whose folder resolves to ``folder`` (a walk's end
        is resolved already: no need to ask the disk again on every tool call)."""
        if self.artifacts is not None and folder == self.artifacts:
            return "/".join((*ARTIFACTS_ALIAS, path.name))
        return self.display(path)

    def _zone_of(self, path: str) -> tuple[_Zone, list[str]]:
        absolute, parts = split_path(path)
        if not absolute:
            return self._aliased(parts)
        if (inside := self._main.tree.below(path)) is not None:
            return self._aliased(inside)
        if self._session is not None and (inside := self._session.tree.below(path)) is not None:
            return self._session, inside
        raise OutsideWorkspace(path, self._main.tree.label)

    def _aliased(self, parts: list[str]) -> tuple[_Zone, list[str]]:
        """Where ``parts`` (below the root) lead: the artifacts alias to ``artifacts``."""
        if tuple(parts[:2]) != ARTIFACTS_ALIAS or self.artifacts is None:
            return self._main, parts
        if self._shared is not None:
            return self._shared, parts[2:]
        rest = [_ARTIFACTS, *parts[2:]]
        if self._session is not None:  # the session folder is outside the workspace
            return self._session, rest
        return self._main, [*(self._main.session or ()), *rest]

    def _check(self, zone: _Zone, parts: tuple[str, ...], access: Access, path: str) -> None:
        if not self._allowed(zone, parts, access):
            raise PathRefused(
                "reserved_path",
                f"path {path!r} is in the engine's reserved folder; tools may only {access} "
                f"the session's {self._named(access) or 'files'} there",
            )

    def _allowed(self, zone: _Zone, parts: tuple[str, ...], access: Access) -> bool:
        if zone.read_only:
            return access == "read"
        session = zone.session
        in_session = session is not None and parts[: len(session)] == session
        if not in_session:
            if zone.reserve_engine_dir and parts[:1] == (RESERVED_DIR,):
                return False
            return not any(parts[: len(private)] == private for private in zone.private)
        rest = parts[len(session) :]  # type: ignore[arg-type]
        allowed = self.session_access.get(rest[0]) if rest else None
        return allowed == "write" or allowed == access

    def _named(self, access: Access) -> str:
        """The session entries open to ``access``, for messages."""
        names = [n for n, a in sorted(self.session_access.items()) if a in (access, "write")]
        return ", ".join(names)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, session_dir={self.session_dir!r})"


def _normalized(parts: list[str]) -> tuple[str, ...] | None:
    """``parts`` with ``..`` applied as text, or ``None`` when they climb above the root."""
    kept: list[str] = []
    for part in parts:
        if part != "..":
            kept.append(part)
        elif not kept:
            return None
        else:
            kept.pop()
    return tuple(kept)
