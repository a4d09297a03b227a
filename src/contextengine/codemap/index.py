"""The parsed source files of a workspace, re-parsed only when a file changed.

The walk goes through ``confine.tree`` from the opened workspace root, like the file
tools': symlinks are never followed, the engine's reserved folder is not entered, and
hidden folders (``.git``, ``.venv`` ...) and dependency folders are skipped. A file is
re-parsed when its size or modification time differs from the last walk.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from contextengine.codemap.grammars import grammar, language_of
from contextengine.codemap.tags import FileTags, file_tags
from contextengine.toolkit.confine import PathRefused, Spot, open_regular, read_all, tree
from contextengine.toolkit.workspace import Workspace

SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "venv"})
MAX_FILE_BYTES = 1_000_000  # larger sources are bundles or generated code
MAX_FILES = 20_000


@dataclass(frozen=True)
class _Parsed:
    stamp: tuple[int, int]
    tags: FileTags


class SourceIndex:
    """Definitions and references of every source file the map understands; ``version``
    goes up whenever a walk found a file added, changed or removed."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._parsed: dict[str, _Parsed] = {}
        self.truncated = False
        self.version = 0

    def refresh(self) -> Mapping[str, FileTags]:
        """Walk the workspace and return each source file's tags, by workspace path."""
        seen: dict[str, _Parsed] = {}
        self.truncated = False
        with self.workspace.locate(".", "read") as where:

            def descend(parts: tuple[str, ...]) -> bool:
                name = parts[-1]
                return not (
                    name.startswith(".") or name in SKIP_DIRS or self.workspace.hidden(where, parts)
                )

            for parts, kind, dir_fd, name in tree(where.spot.dir_fd, (), descend):
                path = "/".join(parts)
                language = language_of(path)
                if kind != "file" or language is None or self.workspace.hidden(where, parts):
                    continue
                if len(seen) == MAX_FILES:
                    self.truncated = True
                    break
                parsed = self._parse(Spot(dir_fd, name, parts), path, language)
                if parsed is not None:
                    seen[path] = parsed
        if seen.keys() != self._parsed.keys() or any(
            seen[path] is not self._parsed[path] for path in seen
        ):
            self.version += 1
        self._parsed = seen
        return {path: parsed.tags for path, parsed in seen.items()}

    def _parse(self, spot: Spot, path: str, language: str) -> _Parsed | None:
        try:
            info = os.stat(spot.name, dir_fd=spot.dir_fd, follow_symlinks=False)
            if info.st_size > MAX_FILE_BYTES:
                return None
            stamp = (info.st_mtime_ns, info.st_size)
            known = self._parsed.get(path)
            if known is not None and known.stamp == stamp:
                return known
            with open_regular(spot, path) as (fd, _info):
                source = read_all(fd, MAX_FILE_BYTES)
        except (PathRefused, OSError):
            return None  # vanished or swapped since the listing
        return _Parsed(stamp, file_tags(path, source, grammar(language)))
