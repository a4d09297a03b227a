"""The file tools (R3.1) that list and search the workspace: ls, glob and grep.

Walks go through ``confine.tree`` from an opened folder: symlinks are listed, never
followed, and the reserved engine and session folders are neither listed nor entered.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from fnmatch import fnmatchcase
from typing import Any, ClassVar

from pydantic import Field

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.confine import (
    PathRefused,
    Spot,
    existing_kind,
    open_folder,
    open_regular,
    read_all,
    tree,
)
from contextengine.toolkit.text_forms import format_ls_entry
from contextengine.toolkit.traits import ToolTraits
from contextengine.toolkit.workspace import Located
from contextengine.tools.context import ToolContext
from contextengine.tools.files import (
    BINARY_SNIFF_BYTES,
    FileTool,
    Refusal,
    StrictArgs,
)

LS_MAX_ENTRIES = 1000
GLOB_MAX_RESULTS = 1000
GREP_MAX_MATCHES = 1000
GREP_MAX_LINE_CHARS = 500
GREP_SKIP_DIRS = frozenset({".git", ".contextengine", "node_modules", "__pycache__"})


@contextmanager
def _open_folder(where: Located) -> Iterator[int]:
    """A descriptor of the folder at ``where``, refusing a file with a hint."""
    try:
        with open_folder(where.spot, where.shown) as fd:
            yield fd
    except PathRefused as exc:
        if exc.code == "not_a_directory":
            hint = f"{where.shown} is not a directory; use file_read"
            raise Refusal("not_a_directory", hint) from None
        raise


class FileLs(FileTool):
    """``file_ls``: the entries of a directory, sorted, with type and size."""

    name: ClassVar[str] = "file_ls"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="read", compressor="ls")
    description: ClassVar[str] = "List a folder with sizes."

    class Args(StrictArgs):
        path: str = Field(".")

    def _run(self, args: FileLs.Args, ctx: ToolContext) -> ToolOutcome:
        with ctx.workspace.locate(args.path, "read") as where, _open_folder(where) as fd:
            shown = where.shown
            entries = [
                _ls_entry(kind, dir_fd, name)
                for parts, kind, dir_fd, name in tree(fd, where.spot.parts, lambda _: False)
                if not ctx.workspace.hidden(where, parts)
            ]
        entries.sort(key=lambda e: e["name"])
        counts = {
            kind: sum(1 for e in entries if e["type"] == kind[:-1])
            for kind in ("dirs", "files", "links")
        }
        kept = entries[:LS_MAX_ENTRIES]
        lines = [
            f"{shown}: {counts['dirs']} dirs, {counts['files']} files, {counts['links']} links"
        ]
        lines += [format_ls_entry(e) for e in kept]
        if len(entries) > len(kept):
            lines.append(f"[... {len(entries) - len(kept)} more entries not listed]")
        data = {
            "dir": shown,
            "counts": counts,
            "entries": kept,
            "truncated": len(entries) > len(kept),
        }
        return ToolOutcome.ok("\n".join(lines), data)


def _ls_entry(kind: str, dir_fd: int, name: str) -> dict[str, Any]:
    try:
        if kind == "link":
            return {
                "name": name,
                "type": "link",
                "size": None,
                "target": os.readlink(name, dir_fd=dir_fd),
            }
        if kind == "dir":
            return {"name": name, "type": "dir", "size": None}
        size: int | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
    except OSError:
        size = None  # vanished since the listing
    return {"name": name, "type": "file", "size": size}


class FileGlob(FileTool):
    """``file_glob``: workspace paths matching a glob pattern, sorted."""

    name: ClassVar[str] = "file_glob"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="read", compressor="glob")
    description: ClassVar[str] = "Paths matching a glob (e.g. src/**/*.py)."

    class Args(StrictArgs):
        pattern: str

    def _run(self, args: FileGlob.Args, ctx: ToolContext) -> ToolOutcome:
        pattern = _glob_parts(args.pattern)
        with ctx.workspace.locate(".", "read") as where:

            def descend(parts: tuple[str, ...]) -> bool:
                return not ctx.workspace.hidden(where, parts) and _could_match(pattern, parts)

            inside = [
                "/".join(parts)
                for parts, _kind, _fd, _name in tree(where.spot.dir_fd, (), descend)
                if not ctx.workspace.hidden(where, parts) and _glob_match(pattern, parts)
            ]
        kept = inside[:GLOB_MAX_RESULTS]
        text = "\n".join(kept) if kept else f"No paths match {args.pattern!r}."
        if len(inside) > len(kept):
            text += f"\n[... {len(inside) - len(kept)} more paths not listed]"
        data = {
            "pattern": args.pattern,
            "count": len(inside),
            "matches": kept,
            "truncated": len(inside) > len(kept),
        }
        return ToolOutcome.ok(text, data)


def _glob_parts(pattern: str) -> tuple[str, ...]:
    """The pattern's components (runs of ``**`` merged); refuses absolute and ``..`` ones."""
    if pattern.startswith("/"):
        raise Refusal("invalid_arguments", "pattern must be relative to the workspace root")
    if "\0" in pattern:
        raise Refusal("invalid_arguments", "pattern contains a NUL byte")
    parts: list[str] = []
    for part in pattern.split("/"):
        if part == "..":
            raise Refusal("outside_workspace", f"pattern {pattern!r} leaves the workspace (..)")
        if part not in ("", ".") and not (part == "**" and parts[-1:] == ["**"]):
            parts.append(part)
    if not parts:
        raise Refusal("invalid_arguments", f"invalid glob pattern {pattern!r}: it is empty")
    return tuple(parts)


