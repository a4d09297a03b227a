"""Files of a session the API serves: the working-memory files and the artifacts.

Every file is opened through ``confine`` from a descriptor of the session folder with
symlinks refused outright (the agent's shell can plant them), so nothing outside the
folder it names is ever read, and only regular files are served.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contextengine.memory.working_memory import MEMORY_FILES
from contextengine.server.errors import ApiError
from contextengine.toolkit.confine import (
    ConfinedRoot,
    PathRefused,
    Spot,
    open_folder,
    open_regular,
    read_all,
    split_path,
    tree,
)

MAX_ARTIFACT_BYTES = 1_000_000
PREVIEW_BYTES = 2048
PREVIEW_LINES = 8
_MISSING = frozenset({"not_found", "is_a_directory", "not_a_directory"})


@dataclass(frozen=True)
class MemoryFile:
    """One working-memory file; ``content`` is ``None`` until the agent writes it."""

    name: str
    content: str | None


@dataclass(frozen=True)
class ArtifactEntry:
    """One file under ``artifacts/`` (``path`` is relative, with ``/`` separators) and its
    first lines (``None`` when binary)."""

    path: str
    size: int
    preview: str | None


@dataclass(frozen=True)
class ArtifactContent:
    """An artifact's text (the first ``MAX_ARTIFACT_BYTES`` of it; none when binary)."""

    path: str
    size: int
    content: str | None
    truncated: bool
    binary: bool


def read_memory(session_dir: Path) -> list[MemoryFile]:
    """The three working-memory files, in their fixed order."""
    return [MemoryFile(name, _read_memory(session_dir, name)) for name in MEMORY_FILES]


def read_memory_file(session_dir: Path, name: str) -> MemoryFile:
    """One working-memory file by name; only the three known names are served."""
    if name not in MEMORY_FILES:
        raise ApiError(404, f"unknown memory file {name!r}; known: {', '.join(MEMORY_FILES)}")
    content = _read_memory(session_dir, name)
    if content is None:
        raise ApiError(404, f"{name} has not been written in this session yet")
    return MemoryFile(name, content)


def list_artifacts(artifacts: Path) -> list[ArtifactEntry]:
    """Every regular file under ``artifacts`` reached without a symlink, sorted by path."""
    folder = _session_tree(artifacts.parent, "the session's artifacts")
    try:
        with (
            folder.locate(artifacts.name, [artifacts.name]) as spot,
            open_folder(spot, artifacts.name) as fd,
        ):
            return [
                entry
                for parts, kind, at, name in tree(fd, (), lambda _: True)
                if kind == "file" and (entry := _listed(Spot(at, name, parts))) is not None
            ]
    except (PathRefused, FileNotFoundError):
        return []


def _listed(spot: Spot) -> ArtifactEntry | None:
    """The artifact at ``spot`` with its first lines; ``None`` when it is no longer there."""
    relative = "/".join(spot.parts)
    try:
        with open_regular(spot, relative) as (fd, info):
            head = read_all(fd, PREVIEW_BYTES)
    except (PathRefused, FileNotFoundError):
        return None  # removed or swapped for a link since the listing
    if b"\x00" in head:
        return ArtifactEntry(relative, info.st_size, None)
    lines = head.decode("utf-8", errors="replace").splitlines()[:PREVIEW_LINES]
    return ArtifactEntry(relative, info.st_size, "\n".join(lines))


def read_artifact(artifacts: Path, relative: str) -> ArtifactContent:
    """One artifact by its relative path; paths leaving ``artifacts`` are refused."""
    parts = _relative_parts(relative, "the session's artifacts")
    folder = _session_tree(artifacts.parent, "the session's artifacts")
    try:
        with (
            folder.locate(relative, [artifacts.name, *parts]) as spot,
            open_regular(spot, relative) as (fd, info),
        ):
            data = read_all(fd, MAX_ARTIFACT_BYTES)
    except PathRefused as refused:
        if refused.code in _MISSING:
            raise ApiError(404, f"no artifact {relative!r} in this session") from None
        raise _forbidden(relative, "the session's artifacts", refused) from None
    size = info.st_size
    if b"\x00" in data:
        return ArtifactContent(relative, size, None, size > len(data), True)
    text = data.decode("utf-8", errors="replace")
    return ArtifactContent(relative, size, text, size > len(data), False)


def _relative_parts(relative: str, what: str) -> list[str]:
    """The components of a client's relative path; ``..`` and absolute paths are refused."""
    try:
        absolute, parts = split_path(relative)
    except PathRefused:
        raise ApiError(400, f"bad path {relative[:200]!r}") from None
    if not parts:
        raise ApiError(400, f"bad path {relative!r}")
    if absolute or ".." in parts:
        raise ApiError(403, f"path {relative!r} is outside {what}")
    return parts


def _session_tree(folder: Path, what: str) -> ConfinedRoot:
    return ConfinedRoot(folder, what, follow_symlinks=False)


def _forbidden(relative: str, what: str, refused: PathRefused) -> ApiError:
    if refused.code in ("symlink", "outside_workspace"):
        return ApiError(403, f"path {relative!r} is outside {what} (it goes through a symlink)")
    return ApiError(403, f"path {relative!r} is not served: {refused}")


def _read_memory(session_dir: Path, name: str) -> str | None:
    folder = _session_tree(session_dir, "the session folder")
    try:
        with folder.locate(name, [name]) as spot, open_regular(spot, name) as (fd, _):
            data = read_all(fd)
    except PathRefused as refused:
        if refused.code in _MISSING:
            return None
        raise _forbidden(name, "the session folder", refused) from None
    except FileNotFoundError:
        return None  # no session folder (yet)
    return data.decode("utf-8", errors="replace")
