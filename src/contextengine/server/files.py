"""Files of a session the API serves: the working-memory files and the artifacts.

Every path from a client is resolved (symlinks included) and must stay inside the folder
it names; anything else is refused before a byte is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contextengine.memory.working_memory import MEMORY_FILES
from contextengine.server.errors import ApiError

MAX_ARTIFACT_BYTES = 1_000_000


@dataclass(frozen=True)
class MemoryFile:
    """One working-memory file; ``content`` is ``None`` until the agent writes it."""

    name: str
    content: str | None


@dataclass(frozen=True)
class ArtifactEntry:
    """One file under ``artifacts/`` (``path`` is relative, with ``/`` separators)."""

    path: str
    size: int


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
    """Every regular file under ``artifacts`` that resolves inside it, sorted by path."""
    if not artifacts.is_dir():
        return []
    base = artifacts.resolve()
    found = []
    for path in artifacts.rglob("*"):
        resolved = path.resolve()
        if resolved.is_file() and resolved.is_relative_to(base):
            found.append(
                ArtifactEntry(path.relative_to(artifacts).as_posix(), resolved.stat().st_size)
            )
    return sorted(found, key=lambda a: a.path)


def read_artifact(artifacts: Path, relative: str) -> ArtifactContent:
    """One artifact by its relative path; paths leaving ``artifacts`` are refused."""
    path = resolve_inside(artifacts, relative, "the session's artifacts")
    if not path.is_file():
        raise ApiError(404, f"no artifact {relative!r} in this session")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        data = fh.read(MAX_ARTIFACT_BYTES)
    if b"\x00" in data:
        return ArtifactContent(relative, size, None, size > len(data), True)
    text = data.decode("utf-8", errors="replace")
    return ArtifactContent(relative, size, text, size > len(data), False)


def resolve_inside(base: Path, relative: str, what: str) -> Path:
    """``base / relative`` resolved, or a 403 when it would leave ``base``."""
    if not relative or "\x00" in relative:
        raise ApiError(400, f"bad path {relative!r}")
    root = base.resolve()
    candidate = (root / relative).resolve()
    if not candidate.is_relative_to(root):
        raise ApiError(403, f"path {relative!r} is outside {what}")
    return candidate


def _read_memory(session_dir: Path, name: str) -> str | None:
    # The agent's shell can plant a symlink, so even fixed names are resolved and checked.
    path = resolve_inside(session_dir, name, "the session folder")
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return None