def _glob_match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether a path's components match the pattern's (``**``: zero or more components)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_glob_match(pattern[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], pattern[0]) and _glob_match(pattern[1:], parts[1:])


def _could_match(pattern: tuple[str, ...], folder: tuple[str, ...]) -> bool:
    """Whether some path below ``folder`` may match (prunes the walk)."""
    for depth, name in enumerate(folder):
        if depth >= len(pattern) or pattern[depth] == "**":
            return depth < len(pattern)
        if not fnmatchcase(name, pattern[depth]):
            return False
    return len(pattern) > len(folder)


class FileGrep(FileTool):
    """``file_grep``: lines matching a Python regular expression, as ``file:line:text``."""

    name: ClassVar[str] = "file_grep"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="read", compressor="grep")
    description: ClassVar[str] = (
        f"Regex search under path: up to {GREP_MAX_MATCHES} file:line:text lines."
    )

    class Args(StrictArgs):
        pattern: str
        path: str = "."

    def _run(self, args: FileGrep.Args, ctx: ToolContext) -> ToolOutcome:
        try:
            regex = re.compile(args.pattern)
        except re.error as exc:
            raise Refusal(
                "invalid_arguments", f"invalid regular expression {args.pattern!r}: {exc}"
            ) from None
        search = _Search(regex)
        with ctx.workspace.locate(args.path, "read") as where:
            shown = where.shown
            info = existing_kind(where.spot)
            if info is None:
                raise Refusal("not_found", f"{shown}: no such file or directory")
            if not stat.S_ISDIR(info.st_mode):
                search.file(where.spot, shown)
            else:
                with _open_folder(where) as fd:
                    search.folder(ctx, where, fd)
        if search.matches:
            text = "\n".join(search.matches)
            if search.truncated:
                text += f"\n[search stopped at {GREP_MAX_MATCHES} matches]"
        else:
            text = f"No matches for {args.pattern!r} in {shown}."
        data = {
            "pattern": args.pattern,
            "path": shown,
            "count": len(search.matches),
            "files": search.files_hit,
            "matches": search.matches,
            "truncated": search.truncated,
        }
        return ToolOutcome.ok(text, data)


class _Search:
    """The matches of one regex over files met in path order, up to ``GREP_MAX_MATCHES``."""

    def __init__(self, regex: re.Pattern[str]) -> None:
        self.regex = regex
        self.matches: list[str] = []
        self.files_hit = 0
        self.truncated = False

    def folder(self, ctx: ToolContext, where: Located, fd: int) -> None:
        """Search every regular file below the folder, skipping reserved and noise folders."""

        def descend(parts: tuple[str, ...]) -> bool:
            return parts[-1] not in GREP_SKIP_DIRS and not ctx.workspace.hidden(where, parts)

        root = where.zone.tree.root
        for parts, kind, dir_fd, name in tree(fd, where.spot.parts, descend):
            if kind != "file" or ctx.workspace.hidden(where, parts):
                continue
            try:
                self.file(Spot(dir_fd, name, parts), ctx.workspace.display(root.joinpath(*parts)))
            except (PathRefused, OSError):
                continue  # swapped or vanished since the listing
            if self.truncated:
                return

    def file(self, spot: Spot, shown: str) -> None:
        """Add the matching lines of one regular file (binary files are skipped)."""
        with open_regular(spot, shown) as (fd, _info):
            raw = read_all(fd)
        if b"\0" in raw[:BINARY_SNIFF_BYTES]:
            return
        hit = False
        for number, line in enumerate(raw.decode("utf-8", errors="replace").split("\n"), 1):
            if not self.regex.search(line):
                continue
            if len(self.matches) == GREP_MAX_MATCHES:
                self.truncated = True
                return
            line = line.rstrip("\r")
            if len(line) > GREP_MAX_LINE_CHARS:
                cut = len(line) - GREP_MAX_LINE_CHARS
                line = f"{line[:GREP_MAX_LINE_CHARS]}[... {cut} chars cut]"
            self.matches.append(f"{shown}:{number}:{line}")
            self.files_hit += not hit
            hit = True
